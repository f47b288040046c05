"""Run-to-run noise: what identical runs differ by beyond what the windows of one run show.

The block bootstrap sees the variation WITHIN a run (window to window). Identical runs also differ
as a whole (a neighbour's load, CPU frequency, where the allocator put things): one run per side
cannot show that, so a side of one run has its replicates widened by the excess run-to-run noise:
from an A/A calibration stored with the baseline (`compare --calibrate`), else DEFAULT_NOISE. With
repeats the bootstrap resamples the runs themselves (stats.small_sample_correction), and a
calibration measured on other runs lends their spread its degrees of freedom (stats.pooled).

Calibration (method in one line): CALIBRATION_METHOD.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from swarmbench.compare.stats import Grid, Side, bootstrap, point
from swarmbench.core.atomic import write_atomic
from swarmbench.core.checks import AGGREGATED, COMPARE_METRICS
from swarmbench.core.exits import InputError, read_text

NOISE_JSON = "compare-noise.json"
"""The calibration file: in a baseline folder of repeats, or next to a single baseline run."""

CALIBRATION_METHOD = (
    "excess run-to-run noise = sqrt(max(0, relative variance between identical runs - mean relative "
    "variance of each run's block bootstrap)), Aggregated, per metric"
)

DEFAULT_NOISE = {"throughput": 0.03, "error_rate": 0.0, "p50": 0.025, "p90": 0.10, "p95": 0.16, "p99": 0.35}
"""Relative excess run-to-run standard deviation per metric, measured here: 8 identical 15 s local
runs (AlbumsHttpUser, 8 users, constant 0.02 s wait, ALBUMS_DELAY=10ms) on this project's shared
2-core machine with other engineers' work running. Between-run relative SD was 3.2 % throughput,
2.5 % p50, 10.6 % p90, 17 % p95, 39 % p99; each run's own bootstrap explained 1-16 % of it. A busy
shared machine is the worst case, hence a conservative default: calibrate yours (docs/compare.md)."""

CALIBRATION_BOOTSTRAP = 500
"""Replicates per run for the within-run variance: a variance, not an interval's end, so fewer do."""


def find(baseline: Path) -> Path | None:
    """The calibration stored with BASELINE: inside it (a folder of repeats) or beside it."""
    for candidate in (baseline / NOISE_JSON, baseline.parent / NOISE_JSON):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Calibration:
    """A calibration file: the noise per metric, and the identical runs it was measured on (their
    folder names, and when each started: what tells them apart from a compared side's runs)."""

    noise: dict[str, float]
    runs: tuple[str, ...] = ()
    started: tuple[str, ...] = ()

    def pool_runs(self, side: list) -> int:
        """How many runs of its own the calibration lends SIDE (RunData of one side) to pool with:
        all of them when none of SIDE's runs is among them, else 0 (the same runs twice would
        count their spread twice). Runs are known by their start time; a file without start times
        (written before them) by folder name, which may refuse a different run of the same name."""
        if len(self.runs) < 2:
            return 0
        if self.started:
            mine = {str(r.manifest.started_at) for r in side}
            return 0 if mine & set(self.started) else len(self.runs)
        names = {r.path.name for r in side} | {f"{r.path.parent.name}/{r.path.name}" for r in side}
        return 0 if names & set(self.runs) else len(self.runs)


def read(path: Path) -> Calibration:
    """A calibration file; InputError naming it when malformed."""
    try:
        data = json.loads(read_text(path))
        noise = {m: float(v) for m, v in data["noise"].items() if m in COMPARE_METRICS}
        runs = tuple(str(r) for r in data.get("runs") or ())
        started = tuple(str(t) for t in data.get("started") or ())
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        raise InputError(path, 'expected {"noise": {METRIC: relative SD, ...}}') from None
    if any(v < 0 or math.isnan(v) for v in noise.values()):
        raise InputError(path, "a noise value is negative or NaN")
    return Calibration({**DEFAULT_NOISE, **noise}, runs, started)


def calibrate(side: Side, grid: Grid, seed: int = 0) -> dict[str, float]:
    """The excess run-to-run relative SD per metric from a side of identical runs (CALIBRATION_METHOD)."""
    if len(side.runs) < 2:
        raise ValueError("calibration needs at least two identical runs")
    rng = np.random.default_rng(seed)
    metrics = list(COMPARE_METRICS)
    values: dict[str, list[float]] = {m: [] for m in metrics}
    within: dict[str, list[float]] = {m: [] for m in metrics}
    for run in side.runs:
        one = Side([run])
        found = point(one, grid, metrics)
        replicates = bootstrap(one, grid, metrics, CALIBRATION_BOOTSTRAP, rng)
        for m in metrics:
            value = found[m][AGGREGATED]
            values[m].append(value)
            spread = float(np.nanvar(replicates[m][AGGREGATED]))
            within[m].append(spread / value**2 if value else 0.0)
    out = {}
    for m in metrics:
        v = np.array(values[m])
        mean = float(v.mean())
        total = float(v.var(ddof=1)) / mean**2 if mean else 0.0
        out[m] = round(math.sqrt(max(0.0, total - float(np.mean(within[m])))), 4)
    return out


def to_json(noise: dict[str, float], runs: list[str], started: list[str]) -> dict:
    return {"method": CALIBRATION_METHOD, "runs": runs, "started": started, "noise": noise}


def write(folder: Path, noise: dict[str, float], runs: list[str], started: list[str]) -> Path:
    """FOLDER/compare-noise.json; one already there is never written over (InputError naming it),
    unless it already says the same of the same runs (calibrate is seeded: the same runs give the
    same noise; a file from before start times were kept counts as the same)."""
    target = folder / NOISE_JSON
    text = json.dumps(to_json(noise, runs, started), indent=2) + "\n"
    if target.exists():
        try:
            there = json.loads(read_text(target))
        except (InputError, json.JSONDecodeError):
            there = None
        if isinstance(there, dict) and (there.get("noise"), there.get("runs")) == (noise, runs):
            return target
        raise InputError(
            target, "exists with another calibration (nothing is written over); remove it to recalibrate"
        )
    write_atomic(target, text)
    return target
