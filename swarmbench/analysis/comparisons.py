"""Comparisons inside a sweep, with `swarmbench compare`'s statistics (swarmbench/compare/stats.py):
each worker count against the smallest (1 worker), each client (user class) against the reference
client, each store strategy against the target's default, at the same settings otherwise.

"Did 4 workers help?" gets a verdict with its uncertainty, e.g. "w4 vs w1: throughput +39 % [+31,
+47], faster", not a single ratio. Method: compare.stats.METHOD over the Aggregated series; the
repeats of a point are the bootstrap's repeats (a point of one run has the default run-to-run noise
folded in, compare/noise.py); verdict with compare's ±5 % band. Runs without histogram files
(older folders) use Locust's per-second history (compare/sides.py) and are labelled "rounded".
Pure: no files written; the report shows the lines first (report.py's summary box).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from swarmbench.analysis.runs import Run, has_series
from swarmbench.analysis.scaling import ScalingGroup
from swarmbench.compare import sides as compare_grid
from swarmbench.compare import stats
from swarmbench.compare.noise import DEFAULT_NOISE
from swarmbench.compare.sides import RunData, read_run
from swarmbench.core.checks import (
    AGGREGATED,
    IMPROVED,
    INCONCLUSIVE,
    MIN_EFFECT,
    NO_CHANGE,
    REGRESSED,
    verdict,
)

METRICS = ("throughput", "p95")
"""What a sweep's question is about: how much it served, and how slow its slow requests were."""

DEFAULT_STORE = "rwmutex"
"""The target's store when ALBUMS_STORE is unset (target/main.go): the strategies' reference."""

REFERENCE_CLIENT = "AlbumsHttpUser"
"""Locust's default client (HttpUser, python-requests): the question is whether FastHttpUser helps."""

CONFIDENCE, SEED = 0.95, 0
"""swarmbench compare's defaults, so a line here equals `compare --metrics throughput,p95`'s."""

WORDS = {IMPROVED: "faster", REGRESSED: "slower", NO_CHANGE: "no change", INCONCLUSIVE: "inconclusive"}
"""A verdict in a sweep's words: better throughput or a lower p95 is faster."""


@dataclass(frozen=True)
class Result:
    metric: str
    d: stats.Difference
    verdict: str

    def text(self) -> str:
        """ "+39 % [+31, +47], faster": the relative change, its CI, the verdict in words."""
        b = self.d.baseline
        if not b or math.isnan(self.d.low):
            return f"no estimate, {WORDS[self.verdict]}"
        return (
            f"{pct(self.d.diff / b)} % [{pct(self.d.low / b)}, {pct(self.d.high / b)}], {WORDS[self.verdict]}"
        )


def pct(ratio: float) -> str:
    """A relative change in percent, signed: whole percents, one decimal under 10 %."""
    value = ratio * 100
    return f"{value:+.0f}" if abs(value) >= 10 else f"{value:+.1f}"


@dataclass
class Comparison:
    kind: str  # "workers", "client" or "store"
    label: str  # "w4 vs w1"
    context: str  # the settings both sides share (the group's label)
    baseline: list[str]  # run ids
    candidate: list[str]
    results: dict[str, Result]
    rounded: bool

    def line(self) -> str:
        """ "w4 vs w1: throughput +39 % [+31, +47], faster; p95 -3.0 % [-8.1, +2.2], no change"."""
        parts = "; ".join(f"{m} {r.text()}" for m, r in self.results.items())
        return f"{self.label}: {parts}" + (" (rounded)" if self.rounded else "")

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "label": self.label,
            "context": self.context,
            "baseline_runs": self.baseline,
            "candidate_runs": self.candidate,
            "latency": "rounded" if self.rounded else "exact",
            "results": {
                m: {
                    "baseline": r.d.baseline,
                    "candidate": r.d.candidate,
                    "diff": r.d.diff,
                    "ci": [r.d.low, r.d.high],
                    "verdict": r.verdict,
                    "text": r.text(),
                }
                for m, r in self.results.items()
            },
        }


class _Reader:
    """Each run folder read once into the comparison's form (its windows' histograms)."""

    def __init__(self) -> None:
        self.cache: dict[str, RunData] = {}

    def __call__(self, run: Run) -> RunData:
        key = str(run.folder)
        if key not in self.cache:
            self.cache[key] = read_run(run.folder, run.meta)
        return self.cache[key]


def compare_runs(base: Sequence[Run], cand: Sequence[Run], read: _Reader) -> tuple[dict[str, Result], bool]:
    """The Aggregated METRICS of two sets of runs, as `swarmbench compare` does it: each set in
    folder-name order (a folder of repeats' order), the default run-to-run noise, seed 0."""
    b = [read(r) for r in sorted(base, key=lambda r: r.folder.name)]
    c = [read(r) for r in sorted(cand, key=lambda r: r.folder.name)]
    # Every request name both sides have, as `swarmbench compare` judges them: the table's rows share
    # its confidence (stats.compare), so Aggregated's interval is the one compare prints.
    names = compare_grid.names(b, c, None).common
    grid, side_b, side_c = compare_grid.build(b, c, names)
    side_b.noise = side_c.noise = dict(DEFAULT_NOISE)
    found = stats.compare(side_b, side_c, grid, list(METRICS), CONFIDENCE, SEED, min_effect=MIN_EFFECT)
    results = {
        m: Result(m, found[m][AGGREGATED], verdict(m, found[m][AGGREGATED], MIN_EFFECT)) for m in METRICS
    }
    return results, not all(r.exact for r in b + c)


def _runs_at(group: ScalingGroup, workers: int) -> list[Run]:
    ids = next((p.run_ids for p in group.points if p.workers == workers), [])
    return [r for r in group.runs if r.run_id in ids]


def _make(
    kind: str, label: str, context: str, base: list[Run], cand: list[Run], read: _Reader
) -> list[Comparison]:
    """The comparison, or none when a run of either side has no per-second numbers to bootstrap
    over (runs.has_series; the report says so once, runs.load_runs)."""
    if not all(has_series(r) for r in base + cand):
        return []
    results, rounded = compare_runs(base, cand, read)
    return [
        Comparison(kind, label, context, [r.run_id for r in base], [r.run_id for r in cand], results, rounded)
    ]


def worker_comparisons(groups: Sequence[ScalingGroup], read: _Reader) -> list[Comparison]:
    """Each worker count of a group against its smallest (1 worker in a sweep)."""
    out = []
    for g in groups:
        if len(g.points) < 2:
            continue
        lo = g.points[0].workers
        for p in g.points[1:]:
            label = f"w{p.workers} vs w{lo}"
            out += _make("workers", label, g.key.label(), _runs_at(g, lo), _runs_at(g, p.workers), read)
    return out


def _reference_first(value: str, reference: str) -> tuple[int, str]:
    return (0 if value == reference else 1, value)


def across(groups: Sequence[ScalingGroup], kind: str, read: _Reader) -> list[Comparison]:
    """Groups that differ only in their client (kind "client") or store ("store"): each against the
    reference one, at every worker count both measured."""
    field, reference = ("user_classes", REFERENCE_CLIENT) if kind == "client" else ("store", DEFAULT_STORE)

    def value(g: ScalingGroup) -> str:
        v = getattr(g.key, field)
        return "+".join(v) if isinstance(v, tuple) else (v or DEFAULT_STORE)

    families: dict[object, list[ScalingGroup]] = {}
    for g in groups:
        families.setdefault(dataclasses.replace(g.key, **{field: None}), []).append(g)
    out = []
    for family in families.values():
        if len(family) < 2:
            continue
        family = sorted(family, key=lambda g: _reference_first(value(g), reference))
        ref = family[0]
        for other in family[1:]:
            for workers in sorted({p.workers for p in ref.points} & {p.workers for p in other.points}):
                label = f"{value(other)} vs {value(ref)} at w{workers}"
                context = dataclasses.replace(ref.key, **{field: () if kind == "client" else None}).label()
                base, cand = _runs_at(ref, workers), _runs_at(other, workers)
                out += _make(kind, label, context.lstrip("?, "), base, cand, read)
    return out


def sweep_comparisons(groups: Sequence[ScalingGroup]) -> list[Comparison]:
    """Every comparison a sweep's report opens with: workers, then clients, then stores."""
    read = _Reader()
    return worker_comparisons(groups, read) + across(groups, "client", read) + across(groups, "store", read)


def comparisons_json(found: Sequence[Comparison]) -> dict:
    return {
        "schema_version": 1,
        "method": stats.METHOD + "; Aggregated; default run-to-run noise for one-run points",
        "confidence": CONFIDENCE,
        "min_effect": MIN_EFFECT,
        "seed": SEED,
        "comparisons": [c.to_dict() for c in found],
    }
