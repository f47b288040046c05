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

from swarmbench.core import lag

from .load import Run
from .plots import figure_png

FIGSIZE = (9.0, 3.6)
COLUMNS = ["worker", "t_s", "p50_ms", "p99_ms", "max_ms"]


def section(run: Run) -> dict | None:
    g = run.meta.generator_lag
    return g if isinstance(g, dict) and g.get("per_worker") else None


def lag_frame(run: Run) -> pd.DataFrame:
    """One row per worker and report interval: seconds since the test started, p50/p99/max lag (ms)."""
    g = section(run) or {}
    rows = [
        [w.get("id"), *row[:4]]
        for w in g.get("per_worker") or []
        for row in w.get("series") or []
        if isinstance(row, list) and len(row) >= 4
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def lag_figure(run: Run) -> Figure:
    """p99 lag per worker over the run (its max dotted), the bound dashed."""
    fig = Figure(figsize=FIGSIZE, dpi=100, layout="constrained")
    ax = fig.add_subplot()
    frame, g = lag_frame(run), section(run) or {}
    for i, (worker, rows) in enumerate(frame.groupby("worker", sort=True)):
        color = f"C{i % 10}"
        short = str(worker)[:12]
        ax.plot(rows["t_s"], rows["p99_ms"], color=color, marker=".", lw=1.5, label=f"{short} p99")
        ax.plot(rows["t_s"], rows["max_ms"], color=color, lw=0.8, linestyle=":", label=f"{short} max")
    if g.get("bound_ms") is not None:
        ax.axhline(g["bound_ms"], color="#d62728", linestyle="--", label=f"bound {g['bound_ms']:g} ms")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("time since the test started (s)")
    ax.set_ylabel("timer wake-up lag (ms)")
    verdict = lag.INFLATED if g.get("inflated") else "generators kept up"
    ax.set_title(f"{run.label}: event-loop lag per load generator — {verdict}", fontsize=10)
    ax.legend(loc="upper right", fontsize=7, ncols=2)
    return fig


def charts(runs: Sequence[Run]) -> list[tuple[str, str, str, bytes]]:
    """(file name, title, caption, PNG) of a lag-over-time chart for each run that measured it."""
    out = []
    for run in runs:
        if lag_frame(run).empty:
            continue
        g = section(run) or {}
        tick, bound = g.get("tick_ms", "?"), g.get("bound_ms")
        caption = (
            f"How late each load generator's event loop woke a timer due every {tick} ms, per "
            "stats-report interval (p99 solid, max dotted). A late loop reads responses late, and that "
            f"wait counts as response time. Dashed: the bound ({bound} ms = the larger of "
            f"{lag.LAG_FLOOR_MS:g} ms and {lag.LAG_SHARE_OF_P50:.0%} of the median response time); a "
            f"whole-run p99 above it marks the run '{lag.INFLATED}'."
        )
        title = f"Load generator lag over time — {run.run_id}"
        out.append((f"generator_lag_{_safe(run.run_id)}.png", title, caption, figure_png(lag_figure(run))))
    return out


def flagged_html(runs: Sequence[Run]) -> list[str]:
    """A warning naming every run whose generators inflated its latency (none: nothing)."""
    items = []
    for run in runs:
        g = section(run) or {}
        if g.get("inflated"):
            why = lag.reason(g["worst_p99_ms"], g.get("median_response_ms"))
            items.append(f"<li><strong>{escape(run.run_id)}</strong>: {escape(why)}</li>")
    if not items:
        return []
    return [f'<div class="warn"><strong>{escape(lag.INFLATED.capitalize())}</strong><ul>{"".join(items)}</ul>'
            "Its latency figures measure the generator as much as the server: rerun with more workers "
            "or fewer users per worker.</div>"]  # fmt: skip


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._+-" else "-" for ch in name)
