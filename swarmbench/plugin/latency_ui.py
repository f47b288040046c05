"""The web UI's exact latency while a run goes: the Exact latency tab in Locust's own UI (its table and a
chart of exact p50/p95/p99 per 1 s window), and a page of its own.

Locust's table (/stats/requests) shows its rounded percentiles (106 ms reads 110). The run's HDR
histograms (plugin/latency.py) hold the exact ones, per request name and Aggregated and per 1 s
window, so the UI shows those too, as the run goes:

    table  "Exact latency" beside Statistics. Locust 2.x's React UI takes `extended_tabs` and
           `extended_tables` in its template args and draws a tab's rows from `extended_stats` in
           the /stats/requests answer it polls every 2 s (Locust's extend_web_ui example); this
           module adds them (Flask after_request), so Locust draws the table itself: its fonts, its
           sortable Material table, light and dark.
    chart  under that table: exact p50/p95/p99 of every request per 1 s window (the master's merged
           windows, as locust_latency_windows.csv will hold them), drawn as inline SVG by a small
           script of ours (TAB_JS, served at SCRIPT; index.html gets one <script> tag). Locust's
           extension points take tables only, and its own chart library is inside its bundle, not
           reachable from outside; inline SVG needs no library and no network (the UI works
           offline). The chart's box takes the class names of Locust's table box, so it is the
           same Material paper in either theme; hovering a window shows its numbers.
    page   /swarmbench/latency (the same table and chart in Locust's colours and fonts; refreshes
           itself every REFRESH_S) and the JSON behind them, /swarmbench/latency.json (the table)
           and /swarmbench/latency/windows.json (the chart), for a script, a curl or a second screen.

Between a web-UI run's end (Stop) and the next Start, every part shows that run's final numbers,
the ones its folder holds (Latency.ui_totals, ui_series). The master (or a standalone process)
only: workers have no UI.
"""

from __future__ import annotations

import html
from typing import Any

from flask import Response, jsonify, request

from swarmbench.core import skeleton
from swarmbench.core.checks import AGGREGATED
from swarmbench.latency.histogram import LatencyBook, percentile_columns
from swarmbench.latency.windows import WINDOW_S

TAB_KEY = "swarmbench-latency"
"""The tab's key: Locust matches a tab, its table and its rows by it (and shows it in the URL)."""

PAGE = "/swarmbench/latency"
WINDOWS = PAGE + "/windows.json"
SCRIPT = PAGE + "/tab.js"
REFRESH_S = 2
"""The page's refresh and the chart's: Locust's own UI polls its stats every 2 s, so all move together."""

COLUMNS = (
    ("name", "Name"),
    ("type", "Type"),
    ("count", "# Requests"),
    ("p50", "50%ile (ms)"),
    ("p95", "95%ile (ms)"),
    ("p99", "99%ile (ms)"),
    ("max", "Max (ms)"),
)
"""The tab's and the page's columns (keys without underscores: Locust's UI camel-cases keys)."""

PERCENTILES = (50.0, 95.0, 99.0)


def rows(book: LatencyBook) -> list[dict[str, Any]]:
    """Service time per (type, name), sorted by name, then Aggregated: count, p50/p95/p99, max (ms)."""
    keys = sorted((k for k in book.hists if k[2] == "service"), key=lambda k: (k[1], k[0]))
    out = [
        _row(name, request_type, book.hists[(request_type, name, "service")])
        for request_type, name, _ in keys
    ]
    total = book.aggregated("service")
    if total.get_total_count():
        out.append(_row(AGGREGATED, "", total))
    return [r for r in out if r["count"]]


def _row(name: str, request_type: str, hist: Any) -> dict[str, Any]:
    count = hist.get_total_count()
    columns = percentile_columns(hist, PERCENTILES) if count else {}  # the CSV's figures, in ms
    row: dict[str, Any] = {"name": name, "type": request_type, "count": count}
    for p in PERCENTILES:
        row[f"p{p:g}"] = columns.get(f"p{p:g}_ms")
    row["max"] = columns.get("max_ms")
    return row


def snapshot(latency: Any) -> dict[str, Any]:
    """The table's JSON: whether recording is on, the start windows count from, rows."""
    if not latency.enabled:
        return {"enabled": False, "source": "rounded", "rows": []}
    book = latency.ui_totals()
    return {"enabled": True, "source": "exact", "window_s": WINDOW_S, "t0": latency.t0, "rows": rows(book)}


def windows(latency: Any) -> dict[str, Any]:
    """The chart's JSON: per window (seconds from t0), the service time of every request together:
    count, failures, p50 .. p99.9 and max in ms (locust_latency_windows.csv's Aggregated rows)."""
    if not latency.enabled:
        return {"enabled": False, "windows": []}
    series = latency.ui_series()
    return {"enabled": True, "kind": "service", "window_s": WINDOW_S, "t0": latency.t0, "windows": series}


def install(web_ui: Any, latency: Any) -> None:
    """The tab and its chart in Locust's UI (when recording is on), and the page's routes (the page
    says when it is off)."""
    if latency.enabled:
        web_ui.template_args["extended_tabs"] = [{"title": "Exact latency", "key": TAB_KEY}]
        web_ui.template_args["extended_tables"] = [
            {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in COLUMNS]}
        ]
    app = web_ui.app

    @app.after_request
    def extend(response: Response) -> Response:
        if not latency.enabled:
            return response
        if request.path.endswith("/stats/requests") and response.is_json:
            data = response.get_json()
            data["extended_stats"] = [{"key": TAB_KEY, "data": snapshot(latency)["rows"]}]
            response.set_data(jsonify(data).get_data())
        elif request.endpoint in ("index", "locust.index") and response.mimetype == "text/html":
            body = response.get_data(as_text=True)
            response.set_data(body.replace("</body>", f'<script src="{SCRIPT}" defer></script></body>', 1))
        return response

    @app.route(PAGE + ".json")
    @web_ui.auth_required_if_enabled
    def latency_json() -> Response:
        return jsonify(snapshot(latency))

    @app.route(WINDOWS)
    @web_ui.auth_required_if_enabled
    def latency_windows() -> Response:
        return jsonify(windows(latency))

    @app.route(SCRIPT)
    @web_ui.auth_required_if_enabled
    def latency_script() -> Response:
        return Response(TAB_JS, mimetype="text/javascript")

    @app.route(PAGE)
    @web_ui.auth_required_if_enabled
    def latency_page() -> Response:
        return Response(page(snapshot(latency)), mimetype="text/html")


# --- the page --------------------------------------------------------------------------------------

PAGE_CSS = """
body{margin:0;max-width:none;padding:0;line-height:normal;font-family:"Roboto","Helvetica","Arial",sans-serif;
font-size:14px;color:rgba(0,0,0,.87);background:#fff}
header{background:#15803d;color:#fff;padding:14px 24px;font-size:20px;font-weight:500;
box-shadow:0 2px 4px -1px rgba(0,0,0,.2),0 4px 5px 0 rgba(0,0,0,.14)}
main{padding:16px 24px}p{color:rgba(0,0,0,.6)}
.paper{background:#fff;border-radius:4px;box-shadow:0 2px 1px -1px rgba(0,0,0,.2),0 1px 1px 0
rgba(0,0,0,.14),0 1px 3px 0 rgba(0,0,0,.12);overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:0}
th,td{padding:16px;text-align:left;border:0;border-bottom:1px solid rgba(224,224,224,1);line-height:1.43}
th{font-weight:500;background:none}tr:last-child td{border-bottom:0}
@media (prefers-color-scheme:dark){body,.paper{background:#121212;color:#fff}
.paper{background-image:linear-gradient(rgba(255,255,255,.05),rgba(255,255,255,.05))}
th,td{border-bottom-color:rgba(81,81,81,1)}p{color:rgba(255,255,255,.7)}}
"""
"""The page in the look of Locust's UI: its green bar, Material's paper, table and type (Roboto, then
Helvetica and Arial, as Locust's theme asks); dark when the system is. Its own rules, after
core/skeleton.py's shared ones, which they undo where Locust's look differs (the column's width and
margins, the line height, the tables' borders and head background)."""


def page(data: dict[str, Any]) -> str:
    head = "".join(f"<th>{html.escape(title)}</th>" for _key, title in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(r[key]))}</td>" for key, _title in COLUMNS) + "</tr>"
        for r in data["rows"]
    )
    if not data["enabled"]:
        note = "Exact latency recording is off (--no-exact-latency): Locust's own table is rounded."
    else:
        note = "Exact (HDR histograms, 3 significant digits) since the run's start, service time."
    content = (
        f"<header>Exact latency</header><main><p>{html.escape(note)}</p>"
        f'<div class="paper"><table><tr>{head}</tr>{body}</table></div>'
        f'<div id="swarmbench-latency-chart" class="paper"></div></main>'
        f'<script src="{SCRIPT}"></script>'
    )
    refresh = f'<meta http-equiv="refresh" content="{REFRESH_S}">'
    return skeleton.document("Swarmbench: exact latency", content, css=PAGE_CSS, head=refresh)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


# --- the chart -------------------------------------------------------------------------------------

TAB_JS = r"""// Swarmbench: the Exact latency tab's chart (swarmbench/plugin/latency_ui.py), inline SVG.
(() => {
  "use strict";
  const KEY = "swarmbench-latency", ID = "swarmbench-latency-chart";
  const DATA = "/swarmbench/latency/windows.json";
  const LINES = [["p50_ms", "50th percentile", "#ff9f00"], ["p95_ms", "95th percentile", "#9966CC"],
                 ["p99_ms", "99th percentile", "#8A2BE2"]];  // Locust's Response Times colours
  const SVG = "http://www.w3.org/2000/svg", HEIGHT = 320, PAD = {l: 56, r: 16, t: 56, b: 36};
  let data = null, busy = false, fetched = 0, drawn = "";

  const onTab = () => new URLSearchParams(location.search).get("tab") === KEY;
  const el = (name, attrs, text) => {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const nice = (max) => {  // a round axis top and its step, 4-6 ticks
    const raw = max / 5, mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => raw <= s);
    return {top: Math.ceil(max / step) * step || step, step};
  };

  function draw(box) {
    const wins = (data && data.windows) || [];
    const width = Math.max(320, box.clientWidth - 32);
    const key = width + ":" + JSON.stringify(wins);
    if (key === drawn) return;
    drawn = key;
    const per = "per " + ((data && data.window_s) || 1) + " s window";
    const svg = el("svg", {width, height: HEIGHT, role: "img", "font-family": "inherit",
                           fill: "currentColor", "aria-label": "Exact response times " + per});
    svg.appendChild(el("text", {x: 0, y: 22, "font-size": 18, "font-weight": 500},
                       "Exact Response Times (ms)"));
    svg.appendChild(el("text", {x: 0, y: 42, "font-size": 12, opacity: 0.6},
                       per + ", every request: the HDR histograms of locust_latency_windows.csv"));
    let lx = width / 2 - 150;
    for (const [, label, colour] of LINES) {
      svg.appendChild(el("circle", {cx: lx, cy: 18, r: 6, fill: colour}));
      svg.appendChild(el("text", {x: lx + 12, y: 22, "font-size": 12}, label));
      lx += 115;
    }
    const x0 = PAD.l, x1 = width - PAD.r, y0 = HEIGHT - PAD.b, y1 = PAD.t;
    if (!wins.length) {
      svg.appendChild(el("text", {x: (x0 + x1) / 2, y: (y0 + y1) / 2, "text-anchor": "middle", opacity: 0.6},
        "No responses yet"));
      box.replaceChildren(svg);
      return;
    }
    const first = wins[0].window_s, last = Math.max(wins[wins.length - 1].window_s, first + 1);
    const {top, step} = nice(Math.max(...wins.map((w) => w.p99_ms)));
    const X = (s) => x0 + ((s - first) / (last - first)) * (x1 - x0), Y = (ms) => y0 - (ms / top) * (y0 - y1);
    for (let v = 0; v <= top + 1e-9; v += step) {
      svg.appendChild(el("line", {x1: x0, x2: x1, y1: Y(v), y2: Y(v), stroke: "currentColor",
                                  "stroke-opacity": v ? 0.12 : 0.5}));
      const label = {x: x0 - 8, y: Y(v) + 4, "text-anchor": "end", "font-size": 12, opacity: 0.7};
      svg.appendChild(el("text", label, String(+v.toFixed(3))));
    }
    const t0 = (data && data.t0) || 0, ticks = Math.min(8, wins.length);
    for (let i = 0; i < ticks; i++) {
      const s = first + Math.round((i * (last - first)) / Math.max(1, ticks - 1));
      const when = new Date((t0 + s) * 1000).toLocaleTimeString();
      const anchor = i === 0 ? "start" : i === ticks - 1 ? "end" : "middle";  // all inside the box
      const label = {x: X(s), y: y0 + 18, "text-anchor": anchor, "font-size": 12, opacity: 0.7};
      svg.appendChild(el("text", label, when));
    }
    for (const [field, , colour] of LINES) {
      const pts = wins.map((w) => X(w.window_s).toFixed(1) + "," + Y(w[field]).toFixed(1)).join(" ");
      svg.appendChild(el("polyline", {points: pts, fill: "none", stroke: colour, "stroke-width": 2}));
      if (wins.length <= 120) {  // Locust's hollow points, while they do not crowd the line
        for (const w of wins) {
          const dot = {cx: X(w.window_s), cy: Y(w[field]), r: 2.5, fill: "none", stroke: colour};
          svg.appendChild(el("circle", {...dot, "stroke-width": 1.5}));
        }
      }
    }
    const band = (x1 - x0) / Math.max(1, last - first);
    for (const w of wins) {  // one hover band per window: its numbers, exactly as the master holds them
      const r = el("rect", {x: X(w.window_s) - band / 2, y: y1, width: band, height: y0 - y1,
                            fill: "transparent", "class": "swarmbench-window", "data-window": w.window_s,
                            "data-count": w.count, "data-p50": w.p50_ms, "data-p95": w.p95_ms,
                            "data-p99": w.p99_ms});
      const when = new Date((t0 + w.window_s) * 1000).toLocaleTimeString();
      r.appendChild(el("title", {}, when + " (" + w.window_s + " s): " + w.count + " requests, p50 " +
                                    w.p50_ms + " ms, p95 " + w.p95_ms + " ms, p99 " + w.p99_ms + " ms"));
      svg.appendChild(r);
    }
    box.replaceChildren(svg);
  }

  async function refresh(box) {
    busy = true;
    try {
      const answer = await fetch(DATA, {cache: "no-store", credentials: "same-origin"});
      if (answer.ok) data = await answer.json();
    } catch (e) {
      // the master is gone or busy: keep the last chart
    } finally {
      busy = false;
      fetched = Date.now();
    }
    draw(box);
  }

  function tick() {
    let box = document.getElementById(ID);
    if (!(box && box.classList.contains("paper"))) {  // Locust's UI, not our own page
      const table = onTab() ? document.querySelector(".MuiTableContainer-root") : null;
      if (!table) {
        if (box) box.remove();
        return;
      }
      if (!box) {
        box = document.createElement("div");
        box.id = ID;
        drawn = "";
      }
      if (table.nextElementSibling !== box) table.after(box);
      // Locust's own paper (background, shadow, corners; light or dark): the table box's classes.
      const paper = [...table.classList].filter((c) => !c.startsWith("MuiTableContainer")).join(" ");
      if (box.className !== paper) box.className = paper;
      Object.assign(box.style, {marginTop: "16px", padding: "16px", overflow: "hidden"});
    } else {
      Object.assign(box.style, {marginTop: "16px", padding: "16px"});
    }
    if (!busy && Date.now() - fetched >= 2000) refresh(box);
  }

  tick();
  setInterval(tick, 500);
})();
"""
"""The chart: every 2 s (as Locust polls) it fetches WINDOWS and redraws when the numbers changed;
it lives right under the tab's table while the tab is open, and goes when another tab is."""
