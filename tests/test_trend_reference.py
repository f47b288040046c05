"""The change points' search (compare/trend.py: Prepared.best and grid_q, split, _detect, _merge)
against a slow reference kept here: the search as it was before its Q grids were shared and cached
(issue 32's speed goal), each segment's Q computed on its own full square grid, and the merge
re-testing every point after each removal. Both must give the same
points, p-values and means, bit for bit, on any series: steps or none, NaN, ties and constant
stretches (the scalar t-test's own cases), short series and windows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmbench.compare import trend
from swarmbench.compare.trend import ChangePoint, Prepared

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority


def reference_best(prep: Prepared, start: int, m: int) -> tuple[int, float]:
    """The best split (absolute tau) of x[start:start+m] and its Q, on the square (j = κ - τ, τ)
    grid of the segment: S(τ, κ) a strided view of the table, S(0, κ) a Hankel view of the
    segment's column padded with -inf past m, so that the cells with κ > m have Q = -inf."""
    row, item = prep.n + 1, prep.pairs.itemsize
    inner = np.ndarray((m - 1, m - 1), dtype=prep.pairs.dtype, buffer=prep.pairs,
                       offset=(row + start + 1) * item, strides=(row * item, item))  # fmt: skip
    u = np.full(2 * m - 1, -np.inf)
    u[: m + 1] = prep.table[: m + 1, start]
    hankel = np.ndarray((m - 1, m - 1), dtype=u.dtype, buffer=u, offset=2 * item, strides=(item, item))
    a, ab, ac = reference_coefficients(m)
    q = np.multiply(ac, inner)
    np.subtract(a * hankel, q, out=q)
    q -= ab * u[None, 1:m]
    best = int(q.argmax())
    return best % (m - 1) + 1 + start, float(q.reshape(-1)[best])


def reference_coefficients(m: int) -> tuple[np.ndarray, ...]:
    """Q's weights on the (j, τ) grid: a = 2/κ, a + b, a + c; in the cells with κ > m, a = 1 and
    the others 0 (their Q is then -inf)."""
    j = np.arange(1, m)[:, None].astype(float)
    tau = np.arange(1, m)[None, :].astype(float)
    kappa = tau + j
    valid = kappa <= m
    a = 2 / kappa
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(valid & (tau > 1), 2 * (kappa - tau) / (kappa * (tau - 1)), 0.0)
        c = np.where(valid & (kappa - tau > 1), 2 * tau / (kappa * (kappa - tau - 1)), 0.0)
    return np.where(valid, a, 1.0), np.where(valid, a + b, 0.0), np.where(valid, a + c, 0.0)


def reference_split(prep: Prepared, window: int, alpha: float) -> list[int]:
    """Otava's split(): windows of WINDOW runs, the next half a window on or at the last point
    found; a window whose every split fails its t-test (Prepared.hopeless) is skipped."""
    n, step = prep.n, max(1, window // 2)
    found: set[int] = set()
    start = 0
    while start < n:
        end = min(start + window, n)
        hopeless = end - start == window and bool(prep.hopeless(start, step, 1, window, alpha)[0])
        points = [] if hopeless else reference_detect(prep, start, end, alpha)
        found.update(points)
        start = max(points[-1] if points else 0, start + step)
    return sorted(found)


def reference_detect(prep: Prepared, start: int, end: int, alpha: float) -> list[int]:
    """Otava's ChangePointDetector on x[start:end], every segment's best split computed anew."""
    points: list[int] = []
    while True:
        bounds = [start, *points, end]
        best = None
        for a, b in zip(bounds, bounds[1:], strict=False):
            if b - a >= 2:
                tau, q = reference_best(prep, a, b - a)
                if best is None or q > best[1]:
                    best = (tau, q, a, b)
        if best is None or not prep.significant_one(best[2], best[0], best[3], alpha):
            return points
        points = sorted([*points, best[0]])


def reference_change_points(series: np.ndarray, window: int, max_pvalue: float, min_magnitude: float,
                            log: bool) -> list[ChangePoint]:  # fmt: skip
    kept, prep, log = trend._prepare(series, window, log)
    if prep is None:
        return []
    weak = reference_split(prep, window, trend.first_pass(max_pvalue))
    found = reference_merge(weak, prep, max_pvalue, min_magnitude, log)
    return [dataclasses.replace(cp, index=int(kept[cp.index])) for cp in found]


def reference_merge(weak: list[int], prep: Prepared, max_pvalue: float, min_magnitude: float,
                    log: bool) -> list[ChangePoint]:  # fmt: skip
    """Hunter's merge step: drop the weakest point (the largest p, then the least change) until
    every one reaches MAX_PVALUE and MIN_MAGNITUDE, both neighbours re-tested after a removal."""
    points = list(weak)
    stats = [trend._stats(points, i, prep, log) for i in range(len(points))]
    while points:
        weakest = max(range(len(points)), key=lambda i: stats[i].pvalue)
        if stats[weakest].pvalue < max_pvalue:
            weakest = min(range(len(points)), key=lambda i: trend._magnitude(stats[i]))
            if trend._magnitude(stats[weakest]) > min_magnitude:
                break
        del points[weakest], stats[weakest]
        stats = [trend._stats(points, i, prep, log) for i in range(len(points))]
    return [trend._stats(points, i, prep, log, exact=True) for i in range(len(points))]


def series(seed: int, n: int, kind: int) -> np.ndarray:
    """A synthetic series: 1-10 % noise on 100, 0-3 steps of -20 % to +50 %; KIND adds rounding
    to even numbers (ties), a constant stretch, NaN (runs without the figure) or a zero."""
    rng = np.random.default_rng(seed)
    x = 100 * (1 + rng.choice([0.001, 0.01, 0.03, 0.1]) * rng.standard_normal(n))
    for _ in range(int(rng.integers(0, 4))):
        x[int(rng.integers(0, n)) :] *= 1 + rng.choice([-0.2, -0.05, 0.02, 0.08, 0.5])
    if kind == 1:
        x = np.round(x / 2) * 2
    elif kind == 2:
        x[: n // 3] = x[0]
    elif kind == 3:
        x[rng.integers(0, n, size=max(1, n // 8))] = np.nan
    elif kind == 4:
        x[int(rng.integers(0, n))] = 0.0  # a value <= 0: searched on its own scale, not the log
    return x


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(3, 260),
    st.integers(0, 4),
    st.sampled_from([3, 4, 5, 8, 13, 20, 50, 50]),
    st.sampled_from([0.001, 0.01, 0.05, 0.3]),
    st.sampled_from([0.0, 0.02]),
    st.booleans(),
)
def test_the_search_gives_the_reference_points_bit_for_bit(seed, n, kind, window, pvalue, magnitude, log):
    x = series(seed, n, kind)
    options = {"window": window, "max_pvalue": pvalue, "min_magnitude": magnitude, "log": log}
    expected = reference_change_points(x, window, pvalue, magnitude, log)
    got = trend.change_points(x, **options)
    assert [dataclasses.astuple(c) for c in got] == [dataclasses.astuple(c) for c in expected]


def test_the_reference_finds_points_where_there_are_steps() -> None:
    """The comparison above is not between two empty answers: steps give points, in both."""
    found = [reference_change_points(series(seed, 200, 0), 50, 0.01, 0.0, True) for seed in range(20)]
    assert sum(map(len, found)) >= 20
