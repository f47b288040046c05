"""Run health for the analysis: each run's events and its connected load generators over time
(the report's "Run health" section). Pure: frames and Figures out, nothing written.

The facts are run.json's (written by plugin/health.py, schema in core/manifest.py): `status`,
`events`, `workers_timeline`. A run.json older than `status` (or no run.json at all) reads as
"unknown": the harness that wrote it did not record interruptions or lost workers, so nothing says
the run was complete -- but nothing says it was not either, so such runs stay in scaling fits, as
they always did. Only a recorded degraded/interrupted/failed status leaves a run out
(scaling.partial_runs).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from html import escape

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis import columns as C
from swarmbench.analysis.load import Run
from swarmbench.analysis.plots_time import figure
from swarmbench.analysis.summary import run_status

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
"""File-name prefix of the workers-over-time charts (charts.py makes them from workers_figure):
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
