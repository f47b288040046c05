"""The box a sweep's report opens with: its answers before its details.

Each comparison's verdict with its CI (comparisons.py), what limited each group (the bottleneck at
its largest worker count), and every run left out (partial runs, sweep points that did not finish).
The details (warnings, settings, run health, events, fits, charts) follow it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from swarmbench.analysis.bottleneck import group_bottleneck
from swarmbench.analysis.comparisons import Comparison
from swarmbench.analysis.load import Run
from swarmbench.analysis.scaling import ScalingGroup, partial_runs
from swarmbench.core.sweepstate import SweepState

CSS = (
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
