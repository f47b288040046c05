"""report.html: one self-contained page, read top to bottom: the answers box, the charts (each rendered
once to PNG), the tables.

The report's charts: each rendered once to PNG bytes (the same bytes go to the file in OUT and
to the page), with a title, a caption saying what is drawn and how it was computed, and optionally
the figures behind it. Every chart of the analysis is a `Chart` made here, from a Figure that
plots.py, plots.py, health.py, openmodel.py or openmodel.py returns. Pure: no file is written
here (commands.py writes them).

The box a sweep's report opens with: its answers before its details.

Each comparison's verdict with its CI (comparisons.py), what limited each group (the bottleneck at
its largest worker count), and every run left out (partial runs, sweep points that did not finish).
The details (warnings, settings, run health, events, fits, charts) follow it.

report.html: one self-contained page, read top to bottom.

Order: what was run, the scaling verdict in plain words, the charts, the tables. Charts are PNGs
embedded as base64 so the page can be mailed or attached to an issue as one file. Every piece of
text from the data (run ids, hosts, error messages) goes through html.escape."""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis import health, openmodel, plots
from swarmbench.analysis.comparisons import Comparison
from swarmbench.analysis.knee import Knee, step_load_knee
from swarmbench.analysis.plots import figure_png
from swarmbench.analysis.runs import Run, has_series
from swarmbench.analysis.scaling import (
    ScalingGroup,
    configuration_key,
    group_bottleneck,
    partial_runs,
    run_bottleneck,
)
from swarmbench.analysis.summary import failures_table, settings_table
from swarmbench.analysis.timeseries import run_series
from swarmbench.core import skeleton
from swarmbench.core.bottleneck import DROP_LIMIT, KNEE_P99_MS
from swarmbench.core.bottleneck import legend as verdict_legend
from swarmbench.core.sweepstate import SweepState
from swarmbench.core.sweepstate import SweepState as Sweep

# --- the report's charts, rendered once -----------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    filename: str  # the PNG's name in the output folder
    title: str
    caption: str
    png: bytes
    table: pd.DataFrame | None = None  # figures behind the chart, shown under it (e.g. the knee's steps)


def safe_filename(name: str) -> str:
    """NAME (a run id) as part of a file name: anything but letters, digits and ._+- becomes -."""
    return "".join(ch if ch.isalnum() or ch in "._+-" else "-" for ch in name)


def render_charts(
    runs: Sequence[Run],
    summary: pd.DataFrame,
    groups: Sequence[ScalingGroup],
    knee_p99_ms: float = KNEE_P99_MS,
) -> list[Chart]:
    """Every chart of the report, rendered once (the same bytes go to the PNG file and the page),
    in the page's order. KNEE_P99_MS: the open-model knee's intended-start p99 bound (the CLI's
    --knee-p99-ms)."""
    return [
        *_scaling_charts(groups),
        *_comparison_charts(runs, summary),
        *_knee_charts(runs),
        *_whole_run_charts(summary),
        *_distribution_charts(runs),
        *_over_time_charts(runs),
        *_health_charts(runs),
        *_lag_charts(runs),
        *_open_model_charts(runs, knee_p99_ms),
    ]


def step_charts(runs: Sequence[Run], knee_p99_ms: float = KNEE_P99_MS) -> list[Chart]:
    """What a one-configuration report (the run pages) adds for a step load or an open-model run:
    the knee (`swarmbench knee`'s answer), the offered vs achieved rate, what a worker count
    sustained."""
    return [*_knee_charts(runs), *_open_model_charts(runs, knee_p99_ms)]


def _scaling_charts(groups: Sequence[ScalingGroup]) -> list[Chart]:
    """Speedup and throughput vs workers, per scaling group of two or more worker counts."""
    charts: list[Chart] = []
    for g in groups:
        if len(g.points) < 2:
            continue
        charts.append(
            Chart(
                f"speedup_{g.slug}.png",
                f"Speedup — {g.key.label()}",
                "Dots: runs; circles with bars: mean and min–max of repeats, divided by the fitted "
                "one-worker throughput γ. Dotted: ideal linear speedup.",
                figure_png(plots.speedup_figure(g)),
            )
        )
        charts.append(
            Chart(
                f"throughput_{g.slug}.png",
                f"Throughput vs workers — {g.key.label()}",
                "Locust's Aggregated requests/s per run, with the fitted Amdahl and USL curves.",
                figure_png(plots.throughput_figure(g)),
            )
        )
    return charts


def _comparison_charts(runs: Sequence[Run], summary: pd.DataFrame) -> list[Chart]:
    """User classes side by side; store strategies side by side (when the runs cover several)."""
    charts: list[Chart] = []
    if summary[C.USER_CLASS].dropna().nunique() >= 2:
        charts.append(
            Chart(
                "user_classes.png",
                "User classes side by side",
                "Same scenario under each Locust client: throughput and latency per worker count.",
                figure_png(plots.user_class_comparison_figure(summary)),
            )
        )
    stores = stores_table(runs)
    if stores is not None:
        charts.append(
            Chart(
                "stores.png",
                "Target store strategies",
                "Same scenario against each ALBUMS_STORE strategy, per request mix: bars are means of "
                "repeats, ticks min–max.",
                figure_png(plots.stores_figure(stores)),
            )
        )
    return charts


def _knee_charts(runs: Sequence[Run]) -> list[Chart]:
    """Step-load runs: per-step throughput and latency, the knee (or why there is none)."""
    knees = [(run, step_load_knee(run)) for run in runs]
    return [_knee_chart(run, k) for run, k in knees if k is not None]


def _knee_chart(run: Run, k: Knee) -> Chart:
    exact = C.LATENCY in k.steps and (k.steps[C.LATENCY] == "exact").all()
    latency = (
        "its p50/p95 exact: the step's 1 s HDR windows over the same span merged, then the percentile."
        if exact
        else "its p50/p95 rounded: the median of Locust's ~10 s-window values once that window holds "
        "the step alone (no histogram files)."
    )
    caption = (
        " One point per step: its throughput from request counts within the step after settling, " + latency
    )
    png = figure_png(plots.knee_figure(k, run.label))
    name = f"knee_{safe_filename(run.run_id)}.png"
    return Chart(name, f"Knee — {run.run_id}", k.sentence() + caption, png, k.table())


def _whole_run_charts(summary: pd.DataFrame) -> list[Chart]:
    """Percentiles per endpoint; latency against users."""
    charts = [
        Chart(
            "endpoint_percentiles.png",
            "Response-time percentiles per endpoint",
            "Percentiles over each whole run: exact from the run's HDR histograms where it has them, else "
            "Locust's cumulative ones from *_stats.csv (rounded); summary.csv's latency column says which.",
            figure_png(plots.endpoint_percentiles_figure(summary)),
        )
    ]
    if summary[C.USERS].notna().any():
        charts.append(
            Chart(
                "latency_vs_users.png",
                "Latency vs users",
                "Aggregated whole-run percentiles against the configured number of users.",
                figure_png(plots.latency_vs_users_figure(summary)),
            )
        )
    return charts


def configurations(runs: Sequence[Run]) -> list[tuple[str, list[Run]]]:
    """The runs with exact histograms, grouped by configuration (the scaling group's settings and the
    worker count: repeats of one configuration together), labelled like Run.label without the repeat."""
    groups: dict[object, tuple[str, list[Run]]] = {}
    for run in runs:
        if run.latency.book is None:
            continue
        key = configuration_key(run)
        label = " ".join(p for p in run.label.split(" ") if not p.startswith("#"))
        groups.setdefault(key, (label, []))[1].append(run)
    return list(groups.values())


def _distribution_charts(runs: Sequence[Run]) -> list[Chart]:
    """Per endpoint, the exact latency distribution, one line per configuration (repeats merged)."""
    configs = configurations(runs)
    if not configs:
        return []
    charts = []
    for endpoint in plots.endpoints_of(runs):
        lines = plots.configuration_lines(configs, endpoint)
        if lines:
            charts.append(
                Chart(
                    f"latency_distribution_{safe_filename(endpoint)}.png",
                    f"Latency distribution — {endpoint}",
                    "Exact (HDR histograms, 3 significant digits): latency at each percentile of the "
                    "service time, x = 1/(1 − q) on a log scale; one line per configuration, its repeats' "
                    "histograms merged (not their percentiles averaged); the last point is the max. Runs "
                    "without histogram files (rounded) are not drawn.",
                    figure_png(plots.distribution_figure(lines, endpoint)),
                )
            )
    return charts


def _over_time_charts(runs: Sequence[Run]) -> list[Chart]:
    """Each run's throughput (from request counts) and percentiles over time."""
    charts: list[Chart] = []
    for run in runs:
        series = run_series(run)
        if series.empty:
            continue
        charts.append(
            Chart(
                f"over_time_{safe_filename(run.run_id)}.png",
                f"Over time — {run.run_id}",
                f"Throughput: differences of Locust's cumulative request counts over "
                f"{series.attrs['window_s']} s windows (the workers' report interval, "
                f"{series.attrs['interval_s']} s, read from when the counts change), not Locust's "
                "lagging Requests/s column; dotted: partial windows holding the workers' first reports "
                "or final flush. " + _over_time_latency(series) + " The same numbers are in timeseries.csv.",
                figure_png(plots.over_time_figure(series, run.label)),
            )
        )
    return charts


def _over_time_latency(series: pd.DataFrame) -> str:
    if series.attrs.get("pct_window") == "exact":
        return (
            "Percentiles exact: each window's own, from the run's 1 s HDR windows inside it merged "
            "(no trailing average); empty windows are gaps."
        )
    return (
        "Percentiles rounded: Locust's history values (a trailing ~10 s window, 2 significant "
        "digits) at each window's end; empty windows are gaps."
    )


def _lag_charts(runs: Sequence[Run]) -> list[Chart]:
    """An event-loop lag chart for each run whose load generators measured it (analysis/health.py)."""
    return [
        Chart(
            f"generator_lag_{safe_filename(run.run_id)}.png",
            f"Load generator lag over time — {run.run_id}",
            health.caption(run),
            figure_png(health.lag_figure(run)),
        )
        for run in runs
        if not health.lag_frame(run).empty
    ]


def _health_charts(runs: Sequence[Run]) -> list[Chart]:
    """A workers-over-time chart for each run whose connected load-generator count changed (shown
    in the report's Run health section, not among the charts: health.is_health_chart)."""
    return [
        Chart(
            f"{health.CHART_PREFIX}{safe_filename(run.run_id)}.png",
            f"Load generators over time — {run.run_id}",
            "Connected load generators (run.json's workers_timeline), each change as the master saw "
            "it; dashed: the count the run expected. Fewer than expected: the lost ones' users were "
            "not replaced, so the run offered less load than asked.",
            figure_png(health.workers_figure(run)),
        )
        for run in runs
        if health.workers_changed(run)
    ]


def _open_model_charts(runs: Sequence[Run], knee_p99_ms: float) -> list[Chart]:
    """Open-model (--arrival-rate) runs: offered vs achieved rate, drops and both latency curves,
    with the run in words (rates, drops, the coordinated-omission gap, capacity, the knee of a
    stepped schedule, its intended-start p99 bound KNEE_P99_MS, with its steps as the table) as the
    caption; then what each worker count sustained."""
    opened = [(run, openmodel.load(run.folder)) for run in runs if openmodel.is_open_run(run.folder)]
    if not opened:
        return []
    out = []
    for run, om in opened:
        k = openmodel.open_model_knee(om, knee_p99_ms)
        out.append(
            Chart(
                f"open_model_{safe_filename(run.run_id)}.png",
                f"Open model — {run.run_id}",
                " · ".join([*openmodel.summary_lines(om), *([k.sentence()] if k else [])]),
                figure_png(openmodel.figure(om, run.run_id)),
                None if k is None else k.steps,
            )
        )
    table = openmodel.sweep_table([(run.user_class, run.workers, om) for run, om in opened])
    if table is not None:
        out.append(
            Chart(
                "open_model_sustained.png",
                "Highest arrival rate sustained vs workers",
                "Per worker count: the highest step of the arrival-rate schedule that every repeat "
                f"sustained (achieved within {DROP_LIMIT:.0%} of offered, < {DROP_LIMIT:.0%} dropped, each "
                f"step after its first {openmodel.SETTLE_S} s), bars up to the best repeat's. 0: not even "
                "the first step.",
                figure_png(openmodel.sweep_figure(table)),
                table,
            )
        )
    return out


def stores_table(runs: Sequence[Run]) -> pd.DataFrame | None:
    """One row per run (store, mix, rps, p95) when the runs cover two or more store strategies."""
    rows = [
        {
            C.STORE: r.meta.store,
            "mix": r.meta.albums_mix or "default",
            C.RPS_OUT: float(r.aggregated[C.RPS_OUT]),
            C.P95_MS: float(r.aggregated[C.P95_MS]),
        }
        for r in runs
        if r.meta.store
    ]
    table = pd.DataFrame(rows)
    if table.empty or table[C.STORE].nunique() < 2:
        return None
    return table


def charts_html(charts: Sequence[Chart], heading: str) -> str:
    """CHARTS under HEADING, as the report shows them (for a page of another layout)."""
    return "\n".join(_charts_html(charts, heading))


# --- the box a sweep's report opens with ----------------------------------------------------------

SUMMARY_CSS = (
    ".summary{background:#f3f7fc;border:2px solid #4c72b0;border-radius:6px;padding:.4em 1.2em;margin:1em 0}"
    ".summary h2{border:0;margin-top:.4em} .summary li{margin:.2em 0}"
)


def left_out(runs: Sequence[Run], sweeps: Sequence[SweepState], include_partial: bool) -> list[str]:
    """One phrase per run the comparisons and fits do not use, with why."""
    out = []
    if not include_partial:
        out += [f"{r.run_id} ({r.meta.status})" for r in partial_runs(runs)]
    out += [f"{r.run_id} (no run.json)" for r in runs if not r.has_manifest]
    out += [f"{r.run_id} (worker count unknown)" for r in runs if r.has_manifest and r.workers is None]
    for sweep in sweeps:
        out += [
            f"{p.get('id')} ({p.get('status')}: {p.get('reason') or 'not run yet'})" for p in sweep.missing
        ]
    return out


def _list(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def summary_html(
    comparisons: Sequence[Comparison],
    groups: Sequence[ScalingGroup],
    runs: Sequence[Run],
    sweeps: Sequence[SweepState] = (),
    include_partial: bool = False,
) -> str:
    """The box as HTML (every text from the data escaped)."""
    parts = ['<div class="summary" id="summary"><h2>Summary</h2>']
    if comparisons:
        by_context: dict[str, list[Comparison]] = {}
        for c in comparisons:
            by_context.setdefault(c.context, []).append(c)
        for context, found in by_context.items():
            parts.append(f"<p><strong>{escape(context)}</strong></p>")
            parts.append(_list([escape(c.line()) for c in found]))
    elif any(not has_series(r) for r in runs):
        parts.append(
            "<p>Comparisons left out: some runs have no per-second numbers (neither windows nor history "
            "file; see the warnings).</p>"
        )
    else:
        parts.append("<p>Nothing to compare: every group has one worker count, client and store.</p>")
    limits = [(g, group_bottleneck(g)) for g in groups]
    lines = [f"{escape(g.key.label())}: {escape(b[1].removeprefix('Bottleneck: '))}" for g, b in limits if b]
    parts.append("<p><strong>Bottleneck</strong></p>" + (_list(lines) if lines else "<p>Not judged.</p>"))
    gone = left_out(runs, sweeps, include_partial)
    parts.append(
        "<p><strong>Left out</strong>: "
        + (escape(", ".join(gone)) if gone else "no run; every run is in the comparisons and fits")
        + "</p>"
    )
    rounded = any(c.rounded for c in comparisons)
    parts.append(
        '<p class="muted">Change of the candidate vs the reference with its 95 % CI and verdict '
        "(swarmbench compare's two-stage block bootstrap; a point's repeats are its repeats; ±5 % band). "
        + (
            "Rounded: some runs have no histogram files; Locust's per-second numbers are used. "
            if rounded
            else ""
        )
        + "The details follow.</p></div>"
    )
    return "\n".join(parts)


# --- the page -------------------------------------------------------------------------------------


def _bottleneck_html(runs: Sequence[Run]) -> str:
    rows = []
    for run in runs:
        b = run_bottleneck(run)
        if b:
            rows.append({"run": run.run_id, "verdict": b.verdict, "why": b.reason})
    if not rows:
        return "<p>No run carries the figures a verdict needs (run.json).</p>"
    return _table(pd.DataFrame(rows)) + f'<p class="muted">{escape(verdict_legend())}</p>'


def _sweep_html(sweep: Sweep) -> str:
    s = sweep.settings
    done = len(sweep.points) - len(sweep.missing)
    parts = [
        f"<h3>{escape(sweep.sweep_id)}</h3>",
        f"<p>{done} of {len(sweep.points)} points done; workers {escape(str(s.get('workers')))}, "
        f"classes {escape(', '.join(s.get('classes') or []))}, {s.get('repeats')} repeat(s), "
        f"{escape(str(s.get('run_time')))} each, {s.get('users')} users ({escape(str(s.get('mode')))} "
        "scaling).</p>",
    ]
    if sweep.missing:
        rows = pd.DataFrame(
            [
                {"point": p.get("id"), "status": p.get("status"), "reason": p.get("reason") or "not run yet"}
                for p in sweep.missing
            ]
        )
        parts.append(
            '<div class="warn"><strong>Missing points</strong> — no run in this report for these (a '
            "rerun with the same SWEEP_ID retries them):" + _table(rows) + "</div>"
        )
    return "\n".join(parts)


# --- HTML ------------------------------------------------------------------------------------------

_CSS = (
    """
body{max-width:1200px} table{font-size:13px}
.verdict{background:#eef6ee;border-left:4px solid #2ca02c;padding:.5em 1em;margin:.6em 0}
img{border:1px solid #eee}
"""
    + SUMMARY_CSS
)
"""The sweep report's own rules, after core/skeleton.py's shared ones: a wider column for its PNG
charts, denser tables, the scaling verdict's green box, the summary box."""


def _fmt(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.3g}" if abs(value) < 10 else f"{value:,.1f}"
    return str(value)


def _table(frame: pd.DataFrame, formats: dict[str, object] | None = None) -> str:
    formats = formats or {}
    head = "".join(f"<th>{escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for col, value in zip(frame.columns, record, strict=True):
            fmt = formats.get(col)
            text = fmt(value) if callable(fmt) else _fmt(value)
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cells.append(f'<td class="n">{escape(text)}</td>' if numeric else f"<td>{escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    body = "".join(rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _same_everywhere(column: pd.Series) -> bool:
    return column.notna().all() and column.astype(str).nunique() == 1


def _pct(value: object) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1%}"


def _ci(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return "—" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _group_html(g: ScalingGroup) -> str:
    parts = [f"<h3>{escape(g.key.label())}</h3>"]
    verdict = "".join(f"<p>{escape(line)}</p>" for line in g.verdict())
    if verdict:
        parts.append(f'<div class="verdict">{verdict}</div>')
    scale = g.amdahl.gamma if g.amdahl else None
    points = pd.DataFrame(
        {
            "workers": [p.workers for p in g.points],
            "runs": [len(p.rps) for p in g.points],
            "requests/s per run": [", ".join(f"{v:.0f}" for v in p.rps) for p in g.points],
            "mean requests/s": [p.mean_rps for p in g.points],
            "speedup vs γ": [p.mean_rps / scale if scale else float("nan") for p in g.points],
        }
    )
    parts.append(_table(points))
    fits = []
    if g.amdahl:
        a = g.amdahl
        fits += [
            ("Amdahl", "serial fraction s", f"{a.serial_fraction:.3f}", _ci(a.ci95)),
            ("Amdahl", "γ (requests/s at 1 worker)", f"{a.gamma:.1f}", _ci(a.gamma_ci95, 1)),
            ("Amdahl", "max speedup 1/s", "∞" if math.isinf(a.max_speedup) else f"{a.max_speedup:.2f}", ""),
        ]
    if g.usl:
        u = g.usl
        fits += [
            ("USL", "contention α", f"{u.alpha:.4f}", _ci(u.alpha_ci95, 4)),
            ("USL", "coherency β", f"{u.beta:.5f}", _ci(u.beta_ci95, 5)),
            ("USL", "γ (requests/s at 1 worker)", f"{u.gamma:.1f}", _ci(u.gamma_ci95, 1)),
            ("USL", "peak N*", "none" if u.peak_workers is None else f"{u.peak_workers:.2f}", ""),
        ]
    if fits:
        parts.append(_table(pd.DataFrame(fits, columns=["law", "parameter", "value", "95 % interval"])))
    parts.extend(f'<p class="warn">{escape(w)}</p>' for w in g.warnings)
    return "\n".join(parts)


_SETTINGS_COLS = [
    C.RUN_ID,
    C.USER_CLASS,
    C.MODE,
    C.WORKERS,
    C.USERS,
    C.SPAWN_RATE,
    C.RUN_TIME_S,
    C.WAIT_TIME,
    C.HOST,
    C.STORE,
    C.LOCUST_VERSION,
    C.STARTED_AT,
    C.DURATION_S,
    C.EXIT_CODE,
    C.WORKER_CPU_MEAN,
    C.TARGET_CPU_UTIL,
]


def _settings_html(runs: Sequence[Run]) -> list[str]:
    """What was run: the settings every run shares, then what varies per run."""
    out: list[str] = []
    out.append("<h2>What was run</h2>")
    settings = settings_table(runs)
    cols = [c for c in _SETTINGS_COLS if c in settings]
    # Settings every run shares go in one small table; the per-run table keeps what varies.
    common = [c for c in cols if c != C.RUN_ID and len(runs) > 1 and _same_everywhere(settings[c])]
    if common:
        shared = pd.DataFrame({"setting": common, "value": [_fmt(settings[c].iloc[0]) for c in common]})
        out.append("<p>Common to every run:</p>" + _table(shared))
    varying = [c for c in cols if c not in common]
    out.append(_table(settings[varying], {C.TARGET_CPU_UTIL: _pct}))
    out.append(
        '<p class="muted">workers = load generators (1 for a local run). worker_cpu_mean_pct: mean CPU '
        "of the load generators; target_cpu_util: the target's CPU seconds / (duration × its CPUs).</p>"
    )
    return out


def _charts_html(charts: Sequence[Chart], heading: str = "Charts") -> list[str]:
    """Every chart but Run health's (shown in its own section), embedded as base64 PNG."""
    out: list[str] = []
    out.append(f"<h2>{escape(heading)}</h2>")
    for chart in (c for c in charts if not health.is_health_chart(c.filename)):
        data = base64.b64encode(chart.png).decode("ascii")
        out.append(
            f'<figure><h3>{escape(chart.title)}</h3><img alt="{escape(chart.title)}" '
            f'src="data:image/png;base64,{data}"><figcaption class="muted">{escape(chart.caption)}'
            "</figcaption>" + ("" if chart.table is None else _table(chart.table)) + "</figure>"
        )
    return out


def _tables_html(runs: Sequence[Run], summary: pd.DataFrame) -> list[str]:
    """The per-endpoint summary and the most frequent failures."""
    out: list[str] = []
    out.append("<h2>Per-endpoint summary</h2>")
    shown = summary.drop(columns=[C.METHOD, C.ENDPOINT_NAME])
    out.append(_table(shown, {C.FAIL_RATIO: _pct}))
    failures = failures_table(runs)
    out.append("<h2>Failures</h2>")
    if failures.empty:
        out.append("<p>No failures recorded.</p>")
    else:
        out.append(_table(failures.head(50)))
        if len(failures) > 50:
            out.append(f'<p class="muted">… and {len(failures) - 50} more rows.</p>')
    return out


def build_report(
    runs: Sequence[Run],
    summary: pd.DataFrame,
    groups: Sequence[ScalingGroup],
    charts: Sequence[Chart],
    warnings: Sequence[str] = (),
    inputs: Sequence[str] = (),
    title: str = "Swarmbench report",
    sweeps: Sequence[Sweep] = (),
    answers: str = "",
    pages: dict[str, str] | None = None,
) -> str:
    """The whole page as a string (the CLI writes it; nothing here touches the disk). ANSWERS, the
    answers' box (summary_html), opens it: before the warnings and every detail. PAGES: run id ->
    the link to its run page (listed under What was run)."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="muted">{len(runs)} run(s) from {escape(", ".join(inputs) or "?")}; generated {now}.</p>',
        answers,
    ]
    if warnings:
        items = "".join(f"<li>{escape(w)}</li>" for w in warnings)
        out.append(f'<div class="warn"><strong>Warnings</strong><ul>{items}</ul></div>')

    out.extend(_settings_html(runs))
    if pages:
        links = " · ".join(f'<a href="{escape(href)}">{escape(rid)}</a>' for rid, href in pages.items())
        out.append(f"<p>Each run's page (its answer, charts and files): {links}</p>")

    out.extend(health.section_html(runs, groups, charts, _table))

    if sweeps:
        out.append("<h2>Sweep</h2>")
        out.extend(_sweep_html(sw) for sw in sweeps)

    out.append("<h2>Scaling verdict</h2>")
    if groups:
        out.extend(_group_html(g) for g in groups)
    else:
        out.append("<p>No run carries a worker count (run.json), so there is nothing to fit.</p>")
    out.append(
        '<p class="muted">Fits: bounded least squares on log throughput, every run a point (repeats '
        "included); γ is fitted, not taken from one N = 1 run. 95 % intervals from the Jacobian "
        "covariance with a t-quantile, clipped to the parameter bounds.</p>"
    )

    out.append("<h2>What limited each run</h2>")
    out.extend(health.flagged_html(runs))
    out.append(_bottleneck_html(runs))

    out.extend(_charts_html(charts))

    out.extend(_tables_html(runs, summary))
    return skeleton.document(title, "\n".join(out), css=_CSS)
