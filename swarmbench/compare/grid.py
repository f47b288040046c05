"""From the runs read (load.py) to the statistics' dense matrices (stats.py): one bucket grid per
request name shared by both sides, so a replicate's merged histogram is a weighted sum of rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swarmbench.compare.load import RunData
from swarmbench.compare.stats import Grid, Run, Side
from swarmbench.core.checks import AGGREGATED


@dataclass
class Names:
    """The request names compared (AGGREGATED last), and those found on one side only."""

    common: list[str]
    baseline_only: list[str]
    candidate_only: list[str]


def names(baseline: list[RunData], candidate: list[RunData], wanted: list[str] | None) -> Names:
    """Names every run of a side has, AGGREGATED last; WANTED (--names) narrows them."""
    base = set.union(*(set(r.series) for r in baseline))
    cand = set.union(*(set(r.series) for r in candidate))
    common = sorted((base & cand) - {AGGREGATED}) + [AGGREGATED]
    if wanted:
        common = [n for n in common if n in wanted]
    return Names(common, sorted(base - cand), sorted(cand - base))


def build(baseline: list[RunData], candidate: list[RunData], chosen: list[str]) -> tuple[Grid, Side, Side]:
    """The shared grid of CHOSEN names and both sides' dense matrices on it."""
    runs = baseline + candidate
    columns: dict[str, slice] = {}
    values = []
    start = 0
    for name in chosen:
        codes = [c for r in runs if name in r.series for c in r.series[name].codes.values()]
        grid = np.unique(np.concatenate(codes)) if codes else np.zeros(1, dtype=np.int64)
        columns[name] = slice(start, start + len(grid))
        values.append(grid)
        start += len(grid)
    grid = Grid(list(chosen), columns, np.concatenate(values) / 1000)
    codes_by_name = dict(zip(chosen, values, strict=True))

    def dense(run: RunData) -> Run:
        return to_matrix(run, grid, codes_by_name)

    return grid, Side([dense(r) for r in baseline]), Side([dense(r) for r in candidate])


def to_matrix(run: RunData, grid: Grid, codes_by_name: dict[str, np.ndarray]) -> Run:
    """RUN's series as (windows x columns) counts and (windows x names) requests and failures."""
    width = grid.columns[grid.names[-1]].stop
    flat_index, flat_counts = [], []
    requests = np.zeros((run.windows, len(grid.names)))
    failures = np.zeros((run.windows, len(grid.names)))
    for i, name in enumerate(grid.names):
        series = run.series.get(name)
        if series is None:
            continue
        offset = grid.columns[name].start
        for window, codes in series.codes.items():
            cols = offset + np.searchsorted(codes_by_name[name], codes)
            flat_index.append(window * width + cols)
            flat_counts.append(series.counts[window])
            requests[window, i] = series.requests[window]
            failures[window, i] = series.failures[window]
    hist = np.zeros(run.windows * width)
    if flat_index:
        hist = np.bincount(
            np.concatenate(flat_index), weights=np.concatenate(flat_counts), minlength=run.windows * width
        )
    return Run(hist.reshape(run.windows, width), requests, failures)
