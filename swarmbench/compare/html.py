"""compare.html: the table, overlaid latency distributions, per-window series of both sides, and
every difference with its CI. Charts are inline SVG (svg.py: no matplotlib, one self-contained file)."""

from __future__ import annotations

import html

import numpy as np

from swarmbench.compare import svg
from swarmbench.compare.report import Outcome, relative, shown, table
from swarmbench.compare.stats import PERCENTILES, Grid, Side, percentiles_of
from swarmbench.core.checks import AGGREGATED

COLOURS = {"baseline": "#4c72b0", "candidate": "#dd8452"}


def distribution_chart(grid: Grid, sides: dict[str, Side]) -> str:
    """Aggregated latency CDF of each side (all its windows merged), log-scaled latency."""
    cols = grid.columns[AGGREGATED]
    found = []
    for label, side in sides.items():
        counts = side.merged.hist[:, cols].sum(axis=0)
        if counts.sum():
            keep = counts > 0  # only buckets with requests: the CDF's steps
            cdf = np.cumsum(counts)[keep] / counts.sum() * 100
            found.append(svg.Line(grid.values[cols][keep], cdf, COLOURS[label], label, step=True))
    return svg.lines(
        found, "Latency distribution, Aggregated", "latency (ms, log)", "requests at or under (%)", xlog=True
    )


def windows_chart(grid: Grid, sides: dict[str, Side]) -> str:
    """Per-window p50 and p95 of every run of both sides (Aggregated), over the run's seconds."""
    cols = grid.columns[AGGREGATED]
    found = []
    for label, side in sides.items():
        for i, run in enumerate(side.runs):
            p50, p95 = percentiles_of(run.hist[:, cols], grid.values[cols], [50.0, 95.0])
            x = np.arange(run.windows, dtype=float)
            found.append(svg.Line(x, p50, COLOURS[label], f"{label} p50" if i == 0 else None))
            found.append(svg.Line(x, p95, COLOURS[label], f"{label} p95" if i == 0 else None, dashed=True))
    return svg.lines(found, "Per-window latency, every run", "second of the run", "latency (ms)")


def differences_chart(outcome: Outcome) -> str:
    """Every difference as a relative change with its CI, and the +-min-effect band."""
    rows = [
        (
            f"{r.name} {r.metric}",
            r.d.diff / r.d.baseline * 100,
            r.d.low / r.d.baseline * 100,
            r.d.high / r.d.baseline * 100,
        )
        for r in outcome.rows
        if r.d.baseline and not np.isnan(r.d.low)
    ]
    band = outcome.options["min_effect"] * 100
    return svg.intervals(
        rows,
        band,
        f"Differences with their CI (band +-{band:g} %)",
        "candidate vs baseline (% of the baseline)",
    )


def page(outcome: Outcome, grid: Grid, baseline: Side, candidate: Side) -> str:
    sides = {"baseline": baseline, "candidate": candidate}
    charts = [
        ("Latency distributions", distribution_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Per-window series", windows_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Differences", differences_chart(outcome)),
    ]
    images = "\n".join(f"<h2>{title}</h2><figure>{chart}</figure>" for title, chart in charts if chart)
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
