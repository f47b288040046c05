"""The gate's statistics (`swarmbench compare --history`): one series of past runs turned into a level
with its noise, one new run (or repeats) judged against it, failures judged as counts, the gate's
false-alarm rate shared among its rows, and the smallest change it can catch. numpy and the standard
library; compare/trend.py reads the series from the store and builds the outcome.

- **Latency and throughput on the log scale.** Run-to-run noise of a latency is multiplicative (a
  busy machine makes every request x % slower) and skewed; on the log scale it is nearly normal and
  its SD is the relative SD, whatever the level. A figure at or below the store's quantum (0.001)
  is read as the quantum (no log of 0).
- **Robust to one bad run** (level): runs further than OUTLIER_CUT robust SDs (MAD x 1.4826) and
  OUTLIER_FLOOR from the median are left out, then the mean and SD of the rest: one run at +40 %
  on 3 % noise (11 SDs) neither widens the interval nor moves the centre, and normal runs are kept
  (the mean and SD keep the t interval's exact level; the median and MAD alone would waste 60 % of
  the runs' information).
- **A variance floor** (SD_FLOOR): the histograms keep 3 significant digits, so identical
  latencies may differ by one bucket (~0.1 %) and the files by 0.001 ms: no SD is taken below that
  (a constant baseline gives an interval of a few tenths of a percent, never p = 0).
- **Errors as counts** (count_difference): failures out of requests, pooled over the baseline runs,
  against the candidate's: Newcombe's hybrid score interval of the difference of two proportions
  (Wilson's interval of each; no t-interval on a column of zeros; one failure in the newest run
  is 1 of the pooled requests, not an empty baseline).
- **The whole gate's false alarms** (row_alphas): weighted Bonferroni over every row (names x
  metrics): Aggregated's rows share half of the gate's alpha, the request names' rows the other
  half; each row's CI is two-sided at 1 - 2 x its share, so an unchanged row is `regressed` (its
  CI wholly above 0, core/checks.py verdict) at most at its share, and all rows together raise a
  false alarm at most alpha. The exit code is the one weighted Holm would give (Holm's first step
  is this test; its later steps only add rows to a gate that already fails).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from swarmbench.compare.stats import Difference, aggregated_share, f_quantile, t_quantile
from swarmbench.core.checks import AGGREGATED, ERROR_RATE_FLOOR

MIN_RUNS = 5
"""Past runs (with the figure) a level needs: with fewer, the t quantile of the gate's per-row
levels makes the interval so wide that nearly everything reads inconclusive (t(0.9996, 4) = 9.0;
at 3 runs, 34)."""

OUTLIER_CUT = 5.0
"""A past run further than this many robust SDs (MAD x 1.4826, at least SD_FLOOR) from the
median is left out of the level: a busy machine's run (+40 % on 3 % noise is 11 SDs). The MAD of
a few runs is itself noisy: at this cut a sample of 20 normal runs loses one in 1.4 % of samples,
of 10 in 3.6 % (4 SDs: 5 % and 8 %), which the whole gate's false-alarm rate absorbs
(tests/test_gate_stats.py, bench/bench_gate_truth.py measure it)."""

OUTLIER_FLOOR = math.log1p(0.07)
"""A past run is left out only when it is also this far from the median (log scale: 7 %), whatever
the MAD: on real runs the HDR histograms quantise close runs to nearly equal figures, so the MAD can
be well under the plain SD and 5 robust SDs cut ordinary runs (p95 at 10 ms, 20 runs: 1.5 of 19 on
average, 0 with the floor; bench/bench_gate.py), which narrows the interval and raises false
alarms. A busy machine's run (+40 %) is far beyond it, and so is the old side of a 10 % step inside
the window; at 3 % noise 5 robust SDs (15 %) already exceed it."""

OUTLIER_MIN_RUNS = 10
"""Fewer past runs than this: none is left out (a MAD of 5 runs would drop a normal run in 11 % of
samples at OUTLIER_CUT, and narrow the interval with it)."""

SD_FLOOR = 1e-3
"""The smallest run-to-run SD (log scale, i.e. relative) the gate assumes: the HDR histograms'
3 significant digits (one bucket is ~0.1 %)."""

QUANTUM = 1e-3
"""The stored figures' step: latencies in ms with µs (locust_latency_hdr.csv's 3 decimals), requests/s
to a thousandth. The SD is never under QUANTUM / level either (a 5 µs p50 varies by 20 % a step)."""

REPEATS_F = 0.05
"""Repeats of the new run are pooled with the past runs' SD unless their variance exceeds it by an
F-test at this level (compare's rule for a calibration, compare/stats.py)."""

POWER = 0.90
"""`would catch`: the change the gate calls `regressed` with this probability (one new run)."""


@dataclass(frozen=True)
class Level:
    """One series' baseline on the log scale: the centre (mean log of the runs at the current level),
    the run-to-run SD (floored), its degrees of freedom, the runs the centre rests on, the runs in the
    sample, and how many were left out as outliers."""

    center: float
    spread: float
    df: int
    n: int
    used: int
    left_out: int


def logs(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The finite VALUES on the log scale, a value under QUANTUM read as QUANTUM."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return np.log(np.maximum(x, QUANTUM))


def _kept(y: np.ndarray) -> np.ndarray:
    """Y without the runs beyond OUTLIER_CUT robust SDs of its median and beyond OUTLIER_FLOOR (all
    of Y under OUTLIER_MIN_RUNS: too few to tell an outlier)."""
    if len(y) < OUTLIER_MIN_RUNS:
        return y
    med = float(np.median(y))
    mad = 1.4826 * float(np.median(np.abs(y - med)))
    return y[np.abs(y - med) <= max(OUTLIER_CUT * max(mad, SD_FLOOR), OUTLIER_FLOOR)]


def level(values: Sequence[float] | np.ndarray, since: int | None = None) -> Level | None:
    """The level of VALUES (past runs, oldest first, NaN where a run lacks the figure). SINCE: the
    position of the first run of the newest accepted change (None: no accepted change among them).

    From SINCE on there are MIN_RUNS runs or more: those alone. Fewer (a change accepted a run or
    two ago): the centre is the mean of those few, the SD is pooled from both sides' deviations
    from their own means (noise on the log scale is relative: a level change leaves it as it was),
    and the t quantile has the degrees of freedom of both. None when under MIN_RUNS runs in all."""
    raw = np.asarray(values, dtype=float)
    if since is not None and 0 < since < len(raw):
        new, old = logs(raw[since:]), logs(raw[:since])
        if len(new) >= MIN_RUNS:
            segments = [_kept(new)]
        elif len(new) == 0:
            segments = [_kept(old)]
        else:
            segments = [_kept(old), new]
    else:
        segments = [_kept(logs(raw))]
    used = sum(len(s) for s in segments)
    if used < MIN_RUNS:
        return None
    current = segments[-1]
    center = float(np.mean(current))
    squares = sum(float(np.sum((s - np.mean(s)) ** 2)) for s in segments)
    df = used - len(segments)
    spread = max(math.sqrt(squares / df), SD_FLOOR, QUANTUM / math.exp(center))
    return Level(center, spread, df, len(current), used, _sample_size(raw, since) - used)


def _sample_size(raw: np.ndarray, since: int | None) -> int:
    """The runs with the figure that level() drew its segments from (before leaving outliers out)."""
    if since is not None and 0 < since < len(raw):
        new = len(logs(raw[since:]))
        return new if new >= MIN_RUNS else new + len(logs(raw[:since]))
    return len(logs(raw))


def half_width(lv: Level, k: int, alpha: float, spread_new: float | None = None) -> tuple[float, float]:
    """(half-width, standard error) on the log scale of K new runs' mean minus the level, one-sided
    at ALPHA: one new run, the prediction interval ±t(1-α, df)·s·√(1 + 1/n); repeats (their own SD
    SPREAD_NEW, floored as the level's) pooled with the past runs' SD (Student's t, both sides'
    degrees of freedom: run-to-run noise is one machine's) unless an F-test (5 %) says the repeats
    are noisier, then Welch's t."""
    if k == 1 or spread_new is None:
        se = lv.spread * math.sqrt(1 / k + 1 / lv.n)
        return t_quantile(1 - alpha, lv.df) * se, se
    own = max(spread_new, SD_FLOOR)
    if own**2 / lv.spread**2 <= f_quantile(1 - REPEATS_F, k - 1, lv.df):
        df = lv.df + k - 1
        pooled = math.sqrt((lv.df * lv.spread**2 + (k - 1) * own**2) / df)
        se = pooled * math.sqrt(1 / k + 1 / lv.n)
        return t_quantile(1 - alpha, df) * se, se
    a, c = lv.spread**2 / lv.n, own**2 / k
    se = math.sqrt(a + c)
    df = (a + c) ** 2 / (a * a / lv.df + c * c / (k - 1))
    return t_quantile(1 - alpha, df) * se, se


def log_difference(lv: Level | None, values: Sequence[float], alpha: float) -> Difference:
    """The new runs' VALUES against the level LV: the geometric centre of each side, the difference
    and its CI (two-sided, ALPHA each side) in the metric's unit, from the log-scale interval (so
    `relative` is the ratio minus 1, and the CI beyond the band exactly when the log CI is beyond
    log(1 + band)). NaN bounds when either side lacks data."""
    y = logs(values)
    if lv is None or len(y) == 0:
        b = math.exp(lv.center) if lv is not None else math.nan
        c = math.exp(float(np.mean(y))) if len(y) else math.nan
        return Difference(b, c, c - b, math.nan, math.nan)
    spread_new = float(np.std(y, ddof=1)) if len(y) > 1 else None
    half, _ = half_width(lv, len(y), alpha, spread_new)
    d = float(np.mean(y)) - lv.center
    b = math.exp(lv.center)
    c = b * math.exp(d)
    return Difference(b, c, c - b, b * math.expm1(d - half), b * math.expm1(d + half))


def detectable(lv: Level | None, k: int, alpha: float, min_effect: float, higher_is_worse: bool) -> float:
    """The change (relative, signed: + for latency, - for throughput) that K new runs' verdict calls
    `regressed` with probability POWER at ALPHA (core/checks.py verdict: the CI's near end past 0 and
    the estimate past the band, i.e. the log estimate beyond max(the CI's half-width, log(1 + band))):
    that maximum + z(POWER) standard errors (the new runs' noise taken as the past runs'; normal
    approximation). NaN without a level."""
    if lv is None:
        return math.nan
    half, se = half_width(lv, k, alpha)
    shift = max(math.log1p(min_effect), half) + NormalDist().inv_cdf(POWER) * se
    return math.expm1(shift) if higher_is_worse else math.expm1(-shift)


# --- failures as counts -------------------------------------------------------------------------------


def wilson(failures: float, requests: float, z: float) -> tuple[float, float]:
    """Wilson's score interval of a proportion (z: the normal quantile of each side)."""
    p, n = failures / requests, requests
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def count_difference(
    base_failures: int, base_requests: int, failures: int, requests: int, alpha: float
) -> Difference:
    """The candidate's failure rate minus the baseline's (pooled counts), with Newcombe's hybrid
    score interval (1998, method 10), ALPHA each side: L = d - √((p1-l1)² + (u0-p0)²), U = d +
    √((u1-p1)² + (p0-l0)²), (l, u) Wilson's intervals. NaN bounds when a side has no requests."""
    p0 = base_failures / base_requests if base_requests > 0 else math.nan
    p1 = failures / requests if requests > 0 else math.nan
    if base_requests <= 0 or requests <= 0:
        return Difference(p0, p1, p1 - p0, math.nan, math.nan)
    z = NormalDist().inv_cdf(1 - alpha)
    l0, u0 = wilson(base_failures, base_requests, z)
    l1, u1 = wilson(failures, requests, z)
    d = p1 - p0
    low = d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    return Difference(p0, p1, d, max(low, -p0), high)


def detectable_rate(
    base_failures: int, base_requests: int, requests: float, alpha: float, min_effect: float
) -> float:
    """The failure-rate increase (absolute) that a run of REQUESTS requests has called `regressed` at
    ALPHA with probability about POWER (core/checks.py verdict): the smallest rise whose Newcombe
    lower bound at z(1-α) + z(POWER) clears 0 and whose estimate, less z(POWER) of its binomial
    standard errors, clears the band (bisection). NaN without requests."""
    if base_requests <= 0 or requests <= 0:
        return math.nan
    p0 = base_failures / base_requests
    edge = max(p0 * min_effect, ERROR_RATE_FLOOR)
    z_power = NormalDist().inv_cdf(POWER)
    alpha_power = 1 - NormalDist().cdf(NormalDist().inv_cdf(1 - alpha) + z_power)

    def caught(rise: float) -> bool:
        p1 = p0 + rise
        d = count_difference(base_failures, base_requests, p1 * requests, requests, alpha_power)
        se = math.sqrt(p1 * (1 - p1) / requests + p0 * (1 - p0) / base_requests)
        return d.low > 0 and rise - z_power * se > edge

    lo, hi = 0.0, 1.0 - p0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if caught(mid) else (mid, hi)
    return hi


# --- the whole gate's false alarms ----------------------------------------------------------------


def row_alphas(names: Sequence[str], metrics: Sequence[str], alpha: float) -> dict[tuple[str, str], float]:
    """Each row's one-sided alpha (weighted Bonferroni; module docstring): Aggregated's rows share
    AGGREGATED_SHARE of ALPHA, the other names' rows the rest (all of it to one group when the other
    is empty). The shares sum to ALPHA: the whole gate's false-alarm rate is at most ALPHA."""
    aggregated = [n for n in names if n == AGGREGATED]
    others = [n for n in names if n != AGGREGATED]
    share = aggregated_share(names)
    out = {}
    for group, part in ((aggregated, share), (others, 1 - share)):
        for name in group:
            for metric in metrics:
                out[(name, metric)] = alpha * part / (len(group) * len(metrics))
    return out
