"""compare.html: the table, overlaid latency distributions, per-window series of both sides, and
every difference with its CI. Charts are matplotlib PNGs inlined (one self-contained file)."""

from __future__ import annotations

import base64
import html
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from swarmbench.core.checks import AGGREGATED  # noqa: E402

from .report import Outcome, relative, shown, table  # noqa: E402
from .stats import PERCENTILES, Grid, Side, percentiles_of  # noqa: E402

COLOURS = {"baseline": "#4c72b0", "candidate": "#dd8452"}


def png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def distribution_chart(grid: Grid, sides: dict[str, Side]) -> Figure:
    """Aggregated latency CDF of each side (all its windows merged), log-scaled latency."""
    fig, ax = plt.subplots(figsize=(8, 4))
    cols = grid.columns[AGGREGATED]
    for label, side in sides.items():
        counts = side.merged.hist[:, cols].sum(axis=0)
        if counts.sum():
            ax.step(
                grid.values[cols],
                np.cumsum(counts) / counts.sum() * 100,
                where="post",
                label=label,
                color=COLOURS[label],
            )
    ax.set_xscale("log")
    ax.set(
        xlabel="latency (ms, log)",
        ylabel="requests at or under (%)",
        title="Latency distribution, Aggregated",
    )
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def windows_chart(grid: Grid, sides: dict[str, Side]) -> Figure:
    """Per-window p50 and p95 of every run of both sides (Aggregated), over the run's seconds."""
    fig, ax = plt.subplots(figsize=(8, 4))
    cols = grid.columns[AGGREGATED]
    for label, side in sides.items():
        for i, run in enumerate(side.runs):
            p50, p95 = percentiles_of(run.hist[:, cols], grid.values[cols], [50.0, 95.0])
            x = np.arange(run.windows)
            ax.plot(x, p50, color=COLOURS[label], alpha=0.8, label=f"{label} p50" if i == 0 else None)
            ax.plot(
                x, p95, color=COLOURS[label], alpha=0.5, ls="--", label=f"{label} p95" if i == 0 else None
            )
    ax.set(xlabel="second of the run", ylabel="latency (ms)", title="Per-window latency, every run")
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def differences_chart(outcome: Outcome) -> Figure:
    """Every difference as a relative change with its CI, and the +-min-effect band."""
    rows = [r for r in outcome.rows if r.d.baseline and not np.isnan(r.d.low)]
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.3 * len(rows) + 1)))
    y = np.arange(len(rows))
    rel = np.array([r.d.diff / r.d.baseline for r in rows]) * 100
    low = np.array([r.d.low / r.d.baseline for r in rows]) * 100
    high = np.array([r.d.high / r.d.baseline for r in rows]) * 100
    ax.errorbar(rel, y, xerr=[rel - low, high - rel], fmt="o", color="#333333", capsize=3)
    band = outcome.options["min_effect"] * 100
    ax.axvspan(-band, band, color="#55a868", alpha=0.15, label=f"+-{band:g} % band")
    ax.axvline(0, color="#999999", lw=0.8)
    ax.set_yticks(y, [f"{r.name} {r.metric}" for r in rows])
    ax.invert_yaxis()
    ax.set(xlabel="candidate vs baseline (% of the baseline)", title="Differences with their CI")
    ax.legend(loc="lower right")
    return fig


def page(outcome: Outcome, grid: Grid, baseline: Side, candidate: Side) -> str:
    sides = {"baseline": baseline, "candidate": candidate}
    charts = [
        ("Latency distributions", distribution_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Per-window series", windows_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Differences", differences_chart(outcome)),
    ]
    images = "\n".join(
        f"<h2>{title}</h2><img alt='{title}' src='data:image/png;base64,{png(fig)}'>"
        for title, fig in charts
        if fig
    )
    rows = "\n".join(
        f"<tr class='{r.verdict.replace(' ', '-')}'><td>{html.escape(r.name)}</td><td>{r.metric}</td>"
        f"<td>{shown(r.metric, r.d.baseline)}</td><td>{shown(r.metric, r.d.candidate)}</td>"
        f"<td>[{shown(r.metric, r.d.low)}, {shown(r.metric, r.d.high)}]</td><td>{relative(r.d)}</td>"
        f"<td>{r.verdict}</td></tr>"
        for r in outcome.rows
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>swarmbench compare</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:auto}} td,th{{padding:2px 8px;text-align:left}}
.regressed{{background:#f8d0d0}} .improved{{background:#d0f0d0}} .inconclusive{{background:#fff3c0}}</style>
</head><body><h1>Did it get slower?</h1><pre>{html.escape(table(outcome))}</pre>
<table><tr><th>name</th><th>metric</th><th>baseline</th><th>candidate</th><th>CI of the difference</th>
<th>change</th><th>verdict</th></tr>{rows}</table>
{images}
<p>Percentiles: {", ".join(f"p{p:g}" for p in PERCENTILES.values())} of the service time, merged exact
histograms; throughput in requests/s over the runs' full 1 s windows; error rate as %.</p>
</body></html>"""
