"""The report's charts: each rendered once to PNG bytes (the same bytes go to the file in OUT and
to the page), with a title, a caption saying what is drawn and how it was computed, and optionally
the figures behind it. Every chart of the analysis is a `Chart` made here, from a Figure that
plots.py, plots_time.py, health.py, open_model.py or open_knee.py returns. Pure: no file is written
here (cli.py writes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis import health, lag, open_knee, open_model, plots, plots_latency, plots_time
from swarmbench.analysis.knee import Knee, step_load_knee
from swarmbench.analysis.load import Run
from swarmbench.analysis.plots import figure_png
from swarmbench.analysis.scaling import ScalingGroup
from swarmbench.analysis.timeseries import run_series
from swarmbench.core.verdict import DROP_LIMIT, KNEE_P99_MS


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
    png = figure_png(plots_time.knee_figure(k, run.label))
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
    from swarmbench.analysis.scaling import group_key

    groups: dict[object, tuple[str, list[Run]]] = {}
    for run in runs:
        if run.latency.book is None:
            continue
        key = (group_key(run), run.workers) if run.has_manifest else run.folder
        label = " ".join(p for p in run.label.split(" ") if not p.startswith("#"))
        groups.setdefault(key, (label, []))[1].append(run)
    return list(groups.values())


def _distribution_charts(runs: Sequence[Run]) -> list[Chart]:
    """Per endpoint, the exact latency distribution, one line per configuration (repeats merged)."""
    configs = configurations(runs)
    if not configs:
        return []
    charts = []
    for endpoint in plots_latency.endpoints_of(runs):
        lines = plots_latency.configuration_lines(configs, endpoint)
        if lines:
            charts.append(
                Chart(
                    f"latency_distribution_{safe_filename(endpoint)}.png",
                    f"Latency distribution — {endpoint}",
                    "Exact (HDR histograms, 3 significant digits): latency at each percentile of the "
                    "service time, x = 1/(1 − q) on a log scale; one line per configuration, its repeats' "
                    "histograms merged (not their percentiles averaged); the last point is the max. Runs "
                    "without histogram files (rounded) are not drawn.",
                    figure_png(plots_latency.distribution_figure(lines, endpoint)),
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
                figure_png(plots_time.over_time_figure(series, run.label)),
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
    """An event-loop lag chart for each run whose load generators measured it (analysis/lag.py)."""
    return [
        Chart(
            f"generator_lag_{safe_filename(run.run_id)}.png",
            f"Load generator lag over time — {run.run_id}",
            lag.caption(run),
            figure_png(lag.lag_figure(run)),
        )
        for run in runs
        if not lag.lag_frame(run).empty
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
    opened = [(run, open_model.load(run.folder)) for run in runs if open_model.is_open_run(run.folder)]
    if not opened:
        return []
    out = []
    for run, om in opened:
        k = open_knee.open_model_knee(om, knee_p99_ms)
        out.append(
            Chart(
                f"open_model_{safe_filename(run.run_id)}.png",
                f"Open model — {run.run_id}",
                " · ".join([*open_model.summary_lines(om), *([k.sentence()] if k else [])]),
                figure_png(open_model.figure(om, run.run_id)),
                None if k is None else k.steps,
            )
        )
    table = open_knee.sweep_table([(run.user_class, run.workers, om) for run, om in opened])
    if table is not None:
        out.append(
            Chart(
                "open_model_sustained.png",
                "Highest arrival rate sustained vs workers",
                "Per worker count: the highest step of the arrival-rate schedule that every repeat "
                f"sustained (achieved within {DROP_LIMIT:.0%} of offered, < {DROP_LIMIT:.0%} dropped, each "
                f"step after its first {open_knee.SETTLE_S} s), bars up to the best repeat's. 0: not even "
                "the first step.",
                figure_png(open_knee.sweep_figure(table)),
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
