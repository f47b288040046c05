"""The statistic of a duet run (`DUET=1 make ab`): A and B measured at once, paired by window.

In a duet run both sides share every second of the run: the same machine, the same load generator,
the same neighbours. Interference that hits a second hits both sides' requests of that second,
so the statistic works on the sides' windows in pairs and lets it cancel.

Method (METHOD, one line): per request name and percentile, the estimate is ln(B / A) of the
whole-run exact percentiles, each side's histograms merged over the windows where both sides have
requests; its standard error comes from a moving-block bootstrap over those windows that draws the
SAME blocks of consecutive 1 s windows on both sides (a block of slow seconds is drawn for A and B
together, so it moves both percentiles alike and leaves their ratio), spread Bessel-corrected by
the blocks' count as compare/stats.py does, with 1.5 n / l degrees of freedom (se_df). Several
duet runs: the estimate of all their windows merged, its variance the larger of the runs' own (mean
of their variances / k) and their spread (variance of their estimates / k, Student's t with k - 1
degrees of freedom then). The interval est ± q * SE on the log scale, times A's value, is a
difference in ms that core/checks.py's `verdict` judges with the usual band. q is each row's share
of 1 - confidence (weighted Bonferroni, history_stats.row_alphas): every row of the table is judged,
so the table as a whole, not each row, calls an A/A duet changed at most that often.

Why the whole-run ratio rather than the mean of per-window log ratios: it is the figure the table
shows (candidate - baseline is the difference judged), a window with few requests weighs little
rather than as much as a full one, and it needs no per-window percentile (a 1 s window's p99 of a
few dozen requests is its maximum). The windows are still the unit that is resampled, in pairs.

Each run's (estimate, SE) is a Pair, kept in compare.json. A sequential duet (DUET=1 with BUDGET,
`compare --duet --sequential K`) takes one d = ln(B/A) per duet run from run_figures (each side's
whole-run percentile over its paired windows: the Pair's estimate) into compare/sequential.py's
repeated CIs, as the interleaved design takes one per pair of runs.

Pure numpy: no files (compare/duet_sides.py reads a duet run into the two sides).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from swarmbench.compare.history_stats import row_alphas
from swarmbench.compare.stats import (
    BOOTSTRAP,
    PERCENTILES,
    Difference,
    Grid,
    Run,
    Side,
    block_length,
    percentiles_of,
    resample,
    small_sample_correction,
    t_quantile,
)

METHOD = (
    "duet: A and B at once, paired by 1 s window; ln(B/A) of the whole-run exact percentiles over the "
    "windows both sides have requests in; SE from a moving-block bootstrap drawing the same blocks of "
    "windows on both sides, Bessel-corrected, t at 1.5 n/l df; runs combined by the larger of their own "
    "variance and their spread (t at k-1 df then); interval on the log scale x A's value, each row's "
    "at its weighted-Bonferroni share of 1 - the confidence (Aggregated's rows half), so the whole "
    "table's false-alarm rate is 1 - the confidence, not each row's"
)
"""The method in one line, for the terminal table, compare.json and the page."""

DUET_METRICS = tuple(PERCENTILES)
"""What a duet judges: the latency percentiles. Not throughput: each step runs on both sides, so
their request rates are equal by construction (the slower side slows both). Not the error rate: a
ratio of rates of rare failures has no useful log; each side's failures are in the runs' tables."""


@dataclass(frozen=True)
class Pair:
    """One duet run's paired estimate of one name and metric: ln(B / A) and its standard error, over
    `windows` paired windows (NaN when a side has no request in any window)."""

    estimate: float
    se: float
    windows: int
    df: float = math.inf
    """The SE's degrees of freedom (se_df)."""

    def to_json(self) -> dict:
        return {
            "ln_ratio": _num(self.estimate),
            "se": _num(self.se),
            "df": _num(self.df),
            "windows": self.windows,
        }


def se_df(windows: int) -> float:
    """Degrees of freedom of a moving-block bootstrap variance over WINDOWS windows in blocks of
    block_length(): 1.5 n / l. Why: the bootstrap of overlapping circular blocks of length l estimates
    the variance as the Bartlett-kernel (Newey-West) estimator of bandwidth l does (Künsch 1989),
    whose relative variance is (4/3) l / n, a chi-square's of 1.5 n / l degrees of freedom. A 20 s run
    (blocks of 5) has 6: Student's t(6) = 2.45 where z = 1.96; on synthetic duets (tests/test_duet.py)
    the normal interval covered 89-94 % where it says 95 %, t(6) 97 %. 10 minutes (blocks of 25): 36,
    t = 2.03."""
    return 1.5 * windows / block_length(windows) if windows > 1 else math.inf


def _num(value: float) -> float | None:
    return None if not math.isfinite(value) else round(value, 6)


def paired_windows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rows (windows) where both A and B (windows x buckets, one name) have requests."""
    return np.flatnonzero((a.sum(axis=1) > 0) & (b.sum(axis=1) > 0))


def log_ratio(a: np.ndarray, b: np.ndarray, values: np.ndarray, q: float) -> np.ndarray:
    """ln(B / A) of the Q-th percentile of each row's merged histogram (rows: replicates x buckets)."""
    (pa,) = percentiles_of(a, values, [q])
    (pb,) = percentiles_of(b, values, [q])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(pb / pa)


def pair(
    a: np.ndarray,
    b: np.ndarray,
    values: np.ndarray,
    q: float,
    rng: np.random.Generator,
    replicates: int = BOOTSTRAP,
) -> Pair:
    """One run's Pair for the Q-th percentile (METHOD): A and B are its (windows x buckets) counts of
    one name, VALUES the buckets' values."""
    rows = paired_windows(a, b)
    if not len(rows):
        return Pair(math.nan, math.nan, 0)
    keep = (a[rows].sum(axis=0) + b[rows].sum(axis=0)) > 0  # only buckets with requests: the same percentiles
    a, b, values = a[rows][:, keep], b[rows][:, keep], values[keep]
    estimate = float(log_ratio(a.sum(axis=0, keepdims=True), b.sum(axis=0, keepdims=True), values, q)[0])
    if len(rows) < 2:
        return Pair(estimate, math.nan, 1)
    side = Side([Run(a, np.zeros((len(rows), 1)), np.zeros((len(rows), 1)))])
    weights, _ = resample(side, replicates, rng)  # one draw of blocks for both sides: the pairing
    reps = log_ratio(weights @ a, weights @ b, values, q)
    se = float(np.nanstd(reps, ddof=1)) * small_sample_correction(side)
    return Pair(estimate, se, len(rows), se_df(len(rows)))


def run_figures(a: Side, b: Side, grid: Grid, metrics: list[str]) -> dict[tuple[str, str], tuple[list, list]]:
    """{(name, metric): (A's, B's figure per duet run)}: each run's whole-run percentile of each side
    over the windows both sides have requests in (NaN: none), the figures whose ln ratio is the run's
    Pair estimate. A sequential duet (`--duet --sequential K`) takes one d = ln(B/A) per duet run."""
    out: dict[tuple[str, str], tuple[list, list]] = {}
    for name in grid.names:
        cols = grid.columns[name]
        values = grid.values[cols]
        merged = []
        for ra, rb in zip(a.runs, b.runs, strict=True):
            rows = paired_windows(ra.hist[:, cols], rb.hist[:, cols])
            merged.append((ra.hist[rows][:, cols].sum(axis=0), rb.hist[rows][:, cols].sum(axis=0)))
        hist_a = np.array([m[0] for m in merged]).reshape(len(merged), len(values))
        hist_b = np.array([m[1] for m in merged]).reshape(len(merged), len(values))
        for metric in metrics:
            (fig_a,) = percentiles_of(hist_a, values, [PERCENTILES[metric]])
            (fig_b,) = percentiles_of(hist_b, values, [PERCENTILES[metric]])
            out[(name, metric)] = (fig_a.tolist(), fig_b.tolist())
    return out


def combine(pairs: list[Pair]) -> tuple[float, float]:
    """(standard error, degrees of freedom) of the estimate of K duet runs (METHOD): the larger of
    sqrt(mean SE^2 / k) (the runs' degrees of freedom added, Welch-Satterthwaite) and their estimates'
    spread sqrt(s^2 / k) (k - 1). NaN when no run has an SE."""
    known = [p for p in pairs if math.isfinite(p.se) and math.isfinite(p.estimate)]
    if not known:
        return math.nan, math.inf
    k = len(known)
    variances = np.array([p.se**2 for p in known])
    within = float(variances.sum()) / k**2
    between = float(np.var([p.estimate for p in known], ddof=1)) / k if k > 1 else 0.0
    if between > within:
        return math.sqrt(between), float(k - 1)
    bottom = sum(v**2 / p.df for v, p in zip(variances, known, strict=True) if math.isfinite(p.df))
    return math.sqrt(within), float(variances.sum() ** 2 / bottom) if bottom > 0 else math.inf


def interval(estimate: float, se: float, df: float, confidence: float) -> tuple[float, float]:
    """estimate ± q SE on the log scale; q Student's t at DF (the normal's at inf)."""
    if not (math.isfinite(estimate) and math.isfinite(se)):
        return math.nan, math.nan
    p = 1 - (1 - confidence) / 2
    q = t_quantile(p, df) if math.isfinite(df) else NormalDist().inv_cdf(p)
    return estimate - q * se, estimate + q * se


@dataclass(frozen=True)
class Found:
    """One name and metric of a duet comparison: the Difference the verdict judges (in ms; A is the
    baseline, B the candidate, each its whole-run value), the pooled estimate, SE and its degrees of
    freedom on the log scale, and each run's Pair."""

    difference: Difference
    estimate: float
    se: float
    df: float
    pairs: list[Pair]

    def to_json(self) -> dict:
        """compare.json's `duet.pairs[name][metric]`: the pooled estimate and each run's Pair."""
        return {
            "ln_ratio": _num(self.estimate),
            "se": _num(self.se),
            "df": _num(self.df),
            "runs": [p.to_json() for p in self.pairs],
        }


def compare(
    a: Side, b: Side, grid: Grid, metrics: list[str], confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, Found]]:
    """{metric: {name: Found}} of sides A and B of the same duet runs (run i of A and run i of B are
    one run's two sides, windows aligned), seeded."""
    rng = np.random.default_rng(seed)
    # Every row is judged, so every row's CI takes its share of 1 - CONFIDENCE, two-sided (weighted
    # Bonferroni, as the history gate shares its alpha): the whole table calls anything at all
    # (regressed or improved) in at most 1 - CONFIDENCE of A/A duets, not each row.
    shares = row_alphas(grid.names, metrics, (1 - confidence) / 2)
    out: dict[str, dict[str, Found]] = {}
    for metric in metrics:
        q = PERCENTILES[metric]
        out[metric] = {}
        for name in grid.names:
            cols = grid.columns[name]
            values = grid.values[cols]
            pairs = [
                pair(ra.hist[:, cols], rb.hist[:, cols], values, q, rng)
                for ra, rb in zip(a.runs, b.runs, strict=True)
            ]
            used = [
                paired_windows(ra.hist[:, cols], rb.hist[:, cols])
                for ra, rb in zip(a.runs, b.runs, strict=True)
            ]
            merged_a = sum(
                (ra.hist[rows][:, cols].sum(axis=0) for ra, rows in zip(a.runs, used, strict=True))
            )
            merged_b = sum(
                (rb.hist[rows][:, cols].sum(axis=0) for rb, rows in zip(b.runs, used, strict=True))
            )
            (base,) = percentiles_of(np.atleast_2d(merged_a), values, [q])
            (cand,) = percentiles_of(np.atleast_2d(merged_b), values, [q])
            base_ms, cand_ms = float(base[0]), float(cand[0])
            estimate = math.log(cand_ms / base_ms) if base_ms > 0 and cand_ms > 0 else math.nan
            se, df = combine(pairs)
            low, high = interval(estimate, se, df, 1 - 2 * shares[(name, metric)])
            diff = Difference(
                base_ms, cand_ms, cand_ms - base_ms, base_ms * math.expm1(low), base_ms * math.expm1(high)
            )
            out[metric][name] = Found(diff, estimate, se, df, pairs)
    return out
