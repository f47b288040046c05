"""The web UI's exact latency while a run goes: a tab in Locust's own UI, and a page of its own.

Locust's table (/stats/requests) shows its rounded percentiles (106 ms reads 110). The run's HDR
histograms (plugin/latency.py) hold the exact ones, per request name and Aggregated, so the UI shows
those too, as the run goes:

    tab    "Exact latency" in Locust's UI, beside Statistics. Locust 2.x's React UI takes
           `extended_tabs`/`extended_tables` in its template args and draws a tab's rows from
           `extended_stats` in the /stats/requests answer it polls every 2 s; this module adds
           them (Flask after_request). No template or JavaScript of ours: Locust keeps drawing it.
    page   /swarmbench/latency (HTML, refreshes itself every REFRESH_S) and
           /swarmbench/latency.json, for a script, a curl or a second screen.

Both read Latency.live_totals(): recomputed only when a worker's report came in since the last
answer, so a UI left open costs the master little. The master (or a standalone process) only:
workers have no UI.
"""

from __future__ import annotations

import html
from typing import Any

from flask import Response, jsonify, request

from swarmbench.core.checks import AGGREGATED
from swarmbench.hdr import LatencyBook, percentile_values
from swarmbench.hdr_windows import WINDOW_S

TAB_KEY = "swarmbench-latency"
"""The tab's key: Locust matches a tab, its table and its rows by it (and shows it in the URL)."""

PAGE = "/swarmbench/latency"
REFRESH_S = 2
"""The page's refresh: Locust's own UI polls its stats every 2 s, so both move together."""

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
    values = percentile_values(hist, PERCENTILES) if count else {}
    row: dict[str, Any] = {"name": name, "type": request_type, "count": count}
    for p in PERCENTILES:
        row[f"p{p:g}"] = round(values[p] / 1000, 3) if p in values else None
    row["max"] = round(hist.get_max_value() / 1000, 3) if count else None
    return row


def snapshot(latency: Any) -> dict[str, Any]:
    """What the JSON answer holds: whether recording is on, the start windows count from, rows."""
    if not latency.enabled:
        return {"enabled": False, "source": "rounded", "rows": []}
    return {
        "enabled": True,
        "source": "exact",
        "window_s": WINDOW_S,
        "t0": latency.t0,
        "rows": rows(latency.live_totals()),
    }


def install(web_ui: Any, latency: Any) -> None:
    """The tab in Locust's UI (when recording is on) and the page's routes (the page says it is off)."""
    if latency.enabled:
        web_ui.template_args["extended_tabs"] = [{"title": "Exact latency", "key": TAB_KEY}]
        web_ui.template_args["extended_tables"] = [
            {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in COLUMNS]}
        ]
    app = web_ui.app

    @app.after_request
    def extend_stats(response: Response) -> Response:
        if request.path.endswith("/stats/requests") and response.is_json and latency.enabled:
            data = response.get_json()
            data["extended_stats"] = [{"key": TAB_KEY, "data": rows(latency.live_totals())}]
            response.set_data(jsonify(data).get_data())
        return response

    @app.route(PAGE + ".json")
    @web_ui.auth_required_if_enabled
    def latency_json() -> Response:
        return jsonify(snapshot(latency))

    @app.route(PAGE)
    @web_ui.auth_required_if_enabled
    def latency_page() -> Response:
        return Response(page(snapshot(latency)), mimetype="text/html")


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
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="{REFRESH_S}">'
        "<title>Swarmbench: exact latency</title><style>body{font-family:sans-serif}"
        "td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}</style>"
        f"</head><body><h3>Exact latency</h3><p>{html.escape(note)}</p>"
        f"<table><tr>{head}</tr>{body}</table></body></html>"
    )


def _cell(value: Any) -> str:
    return "" if value is None else str(value)
