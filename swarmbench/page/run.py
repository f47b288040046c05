"""The run page: report.html in every run folder, written when the run ends. It opens with the answer
(requests, failures, throughput and exact percentiles per request name, the status, the verdict),
then the warnings, the charts, the settings and a link to every file of the folder.

One self-contained file: inline SVG (page/svg.py), no network, no JavaScript. Every figure is read
from the folder's files at the time the page is made and printed as the file has it: the answer is
core/answer.py's reading (locust_latency_hdr.csv's percentiles, locust_stats.csv's counts, run.json),
the charts come from locust_latency_windows.csv (each window's own exact percentiles, already in
the file: nothing decoded), locust_latency_hdr.json (the whole-run histograms, for the latency
distribution), locust_stats_history.csv (users) and run.json (workers' CPU, event-loop lag). A file
that is missing, cut off or malformed is named on the page and its part left out: the page never
fails for a bad folder. Secret header values never reach it: what it quotes comes from files the
plugin scrubs afterwards with the page (core/headers.py scrub_folder).

Standard library, core and swarmbench.latency (hdrhistogram) only: the Locust image writes it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from swarmbench.core import folder, skeleton
from swarmbench.core.answer import INTENDED, SERVICE, Answer, NameAnswer, csv_rows, read_answer
from swarmbench.core.atomic import write_atomic
from swarmbench.core.bottleneck import GENERATOR_CPU_LIMIT_PCT
from swarmbench.core.checks import AGGREGATED, EXACT
from swarmbench.core.exits import InputError
from swarmbench.core.figures import number, show_count, show_ms, show_rate
from swarmbench.core.manifest import (
    COMPLETE,
    FAILED,
    SIGNAL,
    STATS_RESET,
    TARGET_BACK,
    TARGET_UNREACHABLE,
    WORKER_MISSING,
    WORKER_QUIT,
    OpenModel,
    RunManifest,
)
from swarmbench.core.openmodel import PER_SECOND_COLUMNS
from swarmbench.core.runfolder import read_table
from swarmbench.latency.histogram import LatencyBook, percentile_values
from swarmbench.page import svg

MARK = '<meta name="generator" content="swarmbench run page">'
"""In every run page's head: tells a run page from Locust's own report.html of older folders."""

QUANTILE_STEPS = 50
"""The distribution chart's points: percentiles at 1/(1 - q) = 10^(k/10), k = 0 .. this (0 % to
99.999 %), then the max; points past the histogram's count are all its max, so they are left out."""

CHART_WIDTH = 980
"""Width of the page's charts, px (they scale down with the window)."""
RIGHT_PX = 276
"""The right margin (a second axis, the legend) of every chart on the page: charts stacked one under
another keep one plot width, so their time axes line up."""

MARKED_EVENTS = (WORKER_MISSING, WORKER_QUIT, TARGET_UNREACHABLE, TARGET_BACK, STATS_RESET, SIGNAL)
"""Events (run.json `events`) marked on the charts over time: what explains a change in them."""

CLOCK_SLACK_S = 120.0
"""The history's first row is normally within seconds of run.json's started_at (one clock, the
master's); further off, the history is drawn from its own first row instead."""

FAILURE_ROWS = 20
"""Most frequent failures listed on the page (the rest are in locust_failures.csv)."""

FILES = {
    folder.STATS_CSV: "Locust's totals per request name (requests, failures, rounded percentiles)",
    folder.HISTORY_CSV: "Locust's numbers every second (users, requests/s, cumulative counts)",
    folder.FAILURES_CSV: "every distinct failure and how often it happened",
    folder.EXCEPTIONS_CSV: "exceptions raised in the locustfile",
    folder.LOCUST_REPORT_HTML: "Locust's own HTML report (its percentiles are rounded)",
    folder.MANIFEST: "how the run was made and how it went: settings, CPU, status, verdict",
    folder.JUNIT_XML: "the thresholds as JUnit XML",
    folder.LATENCY_HDR_CSV: "exact percentiles per request name (HDR histograms): this page's numbers",
    folder.LATENCY_HDR_JSON: "the same histograms, encoded, to merge runs exactly",
    folder.LATENCY_WINDOWS_CSV: "exact percentiles and histograms per 1 s window",
    folder.ARRIVAL_CSV: "open model: iterations scheduled, started and dropped per second",
}
"""What each file of a run folder holds, in a line (the page's file list)."""


# --- what the page reads --------------------------------------------------------------------------


@dataclass
class Series:
    """One request name's windows: window start (s) and, per window, its count and percentiles."""

    t: list[float] = field(default_factory=list)
    count: list[float] = field(default_factory=list)
    failures: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p95: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)


@dataclass
class Facts:
    """Everything the page shows, each file read once; `notes`: what could not be read, and why."""

    answer: Answer
    windows: dict[tuple[str, str], Series] = field(default_factory=dict)  # (kind, label) -> series
    window_s: float = 1.0
    users: list[tuple[float, float]] = field(default_factory=list)  # (s since start, users)
    throughput: list[tuple[float, float]] = field(default_factory=list)  # from the history, no windows
    distribution: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    arrival: list[list[float]] = field(default_factory=list)  # [second, scheduled, started, dropped]
    failures: list[dict[str, str]] = field(default_factory=list)
    files: list[tuple[str, int | None]] = field(default_factory=list)  # (name, bytes; None: a folder)
    notes: list[str] = field(default_factory=list)

    @property
    def manifest(self) -> RunManifest:
        return self.answer.manifest


def read(run_dir: Path, manifest: RunManifest | None = None) -> Facts:
    """RUN_DIR's facts (MANIFEST: run.json's content when it is not written yet)."""
    run_dir = Path(run_dir)
    facts = Facts(answer=read_answer(run_dir, manifest))
    facts.notes += facts.answer.missing
    m = facts.manifest
    if m.latency and m.latency.window_s:
        facts.window_s = float(m.latency.window_s)
    for name in m.latency.files if m.latency else []:
        if not (run_dir / name).is_file():
            facts.notes.append(f"{name}: listed in run.json but missing")
    _read_windows(run_dir / folder.LATENCY_WINDOWS_CSV, facts)
    _read_history(run_dir / folder.HISTORY_CSV, facts, need_throughput=not facts.windows)
    _read_distribution(run_dir / folder.LATENCY_HDR_JSON, facts)
    if m.open_model is not None:
        _read_arrival(run_dir / folder.ARRIVAL_CSV, facts)
    failures = csv_rows(run_dir / folder.FAILURES_CSV, facts.notes)
    facts.failures = sorted(failures, key=lambda r: -_num(r.get(folder.FAIL_OCCURRENCES), default=0.0))
    facts.files = _files(run_dir, written=[folder.MANIFEST] if manifest is not None else [])
    return facts


def _num(text: str | None, default: float = math.nan) -> float:
    """A CSV cell as a number (core/figures.number); DEFAULT where it is blank, N/A or not a finite
    number."""
    return number(text, default)


WINDOW_FIELDS = ("window_s", "count", "failures", "p50_ms", "p95_ms", "p99_ms")
"""The columns of locust_latency_windows.csv the page reads (never the encoded histograms)."""


def _read_windows(path: Path, facts: Facts) -> None:
    """Each (kind, request name)'s windows, Aggregated included (its rows carry their percentiles).
    A row that is not one stops the reading there, said in a note: the charts end where it did."""
    if not path.is_file():
        return
    noted = len(facts.notes)
    table = read_table(path, notes=facts.notes)
    if not table.header and len(facts.notes) > noted:
        return  # unreadable: said
    if not set(WINDOW_FIELDS) | {"type", "name", "kind"} <= set(table.header):
        facts.notes.append(f"{path.name}: not a windows file (its columns); no charts over time")
        return
    for line, row in table.numbered():
        values = [number(row[c]) for c in WINDOW_FIELDS]
        if None in values:
            facts.notes.append(f"{path.name}: row {line} is malformed; the charts over time stop there")
            return
        s = facts.windows.setdefault((row["kind"], _label(row["type"], row["name"])), Series())
        for column, v in zip((s.t, s.count, s.failures, s.p50, s.p95, s.p99), values, strict=True):
            column.append(v)


def _label(request_type: str, name: str) -> str:
    """A request name as the page shows it: Locust's name, its type added where the name lacks it."""
    if not request_type or name == AGGREGATED or name.startswith(request_type + " "):
        return name
    return f"{request_type} {name}"


def _start(m: RunManifest) -> float | None:
    try:
        return datetime.fromisoformat(m.started_at).timestamp() if m.started_at else None
    except ValueError:
        return None


def _read_history(path: Path, facts: Facts, need_throughput: bool) -> None:
    """Users over time (and throughput, where the run has no windows file), from Locust's history."""
    rows = [r for r in csv_rows(path, facts.notes) if r.get(folder.NAME) == AGGREGATED]
    stamps = [_num(r.get(folder.TIMESTAMP)) for r in rows]
    first = next((t for t in stamps if math.isfinite(t)), None)
    t0 = _start(facts.manifest)
    if t0 is None or first is None or abs(first - t0) > CLOCK_SLACK_S:
        t0 = first  # no start time, or one the history's clock disagrees with: its first row is 0
    previous: tuple[float, float] | None = None
    for r, stamp in zip(rows, stamps, strict=True):
        users, total = _num(r.get(folder.USER_COUNT)), _num(r.get(folder.TOTAL_REQUEST_COUNT))
        if not math.isfinite(stamp) or t0 is None:
            continue
        if math.isfinite(users):
            facts.users.append((stamp - t0, users))
        if need_throughput and math.isfinite(total):
            if previous is not None and stamp > previous[0]:
                facts.throughput.append((stamp - t0, (total - previous[1]) / (stamp - previous[0])))
            previous = (stamp, total)


def _read_distribution(path: Path, facts: Facts) -> None:
    """Per request name, the whole run's latency at each percentile (the HDR histograms)."""
    if not path.is_file():
        return
    try:
        book = LatencyBook.read(path)
    except InputError as e:
        facts.notes.append(f"{path.name}: {e.problem}; no latency distribution")
        return
    hists = {_label(t, n): h for (t, n, k), h in sorted(book.hists.items()) if k == SERVICE}
    hists[AGGREGATED] = book.aggregated(SERVICE)
    if facts.manifest.open_model is not None and any(k == INTENDED for _t, _n, k in book.hists):
        hists[f"{AGGREGATED} (intended start)"] = book.aggregated(INTENDED)
    for name, hist in hists.items():
        count = hist.get_total_count()
        if not count:
            continue
        steps = {
            100 * (1 - 1 / x): x for x in (10 ** (k / 10) for k in range(QUANTILE_STEPS + 1)) if x < count
        }
        values = percentile_values(hist, list(steps))
        xs = [steps[q] for q in values]
        ys = [v / 1000 for v in values.values()]
        xs.append(float(count))  # the max: the slowest of COUNT requests
        ys.append(hist.get_max_value() / 1000)
        facts.distribution[name] = (xs, ys)


def _read_arrival(path: Path, facts: Facts) -> None:
    for r in csv_rows(path, facts.notes):
        values = [_num(r.get(c)) for c in PER_SECOND_COLUMNS]
        if all(math.isfinite(v) for v in values):
            facts.arrival.append(values)


def _files(run_dir: Path, written: Sequence[str]) -> list[tuple[str, int | None]]:
    """The folder's entries (WRITTEN: files about to be written), the page itself and hidden entries
    left out (core/atomic.py's temp files among them: every writer of a run folder goes through it)."""
    out: dict[str, int | None] = {}
    try:
        entries = sorted(run_dir.iterdir())
    except OSError:
        entries = []
    for p in entries:
        if p.name == folder.REPORT_HTML or p.name.startswith("."):
            continue
        try:
            out[p.name] = None if p.is_dir() else p.stat().st_size
        except OSError:
            continue
    for name in written:
        out.setdefault(name, WRITTEN_NEXT)
    return sorted(out.items())


WRITTEN_NEXT = -1
"""The size of a file written right after the page (run.json, by the plugin): not known yet."""


def worker_name(worker_id: str) -> str:
    """A load generator's id as the page shows it: Locust's `host_<32 hex>` with the hex cut to 8
    (still unique in a run; the full id is in run.json)."""
    host, _, tail = worker_id.rpartition("_")
    if host and len(tail) == 32 and all(c in "0123456789abcdef" for c in tail):
        return f"{host}_{tail[:8]}"
    return worker_id


# --- numbers as the files have them ---------------------------------------------------------------


ms = show_ms
"""A latency as every output shows it (core/figures.show_ms): to the microsecond, so
locust_latency_hdr.csv's values (at most three decimals, 26.959) print unchanged and Locust's maximum
(a float with sub-microsecond noise, 25.05221299998084) prints 25.052; "-" for no value."""


count = show_count
"""A count as every output shows it (core/figures.show_count)."""

rate = show_rate
"""A rate as every output shows it (core/figures.show_rate)."""


# --- the page -------------------------------------------------------------------------------------

CSS = """
.answer{background:#f3f7fc;border:2px solid #4c72b0;border-radius:6px;padding:.3em 1.2em .8em;margin:1em 0}
.status{font-size:1.1em;font-weight:bold} .ok{color:#1b7a2f} .bad{color:#b3261e} .warnc{color:#9a6700}
.missing{background:#fdecea;border-left:4px solid #b3261e;padding:.4em 1em;margin:.8em 0}
"""
"""The run page's own rules, after core/skeleton.py's shared ones: the answer box, the status's
colours, the box of what could not be read."""


def render(run_dir: Path, manifest: RunManifest | None = None) -> str:
    """The whole page for RUN_DIR (MANIFEST: run.json's content when it is not written yet)."""
    facts = read(run_dir, manifest)
    return document(f"Run {facts.answer.run_id}", body(facts))


def document(title: str, content: str) -> str:
    """The page around CONTENT: core/skeleton.py's document with the run page's rules and its MARK."""
    return skeleton.document(title, content, css=CSS, head=MARK)


def body(facts: Facts, href: str = "", heading: int = 1) -> str:
    """The page's content; HREF: the folder's path from where the page is read (the analysis'
    one-run report lives elsewhere), HEADING: the level of its title (2 inside another page)."""
    a, m = facts.answer, facts.manifest
    h = f"h{heading}"
    parts = [f"<{h}>Run {escape(a.run_id)}</{h}>", _subtitle(m, facts, href)]
    parts.append(_answer_html(a))
    if a.warnings:
        parts.append(
            '<div class="warn"><strong>Warnings</strong><ul>'
            + "".join(f"<li>{escape(w)}</li>" for w in a.warnings)
            + "</ul></div>"
        )
    if facts.notes:
        parts.append(
            '<div class="missing"><strong>Missing or unreadable</strong>: what the page could not read is '
            "left out.<ul>" + "".join(f"<li>{escape(n)}</li>" for n in facts.notes) + "</ul></div>"
        )
    parts += _open_model_html(facts)
    parts += _charts_html(facts)
    parts += _checks_html(m)
    parts += _failures_html(facts)
    parts += _events_html(m)
    parts.append(_settings_html(m))
    parts.append(_files_html(facts, href))
    return "".join(p for p in parts if p)


def _subtitle(m: RunManifest, facts: Facts, href: str) -> str:
    bits = []
    if m.started_at:
        bits.append(f"started {m.started_at.replace('T', ' ').removesuffix('Z')} UTC")
    if m.duration_s is not None:
        bits.append(f"{m.duration_s:g} s")
    if m.user_classes:
        bits.append(", ".join(m.user_classes))
    if m.users is not None:
        bits.append(f"{m.users} users")
    if m.mode:
        bits.append(
            f"{m.workers_connected} of {m.workers_expected} workers"
            if m.mode != "local"
            else "local (one process)"
        )
    if m.started_from:
        bits.append("from the web UI" if m.started_from == "ui" else m.started_from)
    if m.host:
        bits.append(f"against {m.host}")
    line = escape(" · ".join(bits)) if bits else "settings unknown (no run.json)"
    if any(name == folder.LOCUST_REPORT_HTML for name, _ in facts.files):
        link = escape(href + folder.LOCUST_REPORT_HTML)
        line += f' · Locust\'s own report: <a href="{link}">{folder.LOCUST_REPORT_HTML}</a>'
    return f'<p class="muted">{line}</p>'


def _status_class(status: str | None) -> str:
    return "ok" if status == COMPLETE else "bad" if status == FAILED else "warnc" if status else ""


def _answer_html(a: Answer) -> str:
    """The box the page opens with: status, verdict, the headline, the numbers per request name."""
    total = a.aggregated
    parts = ['<div class="answer" id="answer">']
    parts.append(f'<p class="status {_status_class(a.status)}">Status: {escape(a.status_line())}</p>')
    if total is not None:
        share = f" ({total.failures / total.requests:.2%})" if total.requests and total.failures else ""
        parts.append(
            f"<p><strong>{count(total.requests)}</strong> requests, "
            f"<strong>{count(total.failures)}</strong> failed{share}, "
            f"<strong>{rate(total.rps)}</strong> requests/s; p50 <strong>{ms(total.p50_ms)}</strong> ms, "
            f"p95 <strong>{ms(total.p95_ms)}</strong> ms, p99 <strong>{ms(total.p99_ms)}</strong> ms, "
            f"max <strong>{ms(total.max_ms)}</strong> ms</p>"
        )
    if a.verdict:
        parts.append(
            f"<p><strong>Verdict: {escape(a.verdict)}</strong>"
            + (f": {escape(a.reason)}" if a.reason else "")
            + "</p>"
        )
    if a.names:
        parts.append(names_table(a.names, "numbers"))
        source = (
            f"exact, from the run's HDR histograms ({folder.LATENCY_HDR_CSV}, service time, "
            "3 significant digits)"
            if a.latency == EXACT
            else f"rounded: Locust's own ({folder.STATS_CSV}; this run has no {folder.LATENCY_HDR_CSV})"
        )
        parts.append(
            f'<p class="muted">Latency {escape(source)}; requests, failures and requests/s from '
            f"{folder.STATS_CSV}.</p>"
        )
    else:
        parts.append(f"<p>No request numbers: {folder.STATS_CSV} is missing, empty or unreadable.</p>")
    parts.append("</div>")
    return "".join(parts)


def names_table(names: Sequence[NameAnswer], table_id: str) -> str:
    """One row per request name (Aggregated last, in bold): the numbers as the files have them."""
    head = ("name", "type", "requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms")
    rows = []
    for n in names:
        cells = [n.name, n.type]
        nums = [
            count(n.requests),
            count(n.failures),
            rate(n.rps),
            ms(n.p50_ms),
            ms(n.p95_ms),
            ms(n.p99_ms),
            ms(n.max_ms),
        ]
        css = ' class="total"' if n.name == AGGREGATED else ""
        rows.append(
            f"<tr{css}>"
            + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + "".join(f'<td class="n">{c}</td>' for c in nums)
            + "</tr>"
        )
    heads = "".join(f'<th class="n">{h}</th>' if i > 1 else f"<th>{h}</th>" for i, h in enumerate(head))
    return f'<table id="{table_id}"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _open_model_html(facts: Facts) -> list[str]:
    om = facts.manifest.open_model
    if om is None:
        return []
    out = ["<h2>Open model</h2>"]
    dropped = f"{om.dropped_iterations} dropped" + (
        f" ({om.dropped_ratio:.2%})" if om.dropped_ratio is not None else ""
    )
    out.append(
        f"<p>Arrival rate <code>{escape(om.arrival_rate or '?')}</code> with a pool of "
        f"{om.pool_users} users: "
        f"offered {rate(om.offered_rate or math.nan)}/s, achieved {rate(om.achieved_rate or math.nan)}/s; "
        f"{escape(dropped)}.</p>"
    )
    if om.capacity and om.capacity.reason:
        out.append(f"<p>{escape(om.capacity.reason)}</p>")
    if facts.answer.intended:
        out.append(
            "<p>Latency from each iteration's intended start (what a user arriving on schedule saw, the wait "
            f"for a free user included), per request name ({folder.LATENCY_HDR_CSV}, kind intended):</p>"
        )
        out.append(names_table(facts.answer.intended, "intended"))
    out += _start_lag_html(om)
    return out


def _start_lag_html(om: OpenModel) -> list[str]:
    """The generator's own share of the intended-start latency (run.json open_model's start_lag):
    how late each iteration's first request went out, over every generator, then each one's."""
    every = om.latency_ms.start_lag if om.latency_ms else None
    if every is None:
        return []
    rows = [["every generator", count(every.count), ms(every.p50), ms(every.p99), ms(every.max)]]
    if len(om.per_worker) > 1:
        for wid, w in om.per_worker.items():
            if w.start_lag is not None:
                lag = w.start_lag
                rows.append([worker_name(wid), count(lag.count), ms(lag.p50), ms(lag.p99), ms(lag.max)])
    return [
        "<p>The load generator's own share of that latency: how late each iteration's first request "
        f"went out after its intended start ({folder.MANIFEST} open_model start_lag). What is left of "
        "the intended-start latency is the requests' own time.</p>",
        _table(["generator", "iterations", "p50 ms", "p99 ms", "max ms"], rows, table_id="start-lag"),
    ]


# --- charts ---------------------------------------------------------------------------------------


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"


def _chart(lines: list[svg.Line], title: str, ylabel: str, **options: object) -> str:
    """svg.lines with the page's size, margins and defaults (time on x, y from 0)."""
    options = {"ymin": 0, "width": CHART_WIDTH, "right_px": RIGHT_PX, **options}
    xlabel = str(options.pop("xlabel", "seconds since the test start"))
    return svg.lines(lines, title, xlabel, ylabel, **options)  # type: ignore[arg-type]


def _charts_html(facts: Facts) -> list[str]:
    out = ["<h2>Charts</h2>"]
    out += _over_time(facts)
    out += _distribution(facts)
    out += _arrival(facts)
    out += _cpu(facts.manifest)
    out += _lag(facts.manifest)
    return out if len(out) > 1 else []


def _marks(m: RunManifest) -> list[tuple[float, str]]:
    """The events that explain a change over time, as (second, what) for the charts."""
    events = [e for e in m.events or [] if e.kind in MARKED_EVENTS and e.t_s is not None]
    return [(float(e.t_s or 0), (e.kind or "").replace("_", " ")) for e in events]


def _over_time(facts: Facts) -> list[str]:
    """Exact percentiles per window (Aggregated; each name's p95), throughput and users."""
    out = []
    marks = _marks(facts.manifest)
    agg = facts.windows.get((SERVICE, AGGREGATED))
    per = facts.window_s
    # One time axis for every chart over time: the windows' (each window at its start), else the history's.
    span = [t for s in facts.windows.values() for t in s.t] or [t for t, _ in facts.users + facts.throughput]
    xlim = (min(0.0, *span), max(span)) if span else None
    if agg is not None:
        lines = [
            svg.Line(agg.t, agg.p50, svg.colour(0), "p50"),
            svg.Line(agg.t, agg.p95, svg.colour(1), "p95"),
            svg.Line(agg.t, agg.p99, svg.colour(3), "p99"),
        ]
        late = facts.windows.get((INTENDED, AGGREGATED))
        if late is not None:
            lines.append(svg.Line(late.t, late.p99, svg.colour(4), "p99 since intended start", dashed=True))
        chart = _chart(lines, "Latency per window, Aggregated (exact)", "ms", vlines=marks, xlim=xlim)
        out.append(
            _figure(
                chart,
                f"Each {per:g} s window's own percentiles ({folder.LATENCY_WINDOWS_CSV}: the window's HDR "
                "histogram, every request that ended in it), not a trailing average.",
            )
        )
        names = sorted(label for kind, label in facts.windows if kind == SERVICE and label != AGGREGATED)
        if len(names) > 1:
            series = [facts.windows[(SERVICE, n)] for n in names]
            lines = [
                svg.Line(w.t, w.p95, svg.colour(i), n)
                for i, (n, w) in enumerate(zip(names, series, strict=True))
            ]
            chart = _chart(lines, "p95 per window, per request name (exact)", "ms", vlines=marks, xlim=xlim)
            out.append(_figure(chart, f"Each request name's p95 in each {per:g} s window."))
    throughput = [(t, c / per) for t, c in zip(agg.t, agg.count, strict=True)] if agg else facts.throughput
    if len(throughput) > 1 or len(facts.users) > 1:
        t, rps = [p[0] for p in throughput], [p[1] for p in throughput]
        lines = [svg.Line(t, rps, svg.colour(0), "requests/s")]
        if agg is not None and any(agg.failures):
            lines.append(svg.Line(agg.t, [f / per for f in agg.failures], svg.colour(3), "failures/s"))
        if facts.users:
            t, users = [u[0] for u in facts.users], [u[1] for u in facts.users]
            lines.append(svg.Line(t, users, "#555", "users", dashed=True, right=True, step=True))
        chart = _chart(
            lines, "Throughput and users", "requests/s", right_label="users", vlines=marks, xlim=xlim
        )
        source = (
            f"requests that ended in each {per:g} s window ({folder.LATENCY_WINDOWS_CSV})"
            if agg
            else f"differences of Locust's cumulative counts ({folder.HISTORY_CSV}; no windows file)"
        )
        users = f"Users: Locust's user count each second ({folder.HISTORY_CSV})."
        out.append(_figure(chart, f"Throughput: {source}. {users}"))
    return out


PERCENT_TICKS = ((1, "0%"), (2, "50%"), (10, "90%"), (100, "99%"), (1000, "99.9%"), (10**4, "99.99%"))
PERCENT_TICKS += ((10**5, "99.999%"), (10**6, "99.9999%"))
"""The distribution chart's x axis: 1/(1 - q) on a log scale, labelled with q."""


def _distribution(facts: Facts) -> list[str]:
    if not facts.distribution:
        return []
    lines = []
    for i, (name, (xs, ys)) in enumerate(facts.distribution.items()):
        total = name.startswith(AGGREGATED)
        dashed = total and name != AGGREGATED  # the open model's intended-start line
        lines.append(
            svg.Line(xs, ys, "#222" if total else svg.colour(i), name, dashed, width=2.2 if total else 1.3)
        )
    chart = _chart(
        lines, "Latency distribution per request name (exact)", "ms", xlog=True, xticks=PERCENT_TICKS,
        xlabel="percentile",
    )  # fmt: skip
    caption = (
        f"The whole run's HDR histograms ({folder.LATENCY_HDR_JSON}): the latency at each percentile, "
        "the last point of each line its max (x: 1/(1 - q), log scale)."
    )
    return [_figure(chart, caption)]


def _arrival(facts: Facts) -> list[str]:
    if not facts.arrival:
        return []
    t = [r[0] for r in facts.arrival]
    lines = [
        svg.Line(t, [r[1] for r in facts.arrival], svg.colour(0), "scheduled/s"),
        svg.Line(t, [r[2] for r in facts.arrival], svg.colour(2), "started/s", dashed=True),
        svg.Line(t, [r[3] for r in facts.arrival], svg.colour(3), "dropped/s"),
    ]
    chart = _chart(
        lines, "Open model: iterations per second", "iterations/s", xlabel="second of the schedule"
    )
    return [
        _figure(
            chart,
            f"Per second of the arrival schedule ({folder.ARRIVAL_CSV}): iterations the generators "
            "scheduled, started, and dropped for want of a free user.",
        )
    ]


def _cpu(m: RunManifest) -> list[str]:
    """Each load generator's CPU, mean and busiest interval, as a share of what it may use."""
    workers = m.worker_cpu.per_worker if m.worker_cpu else []
    if not workers:
        return []
    of_limit = all(w.mean_percent_of_limit is not None for w in workers)
    rows = []
    for w in workers:
        limit = w.cpu_limit.cpus if w.cpu_limit and w.cpu_limit.cpus else None
        name = worker_name(w.id or "?") + (f" (limit {limit:g} CPU)" if limit else "")
        values = (
            (w.mean_percent_of_limit, w.max_percent_of_limit) if of_limit else (w.mean_percent, w.max_percent)
        )
        rows.append((name, [math.nan if v is None else v for v in values]))
    keys = [("mean over the run", svg.colour(0)), ("busiest report interval", svg.colour(1))]
    unit = "% of what it may use (min of 1 core and its limit)" if of_limit else "% of one core"
    bound = (GENERATOR_CPU_LIMIT_PCT, f"{GENERATOR_CPU_LIMIT_PCT:g} %: generator-bound")
    chart = svg.bars(
        rows, keys, "Load generators' CPU", unit, mark=bound, width=CHART_WIDTH, right_px=RIGHT_PX
    )
    caption = (
        f"Each generator's own CPU measurement ({folder.MANIFEST} worker_cpu); at "
        f"{GENERATOR_CPU_LIMIT_PCT:g} % the verdict calls a run generator-bound."
    )
    host = m.host_cpu
    if host and host.mean_percent is not None:
        caption += f" The machine's CPUs ({host.cpus}): {host.mean_percent:g} % busy on average."
    if m.target and m.target.cpu_share_of_limit is not None:
        caption += f" The target used {m.target.cpu_share_of_limit:.0%} of its CPU."
    return [_figure(chart, caption)]


def _lag(m: RunManifest) -> list[str]:
    """Each load generator's event-loop lag per report (p99), against the verdict's bound."""
    lag = m.generator_lag
    if lag is None or not lag.per_worker:
        return []
    cols = lag.series_columns or ["t_s", "p50_ms", "p99_ms", "max_ms"]
    if "t_s" not in cols or "p99_ms" not in cols:
        return []
    it, ip = cols.index("t_s"), cols.index("p99_ms")
    lines = []
    for i, w in enumerate(lag.per_worker):
        points = [r for r in w.series if len(r) > max(it, ip) and r[it] is not None and r[ip] is not None]
        t, p99 = [r[it] for r in points], [r[ip] for r in points]
        lines.append(svg.Line(t, p99, svg.colour(i), f"{worker_name(w.id or '?')} p99"))  # type: ignore[arg-type]
    bound = [(lag.bound_ms, "#c44e52", f"bound {lag.bound_ms:g} ms")] if lag.bound_ms is not None else []
    chart = _chart(lines, "Load generators' event-loop lag", "ms late (p99 per report)", hlines=bound)
    worst = ms(lag.worst_p99_ms if lag.worst_p99_ms is not None else math.nan)
    verdict = "above the bound: its latency figures include the generator's own delay" if lag.inflated else ""
    return [
        _figure(
            chart,
            f"How late a timer due every {lag.tick_ms or 10:g} ms woke on each generator, p99 per stats "
            f"report ({folder.MANIFEST} generator_lag); worst p99 {worst} ms"
            + (f", {verdict}." if verdict else ", within the bound."),
        )
    ]


# --- the rest -------------------------------------------------------------------------------------


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], table_id: str = "") -> str:
    heads = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    ident = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>"


def _checks_html(m: RunManifest) -> list[str]:
    if not m.checks:
        return []
    rows = [
        (
            c.expr or "",
            "-" if c.measured is None else f"{c.measured:g}",
            "passed" if c.passed else "BROKEN",
            "exact" if c.exact else "rounded" if c.exact is False else "",
        )
        for c in m.checks
    ]
    return ["<h2>Thresholds</h2>", _table(("threshold", "measured", "outcome", "latency"), rows)]


def _failures_html(facts: Facts) -> list[str]:
    if not facts.failures:
        return []
    rows = [
        (
            r.get(folder.FAIL_METHOD) or "",
            r.get(folder.FAIL_NAME) or "",
            r.get(folder.FAIL_ERROR) or "",
            r.get(folder.FAIL_OCCURRENCES) or "",
        )
        for r in facts.failures[:FAILURE_ROWS]
    ]
    more = len(facts.failures) - FAILURE_ROWS
    tail = f'<p class="muted">… and {more} more in {folder.FAILURES_CSV}.</p>' if more > 0 else ""
    return ["<h2>Failures</h2>", _table(("method", "name", "error", "occurrences"), rows) + tail]


def _events_html(m: RunManifest) -> list[str]:
    if not m.events:
        return []
    rows = [("-" if e.t_s is None else f"{e.t_s:g}", e.kind or "", e.detail or "") for e in m.events]
    return ["<h2>What happened</h2>", _table(("second", "event", "detail"), rows)]


def _settings_html(m: RunManifest) -> str:
    """run.json's plain values (folded); its sections are drawn above or are in the file."""
    if m.run_id is None and m.started_at is None:  # no run.json (said above)
        return ""
    data = m.to_json()
    rows = []
    for key, value in data.items():
        if isinstance(value, str | int | float | bool):
            rows.append((key, str(value)))
        elif isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
            rows.append((key, ", ".join(map(str, value))))
    if m.target:
        rows += [
            (f"target.{k}", str(v))
            for k, v in (("store", m.target.store), ("cpus", m.target.cpus))
            if v is not None
        ]
    if not rows:
        return ""
    table = _table(("setting", "value"), rows)
    return f"<details><summary>Settings ({folder.MANIFEST})</summary>{table}</details>"


def _size(n: int | None) -> str:
    if n is None:
        return "folder"
    if n == WRITTEN_NEXT:
        return "-"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return ""


def _files_html(facts: Facts, href: str) -> str:
    rows = []
    for name, size in facts.files:
        link = f'<a href="{escape(href + quote(name))}">{escape(name)}</a>'
        rows.append(
            f'<tr><td>{link}</td><td class="n">{_size(size)}</td><td>{escape(FILES.get(name, ""))}</td></tr>'
        )
    return (
        '<h2>Files</h2><table id="files"><thead><tr><th>file</th><th class="n">size</th><th>what</th>'
        "</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


# --- the file -------------------------------------------------------------------------------------


def write(run_dir: Path, manifest: RunManifest | None = None) -> Path:
    """RUN_DIR/report.html, replaced atomically (a reader sees the old page or the new)."""
    return write_atomic(Path(run_dir) / folder.REPORT_HTML, render(run_dir, manifest))


def is_run_page(path: Path) -> bool:
    """PATH is a run page (not Locust's own report.html, which older folders hold under that name)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return MARK in f.read(2048)
    except OSError:
        return False
