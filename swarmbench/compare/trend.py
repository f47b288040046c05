"""A run against its history: the gate (a new run outside the prediction interval of the comparable
runs before it, with a verdict as `swarmbench compare` gives one) and the trend (change points per
request name and metric, E-divisive means with Otava's significance test). numpy and the standard
library; the series come from the history store (swarmbench/history).

- The gate (gate_outcome, `swarmbench compare --history`): the last n comparable runs of main (same
  load fingerprint, host and testbed), from the newest accepted change on (`history accept`; no
  detected change point resets it), are the A/A sample of run-to-run noise. Each row's interval
  is a prediction interval on the log scale, outliers left out, at the row's share of the whole
  gate's false-alarm rate; failures are judged as counts (compare/history_stats.py: the
  statistics). The verdict is compare's (core/checks.py: the interval against the ±min-effect band).
- The trend (trend, trend_json, trend_page; `swarmbench trend`): per name and metric, the change
  points (change_points), each with the first run after it (its commit: where to look), the means
  before and after and the change in %.

The machinery: E-divisive means with Otava's t-test significance, vectorised (change_points).
Apache Otava (docs/MATH.md, otava/analysis.py, otava/change_point_divisive/) searches each sliding
window for the split (tau, kappa) that maximises the energy divergence Q, building every window's
pairwise-distance matrix anew. Here every Q of every window comes from one table per series:

    S(a, b) = Σ_{a≤i<j<b} |x_i - x_j|      for all b - a <= width, built in `width` vector passes by
    S(a, b) = S(a, b-1) + S(a+1, b) - S(a+1, b-1) + |x_a - x_{b-1}|

stored by width (row j holds S(a, a + j) for every a). A window's Q grid, the cells 1 <= τ < κ <= m
walked as (j = κ - τ, τ), is gathered from it at the window's start (Prepared.grid_q), and a cell's
Q depends on (start, τ, κ) alone: a segment's best split is read from the grid at its start, the
cells with κ <= its length. So after a split at τ the left part costs no new Q, the right part's
grid is the one the next window reuses when it starts at that point, and a segment's best split,
once found, is kept (Otava's incremental idea: it changes only when the values inside it do). A
split's t-test reads segment means and variances from prefix sums; the split only asks "p <=
alpha?", answered as |t| >= the critical t of the degrees of freedom (found once per df), so
p-values are computed only where they are reported or ordered (the merge step). And a window none
of whose splits could pass its first t-test (most windows of a quiet series) is skipped before any
Q: its detector would keep nothing whichever split E-divisive picked.

Measured (bench/bench_history.py, 2 cores shared with other jobs): the change points of 77 series
of 10,000 runs in 1.5 s of CPU against 2.7 s for one full square Q grid per segment, the same
machine as busy (see that bench's docstring for the whole command); the points, p-values and means
are the same bit for bit (tests/test_trend_reference.py: the earlier search kept as a reference).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev
from typing import TYPE_CHECKING

import numpy as np

from swarmbench.compare import history_stats
from swarmbench.compare.stats import Difference, t_quantile
from swarmbench.core.checks import (
    AGGREGATED,
    COMPARE_METRICS,
    EXACT,
    HIGHER_IS_WORSE,
    MIN_EFFECT,
    PERCENTILE_METRICS,
)
from swarmbench.history.record import NameStats, RunData
from swarmbench.history.store import Configuration, RunRecord, Series, Store

if TYPE_CHECKING:  # the gate's alone: imported where it runs (a trend's start spares ~0.07 s)
    from swarmbench.compare.report import Outcome
    from swarmbench.compare.sides import Names

# --- E-divisive means, vectorised -----------------------------------------------------------------

SCAN_BATCH = 64
"""Windows whose splits are all t-tested in one numpy call (64 x 49 splits: ~20 µs). A point found
past the next window's start moves the walk off the scanned grid, wasting the rest of a batch."""

SCAN_FIRST = 16
"""Windows in the first batch of a scan (the walk's start, or after a point moved it off the grid
scanned); each batch that follows on the same grid is twice the last, up to SCAN_BATCH. A walk
moved off the grid wastes the rest of its batch: short batches there compute ~1/3 of the windows
that batches of SCAN_BATCH do (10,000 runs x 77 series)."""

HOPELESS_MARGIN = 1e-6
"""A window is skipped only when its largest |t| is below the critical t by this fraction: the
vectorised t and the scalar one differ in rounding, never by this much."""


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with integer DF >= 1, stdlib only. Up to 200 degrees of freedom
    the exact finite series (Abramowitz & Stegun 26.7.3-4, in the nested form of Hill 1970, CACM
    Algorithm 395); above, Hill's normalising transform of t to a standard normal deviate. Tested
    against scipy.stats.t (tests/test_trend_stats.py)."""
    if math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    y = t * t / df
    if df > 200:
        a = df - 0.5
        b = 48 * a * a
        w = a * (math.log1p(y) if y > 1e-6 else y)
        z = (
            ((((-0.4 * w - 3.3) * w - 24) * w - 85.5) / (0.8 * w * w + 100 + b) + w + 3) / b + 1
        ) * math.sqrt(w)
        return math.erfc(z / math.sqrt(2))
    theta = math.atan(math.sqrt(y))
    c2 = math.cos(theta) ** 2
    s = 1.0
    if df % 2:  # odd: 1 + (2/3)c^2 + (2·4)/(3·5)c^4 + ... up to c^(df-3)
        for j in range((df - 3) // 2, 0, -1):
            s = 1 + 2 * j / (2 * j + 1) * c2 * s
        inside = 2 / math.pi * (theta + (math.sin(theta) * math.cos(theta) * s if df > 1 else 0.0))
    else:  # even: 1 + (1/2)c^2 + (1·3)/(2·4)c^4 + ... up to c^(df-2)
        for j in range((df - 2) // 2, 0, -1):
            s = 1 + (2 * j - 1) / (2 * j) * c2 * s
        inside = math.sin(theta) * s
    return min(1.0, max(0.0, 1.0 - inside))


_CRITICAL: dict[tuple[int, float], float] = {}


def critical_t(df: int, alpha: float) -> float:
    """The |t| at which t_two_sided_p(t, DF) falls to ALPHA (bisection, cached): p <= alpha exactly
    when |t| >= this, p being decreasing in |t|."""
    key = (df, alpha)
    if key not in _CRITICAL:
        lo, hi = 0.0, 1.0
        while t_two_sided_p(hi, df) > alpha:
            lo, hi = hi, hi * 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if t_two_sided_p(mid, df) > alpha else (lo, mid)
            if hi - lo <= 1e-12 * hi:
                break
        _CRITICAL[key] = hi
    return _CRITICAL[key]


class Prepared:
    """One series ready for the search: the skewed pair-sum table, the prefix sums, and the answers
    already computed (a segment's best split depends on its values alone, so it is computed once:
    Otava's incremental idea)."""

    def __init__(self, x: np.ndarray, width: int, floor: float = 0.0) -> None:
        self.x, self.n, self.width = x, len(x), max(2, width)
        self.floor = floor  # the t-test's pooled SD is never below this (change_points: RESOLUTION)
        self.table = _pair_sums(x, self.width)
        self.pairs = self.table.reshape(-1)
        self.centre = float(x.mean())  # prefix sums of x - centre: no cancellation in the squares
        c = x - self.centre
        self.sums = np.zeros(
            (2, self.n + 1)
        )  # the prefix sums s1, s2 as one array: hopeless() reads both at once
        np.cumsum(c, out=self.sums[0, 1:])
        np.cumsum(c * c, out=self.sums[1, 1:])
        self.s1, self.s2 = self.sums
        # scalar reads as Python floats, without a list of them (tolist: ~1 ms per 10,000 runs)
        self.l1, self.l2 = memoryview(self.s1), memoryview(self.s2)
        self.spread = float(np.abs(c).max()) or 1.0  # the series' scale, for "nearly constant"
        self._q: dict[int, np.ndarray] = {}  # start -> Q on its grid (grid_q)
        self._best: dict[tuple[int, int], tuple[int, float]] = {}  # (a, b) -> best()
        self._inner: dict[int, np.ndarray] = {}  # M -> the grid's S(τ, κ) as offsets into pairs

    def best(self, a: int, b: int) -> tuple[int, float]:
        """The best split (absolute tau) of x[a:b] (2 <= b - a <= width) and its Q: Q(τ, κ) =
        2/κ·cross - 2(κ-τ)/(κ(τ-1))·S(0, τ) - 2τ/(κ(κ-τ-1))·S(τ, κ) over 1 <= τ < κ <= b - a
        (segment-relative), cross = S(0, κ) - S(0, τ) - S(τ, κ): Otava's calculator.py, with α = 1.
        The first largest in the order (j = κ - τ, τ) (ties between equal Q may resolve to another
        split than Otava's τ-major scan). A cell's Q depends on (a, τ, κ) alone, so a segment's
        cells are those of the grid at its start (grid_q) with κ <= b - a: the left part of a
        split, and the window that starts at a point found, reuse the grid already computed."""
        key = (a, b)
        if key not in self._best:
            q, grid = self.grid_q(a), _grid(min(self.width, self.n - a))
            if b - a < grid.size:
                cells = grid.within(b - a)
                k = int(cells[q[cells].argmax()])
            else:
                k = int(q.argmax())
            self._best[key] = (a + int(grid.tau[k]), float(q[k]))
        return self._best[key]

    def grid_q(self, start: int) -> np.ndarray:
        """Q on every cell 1 <= τ < κ <= M of the segment of M = min(width, n - start) runs at
        START (_Grid's order), computed once: S(τ, κ) = table[κ - τ, start + τ] and S(0, k) =
        table[k, start] gathered at the cells, none past M (half of the square (j, τ) grid)."""
        if start not in self._q:
            size = min(self.width, self.n - start)
            grid = _grid(size)
            if size not in self._inner:
                # each cell's S(τ, κ), S(0, κ) and S(0, τ) as offsets into pairs (rows of n + 1) from
                # the start: one gather and one product per grid (numpy's calls cost more than the work)
                row = self.n + 1
                self._inner[size] = np.concatenate(
                    (grid.j * row + grid.tau, grid.kappa * row, grid.tau * row)
                )
            cells = len(grid.tau)
            terms = self.pairs[start:].take(self._inner[size])
            terms *= grid.weights  # ac·S(τ, κ), a·S(0, κ), ab·S(0, τ)
            q = terms[cells : 2 * cells] - terms[:cells]  # Otava's order of operations
            q -= terms[2 * cells :]
            self._q[start] = q
        return self._q[start]

    def hopeless(self, start: int, step: int, count: int, m: int, alpha: float) -> np.ndarray:
        """For COUNT windows of M runs at START, START + STEP, ...: can no split of the window pass
        the t-test of significant_one() at ALPHA? Then, whichever split E-divisive picks, the
        window's detector keeps nothing and its Q need not be computed. Exact: only a window's
        first split is tested against the whole window (m - 2 degrees of freedom); most windows
        of a quiet series are skipped. All m - 1 splits' t at once, squared, from prefix sums."""
        item = self.sums.itemsize
        # [moment, window w, k]: s[a_w + k], moment 0 the sums, 1 the sums of squares, k = 0 .. m
        rows = np.ndarray((2, count, m + 1), self.sums.dtype, buffer=self.sums, offset=start * item,
                          strides=(self.sums.strides[0], step * item, item))  # fmt: skip
        inv, dof, scale = _split_sizes(m)
        sides = np.empty((2, 2, count, m - 1))  # [left/right, moment, window, split]
        np.subtract(rows[:, :, 1:m], rows[:, :, :1], out=sides[0])
        np.subtract(rows[:, :, m:], rows[:, :, 1:m], out=sides[1])
        sides *= inv  # each side's mean (centred) and mean square
        means, pooled = sides[:, 0], sides[:, 1]
        pooled -= means * means
        pooled *= dof
        pooled = pooled[0] + pooled[1]
        if self.floor:  # the scalar test's floor, a hair lower: the skip stays exact
            np.maximum(pooled, self.floor * self.floor * (1 - HOPELESS_MARGIN), out=pooled)
        pooled *= scale  # se², Otava's pooled variance x (1/n1 + 1/n2)
        crit = critical_t(m - 2, alpha) * (1 - HOPELESS_MARGIN)
        diff = means[0] - means[1]
        diff *= diff
        # (nearly) constant sides are left to the scalar test, which decides them exactly
        return ((diff < crit * crit * pooled) & (pooled > (1e-9 * self.spread) ** 2)).all(axis=1)

    def test(self, a: int, t: int, b: int) -> tuple[float, float, float]:
        """(mean before, mean after, p) of x[a:t] against x[t:b]: Otava's t-test, scipy's
        ttest_ind_from_stats (Student's, pooled variance, two-sided) fed np.std, the population
        standard deviation, where the formula expects the sample one (a slightly smaller pooled
        variance: kept, so a series gives the points Otava gives). Constant sides: p = 0 when
        their means differ, 1 when not."""
        m1, m2, se, df = self._t_scalar(a, t, b)
        if df <= 0:
            return m1, m2, 1.0
        if se == 0:
            return m1, m2, 0.0 if m1 != m2 else 1.0
        return m1, m2, t_two_sided_p((m1 - m2) / se, df)

    def significant_one(self, a: int, t: int, b: int, alpha: float) -> bool:
        """Does x[a:t] differ from x[t:b] at p <= ALPHA in test()? Asked as |t| >= the critical t
        of the degrees of freedom, in plain Python (numpy's overhead exceeds the work here)."""
        m1, m2, se, df = self._t_scalar(a, t, b)
        if df <= 0:
            return False
        if se == 0:
            return m1 != m2
        return abs(m1 - m2) / se >= critical_t(df, alpha)

    def _t_scalar(self, a: int, t: int, b: int) -> tuple[float, float, float, int]:
        s1, s2 = self.l1, self.l2
        n1, n2 = t - a, b - t
        c1, c2 = (s1[t] - s1[a]) / n1, (s1[b] - s1[t]) / n2
        v1 = max(0.0, (s2[t] - s2[a]) / n1 - c1 * c1)
        v2 = max(0.0, (s2[b] - s2[t]) / n2 - c2 * c2)
        df = n1 + n2 - 2
        pooled = ((n1 - 1) * v1 + (n2 - 1) * v2) / df if df > 0 else 0.0
        pooled = max(pooled, self.floor * self.floor)  # never quieter than the measurement's resolution
        return c1 + self.centre, c2 + self.centre, math.sqrt(pooled * (1 / n1 + 1 / n2)), df


def split(prep: Prepared, window: int, alpha: float) -> list[int]:
    """Otava's split(): windows of WINDOW runs, the next one half a window on or at the last point
    found, whichever is later; the union of the points each window's detector keeps at ALPHA."""
    n, step = prep.n, max(1, window // 2)
    found: set[int] = set()
    skip: dict[int, bool] = {}  # window start -> hopeless (Prepared.hopeless)
    batch, following = SCAN_FIRST, -1  # following: the start that continues the scanned grid
    start = 0
    while start < n:
        end = min(start + window, n)
        if start not in skip and end - start == window:
            # on the grid scanned so far: twice the last batch; after a point moved the walk off
            # it, a short one (the next point may move it off again)
            batch = min(SCAN_BATCH, 2 * batch) if start == following else SCAN_FIRST
            count = min(batch, (n - window - start) // step + 1)
            verdicts = prep.hopeless(start, step, count, window, alpha).tolist()
            skip = dict(zip(range(start, start + count * step, step), verdicts, strict=True))
            following = start + count * step
        points = [] if skip.get(start) else _detect(prep, start, end, alpha)
        found.update(points)
        start = max(points[-1] if points else 0, start + step)
    return sorted(found)


def _detect(prep: Prepared, start: int, end: int, alpha: float) -> list[int]:
    """Otava's ChangePointDetector on x[start:end]: split at the best candidate over all current
    segments while its t-test, within the segment it splits, reaches ALPHA."""
    points: list[int] = []
    while True:
        best: tuple[int, float, int, int] | None = None
        for a, b in itertools.pairwise([start, *points, end]):
            if b - a < 2:
                continue
            tau, q = prep.best(a, b)
            if best is None or q > best[1]:
                best = (tau, q, a, b)
        if best is None:
            return points
        tau, _, a, b = best
        if not prep.significant_one(a, tau, b, alpha):
            return points
        bisect.insort(points, tau)


def _pair_sums(x: np.ndarray, width: int) -> np.ndarray:
    """The table [j, a] = S(a, a + j), j = 0 .. width (0 past the end): one contiguous vector per j."""
    n = len(x)
    table = np.zeros((width + 1, n + 1))  # column n: the passes read a + 1
    for j in range(2, min(width, n) + 1):
        k = n - j + 1  # a = 0 .. n - j have a + j <= n
        out = table[j, :k]
        np.subtract(x[:k], x[j - 1 : j - 1 + k], out=out)
        np.abs(out, out=out)
        out += table[j - 1, :k]
        out += table[j - 1, 1 : k + 1]
        out -= table[j - 2, 1 : k + 1]
    return table


_SIZES: dict[int, tuple[np.ndarray, ...]] = {}


def _split_sizes(m: int) -> tuple[np.ndarray, ...]:
    """Per split τ = 1 .. m-1 of M runs, shaped for Prepared.hopeless: [1/n1, 1/n2] (2, 1, 1, m-1),
    [n1 - 1, n2 - 1] (2, 1, m-1), (1/n1 + 1/n2) / (m - 2)."""
    if m not in _SIZES:
        n1 = np.arange(1, m, dtype=float)
        n2 = m - n1
        inv, dof = np.stack((1 / n1, 1 / n2)), np.stack((n1 - 1, n2 - 1))
        _SIZES[m] = (inv[:, None, None, :], dof[:, None, :], (1 / n1 + 1 / n2) / (m - 2))
    return _SIZES[m]


class _Grid:
    """The cells 1 <= τ < κ <= M of a segment of M runs, in the order (j = κ - τ, τ), with Q's
    weights: a = 2/κ, a + b and a + c, b = 2(κ-τ)/(κ(τ-1)) (0 at τ = 1), c = 2τ/(κ(κ-τ-1)) (0 at
    κ - τ = 1). A shorter segment's cells (κ <= m) are a subset, in the same order, with the same
    weights (within). Only real cells: Otava's square grid leaves the cells with κ > M at 0, so a
    window whose every Q is negative splits at a meaningless cell there."""

    def __init__(self, size: int) -> None:
        self.size = size
        j, tau = np.divmod(np.arange((size - 1) ** 2), size - 1)
        j, tau = j + 1, tau + 1
        keep = j + tau <= size
        self.j, self.tau, self.kappa = j[keep], tau[keep], (j + tau)[keep]
        kappa, t = self.kappa.astype(float), self.tau.astype(float)
        self.a = 2 / kappa
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(t > 1, 2 * (kappa - t) / (kappa * (t - 1)), 0.0)
            c = np.where(kappa - t > 1, 2 * t / (kappa * (kappa - t - 1)), 0.0)
        self.ab, self.ac = self.a + b, self.a + c
        self.weights = np.concatenate((self.ac, self.a, self.ab))  # Prepared.grid_q's one product
        self._within: dict[int, np.ndarray] = {}

    def within(self, m: int) -> np.ndarray:
        """The positions of the cells with κ <= M, in order."""
        if m not in self._within:
            self._within[m] = np.flatnonzero(self.kappa <= m)
        return self._within[m]


@functools.cache
def _grid(size: int) -> _Grid:
    return _Grid(size)


# --- a metric over many runs: the prediction interval, change points ------------------------------

DEFAULT_LEVEL = 0.95
"""Prediction intervals cover one new run of an unchanged configuration with this probability. The
gate's default confidence is the whole gate's: it fails an unchanged run (any row regressed) in at
most 5 %, each row judged at its share (history_stats.row_alphas)."""

WINDOW = 50
"""Runs per sliding window of the split step (Otava's default window_len): long enough for a t-test
to see a few-percent step under 3 % noise, short enough that a window rarely holds two changes."""

MAX_PVALUE = 0.001
"""A change point's t-test must reach this p-value (Otava's default). The split looks for candidates
at 10x this (Otava's "weak" points); the merge keeps the ones that reach it. At 0.001 a flat series
of 50 runs shows a false change point in well under 5 % of seeds (tests/test_trend_stats.py)."""

MIN_MAGNITUDE = 0.0
"""A change point whose means differ by less than this fraction is dropped (Otava's default: none;
the trend's own default is TREND_MAGNITUDE, or TREND_NOISES x the series' noise)."""

RESOLUTION = 1e-3
"""The measurement's relative resolution: the HDR histograms keep 3 significant digits (a value is
known to 1 part in 1,000). A split's t-test never takes a segment's standard deviation below
RESOLUTION / sqrt(12) of its level (a uniform rounding error's SD): a constant stretch, a column
of one repeated figure, no longer gives p = 0 against a step of one rounding unit. A +1 % step on
constant values is 35 such SDs: real, and reported when it reaches the minimum magnitude."""

BASELINE_RUNS = 20
"""The gate's default sample: the last 20 comparable runs. Each row is judged at its share of the
gate's 5 % (history_stats.row_alphas: ~0.04 % for a request name's row), where the t quantile
still falls steeply with the runs: t(0.9996, df) is 4.9 at 10 runs, 3.96 at 20, 3.7 at 30."""

MIN_BASELINE = history_stats.MIN_RUNS
"""Fewer past runs than this (5) with a figure: no interval for it (history_stats.MIN_RUNS; the
gate as a whole needs as many comparable runs: GATE_MIN_RUNS, the same number)."""

GATE_LOOKBACK = 4 * WINDOW
"""The gate reads this many recent runs of the configuration at most (the candidate may be a stored
run with later ones after it): enough for BASELINE_RUNS before it, cheap on a long history."""


@dataclass(frozen=True)
class ChangePoint:
    """A level change: `index` is the first run after it (as in Otava); the means of the segments
    on either side (up to the neighbouring change points), the change in % and the t-test's p."""

    index: int
    mean_before: float
    mean_after: float
    change_percent: float
    pvalue: float


def prediction_interval(past: Sequence[float], level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Where one new run falls with probability LEVEL if it is like the PAST runs (n >= 2):

        mean ± t_{(1+level)/2, n-1} · s · sqrt(1 + 1/n)

    s the sample standard deviation of PAST. Unlike a confidence interval of the mean (s/sqrt(n)),
    it counts the new run's own noise (the 1) and the uncertainty of the past mean (the 1/n); the t
    quantile with n - 1 degrees of freedom covers s being estimated from n runs (normal noise)."""
    values = [float(v) for v in past]
    if len(values) < 2:
        raise ValueError(f"a prediction interval needs at least 2 past runs, got {len(values)}")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("a prediction interval needs finite past values (drop the runs that lack one)")
    mean, half = fmean(values), prediction_half_width(stdev(values), len(values), level)
    return mean - half, mean + half


def prediction_half_width(s: float, n: int, level: float = DEFAULT_LEVEL) -> float:
    """Half the width of a prediction interval for one new run: t_{(1+level)/2, n-1} · S · sqrt(1 + 1/n),
    S the standard deviation of N past runs (prediction_interval; the gate's interval of a difference)."""
    return t_quantile((1 + level) / 2, n - 1) * s * math.sqrt(1 + 1 / n)


def outside(past: Sequence[float], value: float, level: float = DEFAULT_LEVEL) -> int:
    """-1 below the prediction interval of PAST, +1 above it, 0 inside (which way is worse depends
    on the metric: latency up, throughput down)."""
    low, high = prediction_interval(past, level)
    return -1 if value < low else 1 if value > high else 0


def baseline(
    series: Sequence[float], n: int = BASELINE_RUNS, *, since: int | None = None
) -> history_stats.Level | None:
    """The gate's level of SERIES (oldest first): its last N runs, on the log scale, outliers left
    out (history_stats.level). SINCE: the position in SERIES of the newest accepted change's first
    run: from it on when it leaves MIN_BASELINE runs, else its few runs' centre with the noise of
    both sides. A change point nobody accepted does not reset it (a regression must not become the
    baseline by itself: `swarmbench trend --check` reports it). None when under MIN_BASELINE runs
    have the figure."""
    values = np.asarray(series, dtype=float)
    start = max(0, len(values) - n)
    window = values[start:]
    where = since - start if since is not None and since > start else None
    return history_stats.level(window, where)


def change_points(
    series: Sequence[float] | np.ndarray,
    *,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    min_magnitude: float = MIN_MAGNITUDE,
    log: bool = False,
) -> list[ChangePoint]:
    """E-divisive means (Matteson & James 2014) in sliding windows, each candidate split kept by a
    two-sample t-test, then Hunter's merge step, as Apache Otava's compute_change_points does it
    (docs/MATH.md, otava/analysis.py), with two departures. Missing values (NaN) are left out, never
    filled (Otava fills them forward: a name added or renamed mid-history then shows false steps);
    a point's `index` is still the position in SERIES of the first run after it. And no segment is
    quieter than the measurement's resolution (RESOLUTION: the t-test's standard deviation is at
    least RESOLUTION / sqrt(12) of the series' largest value), so constant stretches never give
    p = 0: `[0.0] * 29 + [0.001]` has one change, at 29, from 0 to 0.001 (change_percent infinite:
    no relative change describes it), and a +1 % step on constant values is found (34 floors)
    but dropped under a minimum magnitude above 1 %.

    Split: in each window of WINDOW runs (the next starts half a window on, or at the last point
    found), the split maximising the energy divergence Q (alpha = 1) is a candidate; a candidate
    whose t-test between its two sides reaches p <= first-pass (10 x MAX_PVALUE) is kept and the
    sides are searched again. Merge: with the union of those weak points, each tested against its
    neighbours, the one with the largest p is removed while p >= MAX_PVALUE (then the one with the
    least change while under MIN_MAGNITUDE), its neighbours re-tested each time.

    LOG: the search and the tests on log(series) (latency and throughput are ratio scales: a run
    twice as slow is as far off as one half as slow, and the noise is multiplicative); the means
    reported are then geometric means, the floor RESOLUTION / sqrt(12) in log units. A series with
    a value <= 0 is searched on its own scale."""
    kept, prep, log = _prepare(series, window, log)
    if prep is None:
        return []
    found = _merge(split(prep, window, first_pass(max_pvalue)), prep, max_pvalue, min_magnitude, log)
    return [dataclasses.replace(cp, index=int(kept[cp.index])) for cp in found]


def first_pass(max_pvalue: float) -> float:
    """The split's p-value for a candidate (Otava's "weak" points), the merge keeping MAX_PVALUE."""
    return max_pvalue * 10 if max_pvalue < 0.05 else max_pvalue * 2 if max_pvalue < 0.5 else max_pvalue


def merged(
    series: Sequence[float] | np.ndarray,
    indices: Sequence[int],
    *,
    max_pvalue: float = MAX_PVALUE,
    min_magnitude: float = MIN_MAGNITUDE,
    log: bool = False,
) -> list[ChangePoint]:
    """The merge step alone on given points (INDICES: first runs after, positions in SERIES, as
    change_points gives them): the trend's points left after its false discovery control, re-tested
    between their new neighbours and kept while they still reach MAX_PVALUE and MIN_MAGNITUDE."""
    kept, prep, log = _prepare(series, 2, log)  # the merge reads prefix sums only: no pair table
    if prep is None or not len(indices):
        return []
    positions = [int(i) for i in np.searchsorted(kept, np.asarray(indices))]
    found = _merge(positions, prep, max_pvalue, min_magnitude, log)
    return [dataclasses.replace(cp, index=int(kept[cp.index])) for cp in found]


def _prepare(
    series: Sequence[float] | np.ndarray, window: int, log: bool
) -> tuple[np.ndarray, Prepared | None, bool]:
    """(positions of the finite values, the search over them or None under 3, log scale used)."""
    raw = np.asarray(series, dtype=float)
    kept = np.flatnonzero(np.isfinite(raw))
    x = raw[kept] if len(kept) < len(raw) else raw
    if len(x) < 3:
        return kept, None, False
    log = log and bool((x > 0).all())
    if log:
        x = np.log(x)
    floor = RESOLUTION / math.sqrt(12) * (1.0 if log else float(np.abs(x).max()))
    return kept, Prepared(x, window, floor), log


# --- the merge ------------------------------------------------------------------------------------


def _merge(
    weak: list[int], prep: Prepared, max_pvalue: float, min_magnitude: float, log: bool = False
) -> list[ChangePoint]:
    """Hunter's merge step (Otava's merge()): drop the weakest point until every one reaches
    MAX_PVALUE and MIN_MAGNITUDE. After a removal both neighbours are re-tested (Otava re-tests the
    right neighbour and the one after it, leaving the left one's stale statistics)."""
    points = list(weak)
    stats = [_stats(points, i, prep, log) for i in range(len(points))]
    pvalues = [cp.pvalue for cp in stats]  # stats' p-values, kept beside them: max() reads them in C
    while points:
        weakest = max(range(len(points)), key=pvalues.__getitem__)
        if pvalues[weakest] < max_pvalue:
            weakest = min(range(len(points)), key=lambda i: _magnitude(stats[i]))
            if _magnitude(stats[weakest]) > min_magnitude:
                break
        del points[weakest], stats[weakest], pvalues[weakest]
        for i in (weakest - 1, weakest):
            if 0 <= i < len(points):
                stats[i] = _stats(points, i, prep, log)
                pvalues[i] = stats[i].pvalue
    return [_stats(points, i, prep, log, exact=True) for i in range(len(points))]


def _stats(points: list[int], i: int, prep: Prepared, log: bool = False, exact: bool = False) -> ChangePoint:
    """Point I's test against its neighbours. EXACT: the means from the values themselves, for the
    answer (the prefix sums' rounding reads a run of zeros as 1e-20); the merge's loop needs less."""
    before = points[i - 1] if i > 0 else 0
    after = points[i + 1] if i + 1 < len(points) else prep.n
    m1, m2, p = prep.test(before, points[i], after)
    if exact:
        m1, m2 = float(prep.x[before : points[i]].mean()), float(prep.x[points[i] : after].mean())
    if log:
        m1, m2 = math.exp(m1), math.exp(m2)
    change = (m2 / m1 - 1) * 100 if m1 else math.inf if m2 > m1 else -math.inf if m2 < m1 else 0.0
    return ChangePoint(index=points[i], mean_before=m1, mean_after=m2, change_percent=change, pvalue=p)


def _magnitude(cp: ChangePoint) -> float:
    """Otava's change_magnitude: the larger relative change, forward or backward (infinite from or
    to a mean of 0 where the other is not: no relative change describes it)."""
    if cp.mean_before == cp.mean_after:
        return 0.0
    if not cp.mean_before or not cp.mean_after:
        return math.inf
    forward = cp.mean_after / cp.mean_before - 1
    backward = cp.mean_before / cp.mean_after - 1
    return max(abs(forward), abs(backward))


# --- the history's answers: trend and gate --------------------------------------------------------

TREND_METRICS = ("rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
"""What a trend and a gate look at by default: throughput, the percentiles and max. Counts of
requests and failures follow the run's length and errors, not its speed (a threshold's business)."""


TREND_MAGNITUDE = 0.02
"""The trend's smallest change worth a person's look, as a fraction of the level (2 %): below the
run-to-run noise of any shared CI runner, so a change under it is no finding a gate could act on."""

TREND_NOISES = 1.0
"""...and at least this many times the series' own run-to-run noise (robust_noise): a level shift
smaller than one run's noise is real on a long quiet history (the t-test sees 0.3 sigma over
thousands of runs) but no single run shows it and no gate could; with 3 % noise the trend reports
changes of 3 % and more."""

TREND_FDR = 0.05
"""The false discovery rate of the trend's change points across all series of a configuration
(Benjamini-Yekutieli): at most 5 % of the points it lists are expected to be false, and on a flat
history (every null true) it lists any at all with probability <= 5 %."""

HIGHER_IS_BETTER = frozenset({"rps"})
"""The trend's metrics where a rise is good; for the rest (latency) a rise is a regression."""


@dataclass(frozen=True)
class Change:
    """One change point of one name's metric: the statistics, the first run after it, the point's
    q-value (the false discovery rate at which it is still listed) and whether it is for the worse."""

    type: str
    name: str
    metric: str
    point: ChangePoint
    run: RunRecord
    qvalue: float = 0.0
    worse: bool = False


NOISE_KEEP = 0.9
"""robust_noise keeps the 90 % smallest run-to-run differences: one bad run makes 2 large ones, a
step 1 (of 29 in a 30-run history: 3 are dropped); what is left is known about as well as a plain
SD of 60 % as many runs (measured under normal noise: 17.0 effective degrees of freedom from 29
differences; 14.3 keeping 80 %, 8.8 for the MAD), and reads ~7 % high at that size (conservative)."""

_Z_KEEP = NormalDist().inv_cdf(0.5 + NOISE_KEEP / 2)
_KEPT_VARIANCE = 1 - 2 * _Z_KEEP * NormalDist().pdf(_Z_KEEP) / NOISE_KEEP
"""E[Z^2 | |Z| < z] for a standard normal Z cut at its central NOISE_KEEP: the trimmed mean square's
consistency factor."""


def robust_noise(values: np.ndarray) -> float:
    """A series' run-to-run noise as a standard deviation (of log values: a fraction of the level),
    from its run-to-run differences d: centred on their median, the NOISE_KEEP smallest |d| kept,
    sigma^2 = mean(d^2 kept) / _KEPT_VARIANCE / 2. Differences ignore a level step (one large
    difference) and a drift (a shifted median); the trimming ignores an outlier run (two large
    differences). NaN with fewer than 3 values."""
    x = values[np.isfinite(values)]
    if len(x) < 3:
        return math.nan
    d = np.diff(x)
    d = np.sort(np.abs(d - _median(d)))[: max(1, math.ceil(NOISE_KEEP * len(d)))]
    return float(math.sqrt(float(np.mean(d * d)) / _KEPT_VARIANCE / 2))


def _median(d: np.ndarray) -> float:
    """np.median of a 1-D array without NaN, to the bit (its middle value, or the two middle ones'
    sum over 2), without numpy.ma: np.median imports it to check for a masked array (~20 ms of a
    trend's start)."""
    k = len(d) // 2
    if len(d) % 2:
        return float(np.partition(d, k)[k])
    part = np.partition(d, (k - 1, k))
    return (float(part[k - 1]) + float(part[k])) / 2


def log_scale(values: np.ndarray) -> np.ndarray:
    """A series as the trend judges it: log of its finite values when all are > 0 (NaN kept where
    a run lacks the figure), else as it is (a column with zeros has no ratio scale)."""
    finite = values[np.isfinite(values)]
    if len(finite) and (finite > 0).all():
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(values)
    return values


def by_qvalues(pvalues: Sequence[float], m: int) -> list[float]:
    """Benjamini-Yekutieli q-values of PVALUES among M hypotheses (M >= len(PVALUES); the rest have
    p = 1): q_(i) = min over j >= i of m c(m) p_(j) / j, c(m) = 1 + 1/2 + ... + 1/m. BY, not BH: the
    series of one configuration share their runs (a busy machine moves every metric of a run at
    once), a dependence BH is not proven for and BY holds under any."""
    m = max(m, len(pvalues), 1)
    c = sum(1 / k for k in range(1, m + 1))
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    q = [1.0] * len(pvalues)
    running = 1.0
    for rank in range(len(order), 0, -1):
        i = order[rank - 1]
        running = min(running, m * c * pvalues[i] / rank)
        q[i] = min(1.0, running)
    return q


def trend(
    store: Store,
    config: Configuration,
    *,
    metrics: Sequence[str] = TREND_METRICS,
    last: int | None = None,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    magnitude: float | None = None,
    fdr: float = TREND_FDR,
) -> list[Change]:
    """Every change point of CONFIG's series (its LAST runs, if given), by name: per series the
    points change_points finds on the log scale at MAX_PVALUE and at least MAGNITUDE (default:
    TREND_MAGNITUDE or TREND_NOISES x the series' robust noise, the larger); then across all series
    of the configuration each point's p, Bonferroni-adjusted for the split being chosen among its
    segment's positions (p x (runs between its neighbours - 1)), is kept at Benjamini-Yekutieli's
    false discovery rate FDR; in a series that lost points, the survivors are merged again (merged:
    re-tested between their new neighbours, so no point describes a segment that is no longer
    one). A name is analysed over the runs that have it."""
    series = store.series(
        config.fingerprint, config.host, config.testbed, config.branch, metrics=metrics, last=last
    )
    return series_changes(series, metrics, window=window, max_pvalue=max_pvalue, magnitude=magnitude, fdr=fdr)


def column(series: Series, key: tuple[str, str], metric: str) -> np.ndarray:
    """One name's (KEY: type, name) METRIC over SERIES' runs, NaN where a run lacks it: the store's
    packed copy read in place where it kept one (Series.packed; read-only, as it is the store's),
    else the values converted."""
    packed = series.packed.get(key, {}).get(metric)
    if packed is None:
        return np.asarray(series.values[key][metric], dtype=float)
    y = np.frombuffer(packed, dtype=float)
    y.flags.writeable = False
    return y


def series_changes(
    series: Series,
    metrics: Sequence[str] = TREND_METRICS,
    *,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    magnitude: float | None = None,
    fdr: float = TREND_FDR,
) -> list[Change]:
    """trend() on a configuration's series already read (SERIES, with METRICS)."""
    found: list[tuple[str, str, str, np.ndarray, list[ChangePoint], float, list[float]]] = []
    hypotheses = 0
    for type_, name in sorted(series.values):
        for metric in metrics:
            y = column(series, (type_, name), metric)
            noise = robust_noise(log_scale(y))
            floor = magnitude if magnitude is not None else max(TREND_MAGNITUDE, TREND_NOISES * noise)
            floor = floor if math.isfinite(floor) else TREND_MAGNITUDE
            points = change_points(y, window=window, max_pvalue=max_pvalue, min_magnitude=floor, log=True)
            hypotheses += max(1, len(points))
            found.append((type_, name, metric, y, points, floor, _selection_adjusted(y, points)))
    qvalues = iter(by_qvalues([p for *_, adjusted in found for p in adjusted], hypotheses))
    out = []
    for type_, name, metric, y, points, floor, _ in found:
        q = {cp.index: next(qvalues) for cp in points}
        kept = [cp for cp in points if q[cp.index] <= fdr]
        if kept and len(kept) < len(points):  # the survivors re-tested between their new neighbours
            survivors = [cp.index for cp in kept]
            kept = merged(y, survivors, max_pvalue=max_pvalue, min_magnitude=floor, log=True)
        for cp in kept:
            qv = q[cp.index]
            worse = (
                cp.mean_after < cp.mean_before
                if metric in HIGHER_IS_BETTER
                else cp.mean_after > cp.mean_before
            )
            out.append(Change(type_, name, metric, cp, series.runs[cp.index], qv, worse))
    return out


def _selection_adjusted(y: np.ndarray, points: list[ChangePoint]) -> list[float]:
    """Each point's p times the number of splits its segment offered (finite runs between its
    neighbours, minus one): the t-test's p is that of a split chosen as the best, not fixed ahead."""
    finite = np.cumsum(np.concatenate(([0], np.isfinite(y))))
    bounds = [0, *(cp.index for cp in points), len(y)]
    return [min(1.0, cp.pvalue * max(1, int(finite[bounds[k + 2]] - finite[bounds[k]]) - 1))
            for k, cp in enumerate(points)]  # fmt: skip


# --- the gate as `swarmbench compare` gives it: a verdict per name and metric ---------------------

GATE_MIN_RUNS = MIN_BASELINE
"""Comparable runs the gate needs before it judges at all (fewer: it says how many it has and gives
no verdict): 5, the fewest a level takes (history_stats.MIN_RUNS), the number docs/history.md gives."""

TAIL_MIN = 20
"""The gate judges a percentile of a name only when at least this many of the candidate's requests
lie beyond it (requests x (1 - q)); below, the row shows its figures, `inconclusive`, and the
header says why. A percentile with k requests beyond it is decided by those few: its rank moves by
~sqrt(k) between identical runs (a fifth at k = 20, a third at 10), and slow requests come in
bursts (a stall of the machine delays every request in flight, 8 at the pools' 8 users), so a
tail of 13 is one or two events. Measured on 20 real runs at ALBUMS_DELAY=100ms (20 s, 1,280
requests, 320-635 a name): 5 of the 6 percentiles with 3-16 requests beyond them had a run 7.8-29
robust SDs from its median (Aggregated p99, 12.8 beyond: one run at +6.7 %, 9.7 robust SDs), none with
23 or more beyond was past 6.1, in that pool or the 10 ms one; at 10 beyond, an unchanged run
failed the whole gate in 5.3 % of 2,000 draws, every false alarm that Aggregated p99 (at 3-6, the
names' p99: 15.1 %). docs/history.md has the figures, and the check on pools recorded after the
rule was set. A run needs 100 x TAIL_MIN = 2,000 requests of a name for its p99 to be gated, 400
for its p95."""


def tail_rests_on(metric: str, requests: int) -> int | None:
    """How many of REQUESTS lie beyond METRIC's percentile (None: not a percentile)."""
    q = PERCENTILE_METRICS.get(metric)
    return None if q is None else int(requests * (1 - q / 100))


GATE_METHOD = (
    "against history: per name and metric, the last n comparable runs of main (same load fingerprint,"
    " host and testbed; --branch for another) from the newest accepted change on; latency and "
    "throughput on the log scale, past runs beyond 5 robust SDs (MAD, from 10 runs) and 7 % of their "
    "median left out, the SD at least 0.1 % (the histograms' resolution); one new run's CI "
    "±t(df)·s·√(1+1/n) (a prediction interval), repeats by Student's t pooled with the past runs' SD "
    "(Welch's if an F-test finds them noisier); error rates as counts: Newcombe's score interval of "
    "the pooled failure rates' difference; each row's CI at its weighted-Bonferroni share of the "
    "gate's alpha (half to Aggregated's rows, half to the names'), so all rows together call an "
    f"unchanged run regressed in at most alpha; a percentile judged only when at least {TAIL_MIN} of the "
    "candidate's requests lie beyond it; verdict as compare's: the CI wholly past 0 and the estimate "
    "beyond the ±min-effect band (ASV's rule)"
)
"""The gate's method in one line, printed with its table and in compare.json."""

STORE_METRICS = {"throughput": "rps", "p50": "p50_ms", "p90": "p90_ms", "p95": "p95_ms", "p99": "p99_ms"}
"""`swarmbench compare`'s metrics as the history stores them (error_rate: failures / requests)."""


def metric_values(per: dict[str, list[float]], metric: str) -> np.ndarray:
    """One compare metric over a stored series (PER: the store's metrics of one name)."""
    if metric == "error_rate":
        requests, failures = np.asarray(per["requests"]), np.asarray(per["failures"])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(requests > 0, failures / requests, np.nan)
    return np.asarray(per[STORE_METRICS[metric]], dtype=float)


def run_value(stats: NameStats, metric: str) -> float:
    """One compare metric of one name in one run (NaN where the run lacks the figure)."""
    if metric == "error_rate":
        return stats.failures / stats.requests if stats.requests else math.nan
    value = getattr(stats, STORE_METRICS[metric])
    return math.nan if value is None else float(value)


def against_history(
    past: Sequence[float] | np.ndarray, values: Sequence[float], *, alpha: float, since: int | None = None
) -> Difference:
    """The difference of VALUES (the new runs) from PAST (the baseline runs, oldest first) with its
    CI, ALPHA each side (history_stats.log_difference): one new run's prediction interval, or Welch's
    t for repeats, on the log scale; NaN bounds when either side lacks data. SINCE: as baseline's."""
    return history_stats.log_difference(baseline(past, len(past), since=since), values, alpha)


def gate_outcome(
    store: Store,
    runs: Sequence[RunData],
    *,
    branch: str = "main",
    n: int = BASELINE_RUNS,
    metrics: Sequence[str] = COMPARE_METRICS,
    wanted: Sequence[str] | None = None,
    min_effect: float = MIN_EFFECT,
    confidence: float = DEFAULT_LEVEL,
    accepted: Sequence[str] = (),
) -> tuple[Outcome | None, int]:
    """RUNS (one new run, or repeats of one load) against BRANCH's comparable runs before them: (the
    outcome, as `swarmbench compare` reports one, None under GATE_MIN_RUNS; the comparable runs).
    CONFIDENCE is the whole gate's: an unchanged run fails it (any row `regressed`) with probability
    at most 1 - CONFIDENCE. ACCEPTED: the run_keys of runs that start an accepted new level
    (`swarmbench history accept`): the baseline starts at the newest (baseline()); nothing else does."""
    from swarmbench.compare import report  # the gate's alone (a trend's start spares it)

    series, keep = _comparable(store, runs, branch)
    if len(keep) < GATE_MIN_RUNS:
        return None, len(keep)
    window = keep[-n:]
    starts = [k for k, i in enumerate(window) if series.runs[i].run_key in set(accepted)]
    since = starts[-1] if starts else None
    by_name, names = _candidate_names(series, runs, wanted)
    alphas = history_stats.row_alphas(names.common, metrics, 1 - confidence)
    found, noise, power, left_out, drawn, unjudged = _differences(
        series, window, since, by_name, names.common, metrics, alphas, min_effect
    )
    accepted_at = f", from {series.runs[window[since]].run_id} (accepted)" if since is not None else ""
    used = [series.runs[i] for i in window]
    outcome = report.Outcome(
        baseline=[series.runs[i].run_id for i in window],
        candidate=[r.run_id for r in runs],
        rows=report.rows(found, min_effect),
        names=names,
        settings=[],
        options={
            "metrics": list(metrics),
            "names": wanted,
            "min_effect": min_effect,
            "confidence": confidence,
            "seed": 0,
        },  # fmt: skip
        noise=noise,
        noise_source=(
            f"learned from the last {len(window)} of {len(keep)} comparable runs of {branch} in {store.where}"
            f"{accepted_at}; relative SD on the log scale, Aggregated; {left_out} outlier run(s) left out"
        ),
        rounded=any(r.precision != EXACT for r in runs),
        method=GATE_METHOD,
        detectable=power,
        ci_note=f"{confidence * 100:.4g}% for the whole gate (each row's CI at "
        + " or ".join(f"{1 - 2 * a:.2%}" for a in sorted(set(alphas.values()), reverse=True))
        + ")",
        history=_baseline_said(store.where, branch, len(keep), used, left_out, since, drawn),
        notes=[unjudged_note(unjudged)] if unjudged else [],
    )
    return outcome, len(keep)


def unjudged_note(unjudged: list[str]) -> str:
    """The header's line for the percentile rows the gate left unjudged (TAIL_MIN)."""
    return (
        f"not judged (fewer than {TAIL_MIN} of the candidate's requests beyond the percentile, so a "
        f"handful of requests decide it; requests beyond in brackets): {', '.join(unjudged)}"
    )


def _baseline_said(
    where: str, branch: str, comparable: int, used: list[RunRecord], left_out: int, since: int | None,
    drawn: dict[str, dict],
) -> dict:  # fmt: skip
    """The baseline runs the gate used, as compare.json's `history` and the page say them: how many
    of the COMPARABLE runs, the first and last, the outliers LEFT_OUT, the accepted run it starts at
    (SINCE: its position in USED) and Aggregated's values (DRAWN)."""
    return {
        "store": where,
        "branch": branch,
        "comparable_runs": comparable,
        "runs": len(used),
        "first": {"run_id": used[0].run_id, "started_at": used[0].started_at},
        "last": {"run_id": used[-1].run_id, "started_at": used[-1].started_at},
        "left_out": left_out,
        "accepted_from": used[since].run_id if since is not None else None,
        "aggregated": drawn,
    }


def _comparable(store: Store, runs: Sequence[RunData], branch: str) -> tuple[Series, list[int]]:
    """The series of RUNS' configuration on BRANCH (its last GATE_LOOKBACK runs and RUNS' own), and
    the positions of the runs before RUNS in it; ValueError when RUNS are not of one configuration."""
    first = runs[0]
    for r in runs[1:]:
        if (r.fingerprint, r.host, r.testbed) != (first.fingerprint, first.host, first.testbed):
            raise ValueError(f"{r.run_id}: not the same load, host and testbed as {first.run_id}")
    stored = ("requests", "failures", *sorted(set(STORE_METRICS.values())))
    series = store.series(
        first.fingerprint, first.host, first.testbed, branch, metrics=stored, last=GATE_LOOKBACK + len(runs)
    )
    own = {r.run_key for r in runs}
    start = min(r.started_at for r in runs)
    keep = [i for i, r in enumerate(series.runs) if r.run_key not in own and r.started_at < start]
    return series, keep


def _candidate_names(
    series: Series, runs: Sequence[RunData], wanted: Sequence[str] | None
) -> tuple[dict[tuple[str, str], list[NameStats]], Names]:
    """The new runs' figures per (type, name), and the names judged (in both, Aggregated last, only
    WANTED if given) with those only in the history or only in the new runs."""
    from swarmbench.compare.sides import Names

    by_name: dict[tuple[str, str], list[NameStats]] = {(s.type, s.name): [] for s in runs[0].stats}
    for r in runs:
        for s in r.stats:
            by_name.setdefault((s.type, s.name), []).append(s)
    history_names = {name for _, name in series.values}
    candidate_names = {name for _, name in by_name}
    common = sorted((history_names & candidate_names) - {AGGREGATED}) + [AGGREGATED]
    if wanted:
        common = [c for c in common if c in wanted]
    return by_name, Names(
        common, sorted(history_names - candidate_names), sorted(candidate_names - history_names)
    )


def _differences(
    series: Series,
    window: list[int],
    since: int | None,
    by_name: dict[tuple[str, str], list[NameStats]],
    common: list[str],
    metrics: Sequence[str],
    alphas: dict[tuple[str, str], float],
    min_effect: float,
) -> tuple[
    dict[str, dict[str, Difference]], dict[str, float], dict[str, float], int, dict[str, dict], list[str]
]:
    """Per metric and name (COMMON's order): the candidates' difference from the baseline runs (the
    WINDOW runs of SERIES; SINCE: where the accepted level starts in it), at the row's ALPHAS;
    Aggregated's learned run-to-run noise (relative SD) and the change it would catch per metric
    (history_stats.detectable); the outlier runs Aggregated's levels left out (the most of any
    metric); Aggregated's values per metric, {"runs": the baseline runs', "candidate": the new
    runs'} (what compare.html draws); the percentile rows not judged (fewer than TAIL_MIN of the
    candidate's requests beyond them: NaN bounds, so `inconclusive`), each "name metric (k)"."""
    # Long on purpose: why: one pass over the stored rows fills all six things the gate reports;
    # split, each part would walk the series and rebuild the baselines again.
    found: dict[str, dict[str, Difference]] = {m: {} for m in metrics}
    noise: dict[str, float] = {}
    power: dict[str, float] = {}
    drawn: dict[str, dict] = {}
    unjudged: list[str] = []
    left_out = 0
    for key, per in series.values.items():
        if key[1] not in common or key not in by_name:
            continue
        kept = {m: np.asarray(v, dtype=float)[window] for m, v in per.items()}
        new = by_name[key]
        fewest = min(s.requests for s in new)  # the candidate run a percentile rests on least in
        for metric in metrics:
            if key[1] == AGGREGATED:
                drawn[metric] = {
                    "runs": [float(v) for v in metric_values(kept, metric)],
                    "candidate": [run_value(s, metric) for s in new],
                }
            alpha = alphas[(key[1], metric)]
            if metric == "error_rate":
                base = _pooled_counts(kept, since)
                d = history_stats.count_difference(*base, sum(s.failures for s in new),
                                                   sum(s.requests for s in new), alpha)  # fmt: skip
                found[metric][key[1]] = d
                if key[1] == AGGREGATED:
                    per_run = sum(s.requests for s in new) / len(new)
                    power[metric] = history_stats.detectable_rate(*base, per_run, alpha, min_effect)
                continue
            lv = baseline(metric_values(kept, metric), len(window), since=since)
            d = history_stats.log_difference(lv, [run_value(s, metric) for s in new], alpha)
            beyond = tail_rests_on(metric, fewest)
            if beyond is not None and beyond < TAIL_MIN:  # shown, not judged
                found[metric][key[1]] = dataclasses.replace(d, low=math.nan, high=math.nan)
                unjudged.append(f"{key[1]} {metric} ({beyond})")
                continue
            found[metric][key[1]] = d
            if key[1] == AGGREGATED and lv is not None:
                noise[metric] = lv.spread
                worse = HIGHER_IS_WORSE[metric]
                power[metric] = history_stats.detectable(lv, len(new), alpha, min_effect, worse)
                left_out = max(left_out, lv.left_out)
    found = {m: {name: found[m][name] for name in common if name in found[m]} for m in metrics}
    return found, noise, power, left_out, drawn, unjudged


def _pooled_counts(kept: dict[str, np.ndarray], since: int | None) -> tuple[int, int]:
    """(failures, requests) summed over the baseline runs: from SINCE on (the accepted level) when
    it has MIN_BASELINE runs, else all of them."""
    requests, failures = kept["requests"], kept["failures"]
    ok = np.isfinite(requests) & np.isfinite(failures)
    if since is not None and int(ok[since:].sum()) >= MIN_BASELINE:
        ok[:since] = False
    return int(failures[ok].sum()), int(requests[ok].sum())


# --- the trend as the command line gives it ----------------------------------------------------------


def configurations(store: Store, branch: str, min_runs: int = 2) -> list[Configuration]:
    """BRANCH's configurations with at least MIN_RUNS runs, most runs first."""
    return [c for c in store.configurations() if c.branch == branch and c.runs >= min_runs]


def trend_series(store: Store, branch: str, last: int | None = None) -> list[tuple[Configuration, Series]]:
    """Each configuration of BRANCH with its series (its LAST runs, if given): what trend_json and
    trend_page read, queried once."""
    return [
        (c, store.series(c.fingerprint, c.host, c.testbed, c.branch, metrics=TREND_METRICS, last=last))
        for c in configurations(store, branch)
    ]


def trend_json(
    store: Store,
    branch: str = "main",
    last: int | None = None,
    found: list[tuple[Configuration, Series]] | None = None,
    *,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    magnitude: float | None = None,
) -> dict:
    """`swarmbench trend --json`: every change point of every configuration of BRANCH (FOUND:
    trend_series' answer, queried here when not given), and the runs they start grouped
    (run_groups)."""
    points = []
    for config, series in trend_series(store, branch, last) if found is None else found:
        changes = series_changes(series, window=window, max_pvalue=max_pvalue, magnitude=magnitude)
        points += [point_json(config, c) for c in changes]
    return {"store": store.where, "branch": branch, "method": trend_method(window, max_pvalue, magnitude),
            "change_points": points, "runs": run_groups(points)}  # fmt: skip


def point_json(config: Configuration, c: Change) -> dict:
    """One change point as trend_json lists it."""
    change = round(c.point.change_percent, 3) if math.isfinite(c.point.change_percent) else None
    return {
        "name": c.name,
        "type": c.type,
        "metric": c.metric,
        "run_id": c.run.run_id,
        "commit": c.run.git_commit,
        "started_at": c.run.started_at,
        "before": round(c.point.mean_before, 6),
        "after": round(c.point.mean_after, 6),
        "change_pct": change,  # null: from or to 0, where no relative change exists
        "pvalue": c.point.pvalue,
        "qvalue": c.qvalue,
        "worse": c.worse,
        "fingerprint": config.fingerprint,
        "host": config.host,
        "testbed": config.testbed,
    }


def run_groups(points: list[dict]) -> list[dict]:
    """The change POINTS grouped by the run they start (one configuration's run), newest first:
    the run, its commit, how many series changed there and how many of them for the worse (what a
    person looks at: one commit that moved 7 series is one finding, not 7)."""
    groups: dict[tuple[str, ...], dict] = {}
    for p in points:
        key = (p["fingerprint"], p["host"], p["testbed"], p["run_id"], p["started_at"])
        first = {k: p[k] for k in ("run_id", "commit", "started_at", "fingerprint", "host", "testbed")}
        g = groups.setdefault(key, first | {"changed": 0, "worse": 0})
        g["changed"] += 1
        g["worse"] += bool(p["worse"])
    return sorted(groups.values(), key=lambda g: g["started_at"], reverse=True)


def trend_method(window: int = WINDOW, max_pvalue: float = MAX_PVALUE, magnitude: float | None = None) -> str:
    """The trend's method in one line, with its settings."""
    floor = (
        f"at least {magnitude * 100:g} %"
        if magnitude is not None
        else f"at least {TREND_MAGNITUDE * 100:g} % and {TREND_NOISES:g}x the series' noise"
    )
    return (
        f"E-divisive means with Otava's t-test on log values (windows of {window} runs, p <= {max_pvalue:g} "
        f"after the merge), {floor}; across series kept at a false discovery rate of {TREND_FDR * 100:g} % "
        "(Benjamini-Yekutieli on p x the splits tried)"
    )


TREND_METHOD = trend_method()
"""The trend's method in one line with its default settings, printed with its table and in --json."""


def trend_table(found: dict) -> str:
    """The terminal form of trend_json's answer: the runs that changed (newest first, "r25: 7 series
    changed, 7 for the worse"), then one line per change point, newest first."""
    points = sorted(found["change_points"], key=lambda p: p["started_at"], reverse=True)
    head = [f"history {found['store']}, branch {found['branch']}: {len(points)} change point(s) "
            f"in {len(found['runs'])} run(s)", f"method: {found['method']}"]  # fmt: skip
    if not points:
        return "\n".join(head)
    groups = [f"{g['run_id']} ({(g['commit'] or '-')[:10]}): {g['changed']} series changed, "
              f"{g['worse']} for the worse" for g in found["runs"]]  # fmt: skip
    rows = [("first run after", "commit", "name", "metric", "before", "after", "change")]
    for p in points:
        change = "n/a" if p["change_pct"] is None else f"{p['change_pct']:+.1f} %"
        rows.append(
            (p["run_id"], (p["commit"] or "-")[:10], p["name"], p["metric"],
             f"{p['before']:.4g}", f"{p['after']:.4g}", change)
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([*head, "", *groups, "", *lines])


TREND_COLOURS = ("#1f77b4", "#d62728")
"""The runs' values and the segment means between change points (change points: page/svg.py's
vertical marks)."""

TREND_LABELS = {"rps": "throughput (req/s)", "p50_ms": "p50 (ms)", "p90_ms": "p90 (ms)", "p95_ms": "p95 (ms)",
                "p99_ms": "p99 (ms)", "p999_ms": "p99.9 (ms)", "max_ms": "max (ms)"}  # fmt: skip
"""Each trend metric as its chart's y axis names it, with its unit."""


def trend_page(branch: str, found: dict, series_found: list[tuple[Configuration, Series]]) -> str:
    """trend.html: per configuration of BRANCH, its change points (FOUND: trend_json's answer) in a
    table, then one chart per request name and metric: the runs' values, the mean of each segment
    between change points as a dashed step, and each change point as a vertical mark just before
    the first run after it (SERIES_FOUND: trend_series' answer, the one trend_json read). One
    self-contained file, inline SVG."""
    from html import escape

    from swarmbench.core import skeleton

    parts = [
        f"<h1>Trend: branch {escape(branch)}</h1>",
        f"<p>History <code>{escape(found['store'])}</code>. Method: {escape(found['method'])}.</p>",
        _groups_html(found),
    ]
    for config, series in series_found:
        where = {(r.started_at, r.run_id): i for i, r in enumerate(series.runs)}
        key = (config.fingerprint, config.host, config.testbed)
        mine = [p for p in found["change_points"] if (p["fingerprint"], p["host"], p["testbed"]) == key]
        load = ", ".join(
            f"{k} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in config.load.items()
            if v not in (None, "", [])
        )
        parts.append(
            f"<h2>{escape(config.host or '-')} on {escape(config.testbed)}: "
            f"{len(series.runs)} of {config.runs} runs</h2>"
        )
        parts.append(f"<p>Load <code>{escape(config.fingerprint)}</code>: {escape(load)}</p>")
        parts.append(_change_table(mine, where))
        changed = {(p["type"], p["name"], p["metric"]) for p in mine}
        charts = sorted(((t, n, m) for (t, n) in series.values for m in TREND_METRICS),
                        key=lambda c: (c not in changed, c[0], c[1], TREND_METRICS.index(c[2])))  # fmt: skip
        for type_, name, metric in charts:  # the charts with a change point first
            y = column(series, (type_, name), metric)
            if np.isfinite(y).any():
                points = [p for p in mine if (p["type"], p["name"], p["metric"]) == (type_, name, metric)]
                parts.append(_trend_chart(f"{type_} {name}".strip(), metric, y, points, where))
    return skeleton.document("Swarmbench trend", "\n".join(parts))


def _groups_html(found: dict) -> str:
    """The runs that changed, newest first ("r25 (commit): 7 series changed, 7 for the worse"), and
    with `trend --check` the open regressions: what a person triages, before the charts."""
    from html import escape

    items = [f"<li>{escape(g['run_id'])} ({escape((g['commit'] or '-')[:10])}): {g['changed']} series "
             f"changed, {g['worse']} for the worse</li>" for g in found.get("runs", [])]  # fmt: skip
    out = (
        f"<h2>Runs that changed</h2><ul>{''.join(items)}</ul>" if items else "<p>No run changed a series.</p>"
    )
    if "open" in found:
        rows = [f"<li>{escape(r['name'])} {escape(r['metric'])} since {escape(r['since'])}: "
                f"{r['anchor_level']:.4g} -> {r['current_level']:.4g} ({escape(r['why'])})</li>"
                for r in found["open"]]  # fmt: skip
        out += (f"<h2>Open regressions: {len(rows)}</h2><ul>{''.join(rows)}</ul>" if rows
                else "<p>No open regression.</p>")  # fmt: skip
    return out


def _trend_chart(title: str, metric: str, y: np.ndarray, points: list[dict], where: dict) -> str:
    """One name's METRIC over its runs (Y, oldest first) as a figure: the values, the segment means
    between its change POINTS (trend_json's; WHERE: (started_at, run_id) -> position) as a dashed
    step, a vertical mark just before each first run after a change, and the changes in words."""
    from html import escape

    from swarmbench.page import svg

    starts = sorted(where[(p["started_at"], p["run_id"])] for p in points)
    means = np.full_like(y, np.nan)
    for a, b in itertools.pairwise([0, *starts, len(y)]):
        seg = y[a:b][np.isfinite(y[a:b])]
        means[a:b] = seg.mean() if len(seg) else np.nan
    x, label = np.arange(1, len(y) + 1, dtype=float), TREND_LABELS[metric]
    chart = svg.lines(
        [svg.Line(x, y, TREND_COLOURS[0], "each run"),
         svg.Line(x, means, TREND_COLOURS[1], "segment mean", dashed=True, step=True)],
        f"{title}: {label}", "run (1 = oldest)", label,
        vlines=[(i + 0.5, "change point") for i in starts], ymin=0.0,
    )  # fmt: skip
    said = "; ".join(
        f"at run {where[(p['started_at'], p['run_id'])] + 1} ({escape(p['run_id'])}, "
        f"{escape((p['commit'] or '-')[:10])}): {p['before']:.4g} -> {p['after']:.4g} "
        f"({p['change_pct']:+.1f} %)"
        for p in sorted(points, key=lambda p: p["started_at"])
    )
    return f"<figure>{chart}<figcaption>{said or 'no change point'}</figcaption></figure>"


def _change_table(points: list[dict], where: dict[tuple[str, str], int]) -> str:
    """The change points of one configuration as an HTML table, oldest first."""
    from html import escape

    if not points:
        return "<p>No change point.</p>"
    head = ("run", "first run after", "commit", "name", "metric", "before", "after", "change")
    rows = []
    for p in sorted(points, key=lambda p: (p["started_at"], p["name"], p["metric"])):
        cells = (where[(p["started_at"], p["run_id"])] + 1, p["run_id"], (p["commit"] or "-")[:10],
                 p["name"], TREND_LABELS[p["metric"]], f"{p['before']:.4g}", f"{p['after']:.4g}",
                 f"{p['change_pct']:+.1f} %")  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
    return f"<table>{header}{''.join(rows)}</table>"
