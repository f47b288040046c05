"""The sequential A/B's statistic: repeated confidence intervals of a group-sequential paired design
(Jennison & Turnbull, "Group Sequential Methods with Applications to Clinical Trials", 2000, ch. 9;
a Pocock-type constant). numpy and the standard library; no files.

- **Pairs.** Pair k is one A run and one B run adjacent in time (make ab's A B B A order). For each
  gated (name, metric), d_k = log(B_k / A_k) of the run's figure (its exact p50/p95/p99 from its
  histograms, its throughput): run-to-run noise of a latency is multiplicative, and what drifts
  over minutes (a neighbour's build) hits both runs of a pair and cancels in d_k.
- **Repeated confidence intervals.** At look k (k >= the first look, FIRST_LOOK pairs or more) the
  interval is mean(d) +- c * s / sqrt(k), s the SD of the k differences, on the log scale. c is the
  constant with P(max over looks k = first..K of |T_k| <= c) = 1 - 2 alpha under no change, T_k the
  paired t statistic of the first k pairs. The law of (T_first..T_K) does not depend on sigma, so c
  is found once by Monte Carlo on N(0, 1) pairs (seeded; PATHS paths, cached per (K, first look)).
  The intervals then hold the true difference at every look at once with probability 1 - 2 alpha,
  so a verdict taken at whatever look the data made us stop at is as sure as a fixed design's.
- **The family.** alpha is each row's one-sided share of the whole alpha (5 %: weighted
  Bonferroni over the rows, compare/history_stats.py row_alphas, as the history gate shares its
  own): a row is `regressed` (its interval beyond the band) at its share, all rows together at
  most alpha, at any look.
- **The verdict** at each look is core/checks.py's `verdict` on that interval; the design stops when
  every gated row is decisive (`regressed`, `improved`, `no change`), or after K pairs.
- **The error rate** is not a sequential row: a ratio of failure rates is undefined at zero
  failures; the final comparison of all the runs judges it as `swarmbench compare` does.

`look` takes the differences per row and returns the decision state; the duet design
(compare/duet.py) feeds it its own paired differences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from swarmbench.compare.history_stats import QUANTUM, SD_FLOOR
from swarmbench.compare.stats import Difference
from swarmbench.core.checks import INCONCLUSIVE, verdict

METHOD = (
    "sequential: repeated confidence intervals of a group-sequential paired design (Jennison & "
    "Turnbull, Pocock-type constant): pair k = an A run and the B run beside it in time, d = log(B/A) "
    "of each run's figure; at look k mean(d) +- c s/sqrt(k), c such that max |t| over all looks stays "
    "under it with 1 - 2 x the row's share of alpha (weighted Bonferroni over the rows); stop when "
    "every row is decisive"
)
"""The method in one line (the comparison's header, compare.json, docs/compare.md)."""

FIRST_LOOK = 3
"""The fewest pairs a look takes: s of 2 pairs has one degree of freedom (T_2 is Cauchy), and the
constant that keeps max |T| in check over looks from 2 on is ~3x that from 3 on (at 90 % over 10
looks: ~11 against 3.6), which would leave no power at any later look. From 3 pairs s has 2."""

PATHS = 200_000
"""Monte Carlo paths for the constant: its (1 - 0.0083) quantile (a row's share of 5 % among 6
rows) rests on ~1,700 paths beyond it, a relative error of the constant under ~2 %."""

CHUNK = 20_000
"""Paths simulated at a time (memory: CHUNK x K doubles per array)."""

SEED = 20_000
"""The constant's Monte Carlo seed: the same (K, first look, alpha), the same c, in every process."""

METRICS = ("throughput", "p50", "p90", "p95", "p99")
"""The metrics a sequential look judges (the error rate is left to the final comparison: module
docstring)."""

MAX_PAIRS = 200
"""The most pairs (looks) a design plans: a budget of hours with 5 s runs would otherwise plan
thousands, and each further look costs a little power (c grows with K) for a pair-time nobody
waits for."""


@lru_cache(maxsize=16)
def _max_t(pairs: int, first: int) -> np.ndarray:
    """max over looks k = FIRST..PAIRS of |T_k|, sorted, for PATHS paths of N(0, 1) pairs."""
    rng = np.random.default_rng(SEED)
    n = np.arange(1, pairs + 1, dtype=float)
    out = []
    for start in range(0, PATHS, CHUNK):
        x = rng.standard_normal((min(CHUNK, PATHS - start), pairs))
        total, squares = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
        mean = total / n
        sl = slice(first - 1, pairs)
        var = (squares[:, sl] - n[sl] * mean[:, sl] ** 2) / (n[sl] - 1)
        t = np.abs(mean[:, sl]) * np.sqrt(n[sl]) / np.sqrt(np.maximum(var, 1e-300))
        out.append(t.max(axis=1))
    return np.sort(np.concatenate(out))


def constant(pairs: int, alpha: float, first: int = FIRST_LOOK) -> float:
    """c for K = PAIRS looks from FIRST on: P(max |T_k| > c) = 2 ALPHA (two-sided; ALPHA one row's
    one-sided share) under no change."""
    if not first <= pairs <= MAX_PAIRS or first < 2:
        raise ValueError(f"looks {first}..{pairs}: need 2 <= first look <= pairs <= {MAX_PAIRS}")
    return float(np.quantile(_max_t(pairs, first), 1 - 2 * alpha))


@dataclass(frozen=True)
class RowLook:
    """One gated row at one look: its pairs, the mean and SD of d (log scale), the constant and the
    interval's half-width, the row's alpha, A's level (geometric mean, metric unit), its verdict, and
    the pairs it would need (None: cannot tell yet; inf: never at this estimate)."""

    name: str
    metric: str
    pairs: int
    mean: float
    sd: float
    c: float
    half: float
    alpha: float
    baseline: float
    verdict: str
    needed: float | None

    @property
    def low(self) -> float:
        """The interval's low end as a relative change (B/A - 1)."""
        return math.expm1(self.mean - self.half)

    @property
    def high(self) -> float:
        return math.expm1(self.mean + self.half)

    def catch(self, min_effect: float) -> float:
        """The smallest change the row could call now: the band plus the interval's half-width."""
        return math.expm1(math.log1p(min_effect) + self.half)

    def difference(self) -> Difference:
        """The interval in the metric's unit around A's level, as the comparison's rows hold one."""
        b = self.baseline
        return Difference(b, b * math.exp(self.mean), b * math.expm1(self.mean), b * self.low, b * self.high)

    def to_json(self) -> dict:
        num = _num
        return {
            "name": self.name, "metric": self.metric, "pairs": self.pairs, "mean_log": num(self.mean),
            "sd_log": num(self.sd), "c": num(self.c), "alpha": num(self.alpha),
            "change": num(math.expm1(self.mean)), "rci": [num(self.low), num(self.high)],
            "half_log": num(self.half),
            "verdict": self.verdict, "pairs_needed": _needed(self.needed),
        }  # fmt: skip


@dataclass(frozen=True)
class Look:
    """The decision state after PAIRS pairs of a design of MAX_PAIRS looks from FIRST on."""

    pairs: int
    max_pairs: int
    first: int
    min_effect: float
    rows: list[RowLook] = field(default_factory=list)

    @property
    def looked(self) -> bool:
        return self.pairs >= self.first

    @property
    def decided(self) -> bool:
        """Every gated row decisive at this look (the design stops)."""
        return self.looked and bool(self.rows) and all(r.verdict != INCONCLUSIVE for r in self.rows)

    @property
    def needed(self) -> float | None:
        """Pairs until every row could be decisive (the slowest row's; None: not known yet)."""
        known = [r.needed for r in self.rows if r.verdict == INCONCLUSIVE]
        if any(n is None for n in known):
            return None
        return max([float(self.pairs), *known]) if known else float(self.pairs)

    def to_json(self) -> dict:
        return {
            "method": METHOD,
            "pairs": self.pairs,
            "max_pairs": self.max_pairs,
            "first_look": self.first,
            "min_effect": self.min_effect,
            "decided": self.decided,
            "pairs_needed": _needed(self.needed),
            "rows": [r.to_json() for r in self.rows],
        }


def log_ratios(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """d_k = log(B_k / A_k) of paired figures (a figure under QUANTUM read as QUANTUM, as the gate
    reads one: no log of 0); NaN where either is missing."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.log(np.maximum(y, QUANTUM)) - np.log(np.maximum(x, QUANTUM))


def level(values: Sequence[float]) -> float:
    """A side's level from its runs' figures: their geometric mean (NaN: none)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.exp(np.mean(np.log(np.maximum(x, QUANTUM))))) if len(x) else math.nan


def look(
    diffs: Mapping[tuple[str, str], Sequence[float]],
    *,
    max_pairs: int,
    alphas: Mapping[tuple[str, str], float],
    min_effect: float,
    baselines: Mapping[tuple[str, str], float] | None = None,
    first: int = FIRST_LOOK,
) -> Look:
    """The decision state of DIFFS ((name, metric) -> the paired log-differences d_1..d_k so far, NaN
    for a pair without the figure), a design of MAX_PAIRS looks from FIRST on, each row at its
    one-sided ALPHAS share; BASELINES: A's level per row in the metric's unit (1.0 when not given: the
    rows' intervals are then relative)."""
    rows = []
    pairs = max((len(d) for d in diffs.values()), default=0)
    for key, values in diffs.items():
        d = np.asarray(values, dtype=float)
        d = d[np.isfinite(d)]
        k = len(d)
        name, metric = key
        base = (baselines or {}).get(key, 1.0)
        if k < first:
            nan = math.nan
            mean = float(np.mean(d)) if k else nan
            rows.append(RowLook(name, metric, k, mean, nan, nan, nan, alphas[key], base, INCONCLUSIVE, None))
            continue
        c = constant(max_pairs, alphas[key], first)
        mean, sd = float(np.mean(d)), max(float(np.std(d, ddof=1)), SD_FLOOR)
        half = c * sd / math.sqrt(k)
        row = RowLook(name, metric, k, mean, sd, c, half, alphas[key], base, INCONCLUSIVE, None)
        found = verdict(metric, row.difference(), min_effect)
        rows.append(RowLook(name, metric, k, mean, sd, c, half, alphas[key], base, found,
                            _pairs_needed(mean, sd, c, min_effect)))  # fmt: skip
    return Look(pairs, max_pairs, first, min_effect, rows)


def _pairs_needed(mean: float, sd: float, c: float, min_effect: float) -> float:
    """Pairs for the half-width c s / sqrt(n) to fall under the gap between |mean| and the band's
    edge (log scale), were mean and s to stay as they are; inf when mean sits on the edge."""
    gap = abs(abs(mean) - math.log1p(min_effect))
    return math.ceil((c * sd / gap) ** 2) if gap > 0 else math.inf


def _needed(n: float | None) -> int | str | None:
    if n is None:
        return None
    return "inf" if math.isinf(n) else int(n)


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 6)
