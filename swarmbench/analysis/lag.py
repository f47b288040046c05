"""The generator self-check in the report: each load generator's event-loop lag over time, and the
runs it marks "latency inflated by the load generator". Pure: frames, Figures and HTML out.

The facts are run.json's `generator_lag` (plugin/looplag.py; the bound and its reasons in
core/lag.py): per worker, the p50/p99/max lag of each stats-report interval, the whole run's
figures, and the verdict against the run's median response time.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis.load import Run
from swarmbench.core import lag
from swarmbench.core.sections import GeneratorLag

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
    verdict = lag.INFLATED if g is not None and g.inflated else "generators kept up"
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
        f"{lag.LAG_FLOOR_MS:g} ms and {lag.LAG_SHARE_OF_P50:.0%} of the median response time); a "
        f"whole-run p99 above it marks the run '{lag.INFLATED}'."
    )


def flagged_html(runs: Sequence[Run]) -> list[str]:
    """A warning naming every run whose generators inflated its latency (none: nothing)."""
    items = []
    for run in runs:
        g = section(run)
        if g is not None and g.inflated and g.worst_p99_ms is not None:
            why = lag.reason(g.worst_p99_ms, g.median_response_ms)
            items.append(f"<li><strong>{escape(run.run_id)}</strong>: {escape(why)}</li>")
    if not items:
        return []
    return [f'<div class="warn"><strong>{escape(lag.INFLATED.capitalize())}</strong><ul>{"".join(items)}</ul>'
            "Its latency figures measure the generator as much as the server: rerun with more workers "
            "or fewer users per worker.</div>"]  # fmt: skip
