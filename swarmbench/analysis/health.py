"""What happened during a run, for the report: its events, its connected load generators over time, and
each generator's event-loop lag.

Run health for the analysis: each run's events and its connected load generators over time
(the report's "Run health" section). Pure: frames and Figures out, nothing written.

The facts are run.json's (written by core/health.py, schema in core/manifest.py): `status`,
`events`, `workers_timeline`. A run.json older than `status` (or no run.json at all) reads as
"unknown": the harness that wrote it did not record interruptions or lost workers, so nothing says
the run was complete -- but nothing says it was not either, so such runs stay in scaling fits, as
they always did. Only a recorded degraded/interrupted/failed status leaves a run out
(scaling.partial_runs).

The generator self-check in the report: each load generator's event-loop lag over time, and the
runs it marks "latency inflated by the load generator". Pure: frames, Figures and HTML out.

The facts are run.json's `generator_lag` (plugin/generator.py; the bound and its reasons in
core/bottleneck.py): per worker, the p50/p99/max lag of each stats-report interval, the whole run's
figures, and the verdict against the run's median response time."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from html import escape

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis import columns as C
from swarmbench.analysis.plots import figure
from swarmbench.analysis.runs import Run
from swarmbench.analysis.summary import run_status
from swarmbench.core import bottleneck
from swarmbench.core.manifest import GeneratorLag

# --- events and workers over time -----------------------------------------------------------------

FIGSIZE = (9.0, 3.2)
"""The workers chart: as wide as the report's other charts, low (a step line needs little height)."""

EVENT_COLUMNS = [C.RUN_ID, C.TIME_S, "at", "kind", "detail"]


def events_table(runs: Sequence[Run]) -> pd.DataFrame:
    """Every run's events in order: seconds since its test started, UTC time, kind, detail."""
    rows = [[run.run_id, e.t_s, e.at, e.kind, e.detail] for run in runs for e in run.meta.events or []]
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def workers_timeline(run: Run) -> pd.DataFrame | None:
    """[t_s, workers]: the connected load generators from each change on, held to the run's end
    (the timeline records the first sample and then only changes). None without a timeline."""
    points = [(p.t_s, p.connected) for p in run.meta.workers_timeline or [] if p.t_s is not None]
    if not points:
        return None
    frame = pd.DataFrame(points, columns=["t_s", C.WORKERS]).astype(float)
    end = run.meta.duration_s
    if end is not None and end > frame["t_s"].iloc[-1]:
        frame = pd.concat([frame, pd.DataFrame({"t_s": [end], C.WORKERS: [frame[C.WORKERS].iloc[-1]]})])
    return frame.reset_index(drop=True)


def workers_changed(run: Run) -> bool:
    """The connected-generator count changed during the run (then the report charts it)."""
    frame = workers_timeline(run)
    return frame is not None and frame[C.WORKERS].nunique() > 1


def workers_figure(run: Run) -> Figure:
    """Connected load generators over the run, a step line; the expected count dashed."""
    fig = figure(FIGSIZE)
    ax = fig.add_subplot()
    frame = workers_timeline(run)
    if frame is not None:
        ax.step(frame["t_s"], frame[C.WORKERS], where="post", color="#1f77b4", label="connected")
    expected = run.meta.workers_expected
    if expected:
        ax.axhline(expected, color="#7f7f7f", linestyle="--", label=f"expected ({expected})")
    ax.set_xlabel("time since the test started (s)")
    ax.set_ylabel("load generators (workers)")
    ax.set_ylim(bottom=0, top=max(expected or 0, frame[C.WORKERS].max() if frame is not None else 1) + 0.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(f"{run.label}: status {run_status(run)}")
    ax.legend(loc="lower left")
    return fig


def status_table(runs: Sequence[Run], fitted: Sequence[Run]) -> pd.DataFrame:
    """One row per run: its status, generators expected/connected, exit code, how many events, and
    whether the scaling fits used it (FITTED: the runs in any scaling group)."""
    used = {id(r) for r in fitted}
    return pd.DataFrame(
        [
            {
                C.RUN_ID: run.run_id,
                C.STATUS: run_status(run),
                "workers expected": run.meta.workers_expected,
                "workers connected": run.meta.workers_connected,
                "exit code": run.meta.exit_code,
                "events": len(run.meta.events or []),
                "in scaling fits": "yes" if id(run) in used else "no",
            }
            for run in runs
        ]
    )


# --- the report's "Run health" section ------------------------------------------------------------

CHART_PREFIX = "workers_"
"""File-name prefix of the workers-over-time charts (report.py makes them from workers_figure):
shown in "Run health", not among the charts."""


def is_health_chart(filename: str) -> bool:
    return filename.startswith(CHART_PREFIX)


def section_html(runs: Sequence[Run], groups: Sequence, shown: Sequence, table: Callable) -> list[str]:
    """Run health: each run's status, the runs the fits left out, the events, and the workers
    charts among SHOWN (the report's charts); TABLE renders a frame as the report's HTML table."""
    fitted = [r for g in groups for r in g.runs]
    out = ["<h2>Run health</h2>", table(status_table(runs, fitted))]
    left_out = [r.run_id for r in runs if r.meta.partial and r not in fitted]
    if left_out:
        out.append(
            '<p class="warn">Left out of the scaling fits (status degraded, interrupted or failed): '
            f"{escape(', '.join(left_out))}. <code>--include-partial</code> keeps them.</p>"
        )
    events = events_table(runs)
    if not events.empty:
        out.append("<h3>Events</h3>" + table(events.head(MAX_EVENTS)))
        if len(events) > MAX_EVENTS:
            out.append(f'<p class="muted">… and {len(events) - MAX_EVENTS} more events (run.json).</p>')
    for chart in (c for c in shown if is_health_chart(c.filename)):
        data = base64.b64encode(chart.png).decode("ascii")
        out.append(
            f'<figure><h3>{escape(chart.title)}</h3><img alt="{escape(chart.title)}" '
            f'src="data:image/png;base64,{data}"><figcaption class="muted">{escape(chart.caption)}'
            "</figcaption></figure>"
        )
    out.append(
        '<p class="muted">status (run.json): complete; interrupted (a signal stopped it early); degraded '
        "(a load generator went missing or quit, or fewer than expected were connected for part of the "
        'run); failed (almost nothing was served); "unknown": a run.json older than the status field.</p>'
    )
    return out


MAX_EVENTS = 200
"""Events shown in the report; a run that flapped for an hour has thousands (all are in run.json)."""


# --- the generator's self-check: event-loop lag ---------------------------------------------------

LAG_FIGSIZE = (9.0, 3.6)
COLUMNS = ["worker", "t_s", "p50_ms", "p99_ms", "max_ms"]


def section(run: Run) -> GeneratorLag | None:
    g = run.meta.generator_lag
    return g if g is not None and g.per_worker else None


def lag_frame(run: Run) -> pd.DataFrame:
    """One row per worker and report interval: seconds since the test started, p50/p99/max lag (ms)."""
    g = section(run)
    rows = [[w.id, *row[:4]] for w in (g.per_worker if g else []) for row in w.series if len(row) >= 4]
    return pd.DataFrame(rows, columns=COLUMNS)


def lag_figure(run: Run) -> Figure:
    """p99 lag per worker over the run (its max dotted), the bound dashed."""
    fig = Figure(figsize=LAG_FIGSIZE, dpi=100, layout="constrained")
    ax = fig.add_subplot()
    frame, g = lag_frame(run), section(run)
    for i, (worker, rows) in enumerate(frame.groupby("worker", sort=True)):
        color = f"C{i % 10}"
        short = str(worker)[:12]
        ax.plot(rows["t_s"], rows["p99_ms"], color=color, marker=".", lw=1.5, label=f"{short} p99")
        ax.plot(rows["t_s"], rows["max_ms"], color=color, lw=0.8, linestyle=":", label=f"{short} max")
    if g is not None and g.bound_ms is not None:
        ax.axhline(g.bound_ms, color="#d62728", linestyle="--", label=f"bound {g.bound_ms:g} ms")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("time since the test started (s)")
    ax.set_ylabel("timer wake-up lag (ms)")
    verdict = bottleneck.INFLATED if g is not None and g.inflated else "generators kept up"
    ax.set_title(f"{run.label}: event-loop lag per load generator — {verdict}", fontsize=10)
    ax.legend(loc="upper right", fontsize=7, ncols=2)
    return fig


def caption(run: Run) -> str:
    """What the lag chart shows, with this run's probe period and bound."""
    g = section(run)
    tick, bound = (g.tick_ms, g.bound_ms) if g else ("?", None)
    return (
        f"How late each load generator's event loop woke a timer due every {tick:g} ms, per "
        "stats-report interval (p99 solid, max dotted). A late loop reads responses late, and that "
        f"wait counts as response time. Dashed: the bound ({bound} ms = the larger of "
        f"{bottleneck.LAG_FLOOR_MS:g} ms and {bottleneck.LAG_SHARE_OF_P50:.0%} of the median response "
        "time); a "
        f"whole-run p99 above it marks the run '{bottleneck.INFLATED}'."
    )


def flagged_html(runs: Sequence[Run]) -> list[str]:
    """A warning naming every run whose generators inflated its latency (none: nothing)."""
    items = []
    for run in runs:
        g = section(run)
        if g is not None and g.inflated and g.worst_p99_ms is not None:
            why = bottleneck.reason(g.worst_p99_ms, g.median_response_ms)
            items.append(f"<li><strong>{escape(run.run_id)}</strong>: {escape(why)}</li>")
    if not items:
        return []
    title = escape(bottleneck.INFLATED.capitalize())
    return [f'<div class="warn"><strong>{title}</strong><ul>{"".join(items)}</ul>'
            "Its latency figures measure the generator as much as the server: rerun with more workers "
            "or fewer users per worker.</div>"]  # fmt: skip
