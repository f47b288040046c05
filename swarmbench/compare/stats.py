"""The statistics of a comparison: point estimates from merged histograms, a two-stage block bootstrap,
the run-to-run noise, and the t and F quantiles they need. Pure numpy: no files, no HDR objects.

Method (one line, also printed by the report): METHOD below. The verdict on the difference it
gives is core/checks.py's (`verdict`).

A side is one or more runs (repeats). Each run is a matrix of per-window histograms over a bucket
grid shared by both sides: row = one 1 s window, column = one latency bucket (its value: the bucket's
highest equivalent value, as HdrHistogram reports a percentile), plus per-window request and
failure counts. Merging windows is adding rows, exactly as HDR histograms add: so the point
estimate of a side is the percentile of the sum of all its windows, and a bootstrap replicate is
the percentile of a weighted sum of rows (a matrix product: every replicate of every request name
in one BLAS call).

Quantiles of Student's t and Fisher's F are computed here with the standard library: scipy.special
would cost the compare command 0.4 s of import. Both are tested against scipy.stats
(tests/test_compare_stats.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from statistics import NormalDist

import numpy as np

from swarmbench.core.checks import AGGREGATED, band
from swarmbench.latency.windows import WINDOW_S

# --- Student's t and Fisher's F quantiles (standard library) --------------------------------------


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (0.5 < P < 1) at real DF >= 1, stdlib only: scipy.special would cost the
    CLI 0.4 s of import. Hill (1970), CACM Algorithm 396: exact at 1 and 2 degrees of freedom, within
    0.1 % of scipy.stats.t from 2 on; between 1 and 2 up to 22 % high (a wider interval, the safe
    side). inf: the normal quantile."""
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    n, tail = max(df, 1.0), 2 * (1 - p)  # Hill's P is the two-sided tail
    if n == 1:
        return 1 / math.tan(tail * math.pi / 2)
    if n == 2:
        return math.sqrt(2 / (tail * (2 - tail)) - 2)
    a = 1 / (n - 0.5)
    b = 48 / a**2
    c = ((20700 * a / b - 98) * a - 16) * a + 96.36
    d = ((94.5 / (b + c) - 3) / b + 1) * math.sqrt(a * math.pi / 2) * n
    y = (d * tail) ** (2 / n)
    if y > 0.05 + a:  # the normal-quantile branch (Hill's asymptotic expansion)
        x = NormalDist().inv_cdf(tail / 2)
        y = x * x
        if n < 5:
            c += 0.3 * (n - 4.5) * (x + 0.6)
        c = (((0.05 * d * x - 5) * x - 7) * x - 2) * x + b + c
        y = (((((0.4 * y + 6.3) * y + 36) * y + 94.5) / c - y - 3) / b + 1) * x
        y = math.expm1(a * y * y)
    else:
        y = ((1 / (((n + 6) / (n * y) - 0.089 * d - 0.822) * (n + 2) * 3) + 0.5 / (n + 4)) * y - 1) * (
            n + 1
        ) / (n + 2) + 1 / y
    return math.sqrt(n * y)


def f_quantile(p: float, d1: float, d2: float) -> float:
    """The F distribution's P quantile with (D1, D2) degrees of freedom, stdlib only (scipy's import
    costs the CLI 0.4 s): its CDF is the regularized incomplete beta I_{d1 x / (d1 x + d2)}(d1/2,
    d2/2), inverted by bisection. Tested against scipy.stats.f."""
    lo, hi = 0.0, 1.0
    while _f_cdf(hi, d1, d2) < p:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _f_cdf(mid, d1, d2) < p else (lo, mid)
        if hi - lo < 1e-10 * hi:
            break
    return (lo + hi) / 2


def _f_cdf(x: float, d1: float, d2: float) -> float:
    return _beta_inc(d1 / 2, d2 / 2, d1 * x / (d1 * x + d2)) if x > 0 else 0.0


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b): Lentz's continued fraction (Numerical Recipes
    6.4, betacf), on the side of x where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _beta_inc(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for k in range(1, 300):
        for num in (k * (b - k) * x / ((a + 2 * k - 1) * (a + 2 * k)),
                    -(a + k) * (a + b + k) * x / ((a + 2 * k) * (a + 2 * k + 1))):  # fmt: skip
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-14:
            break
    return front * h / a


# --- the bootstrap and the interval ---------------------------------------------------------------

METHOD = (
    "two-stage block bootstrap: resample repeats, then circular blocks of consecutive 1 s windows "
    "within each run; merge the drawn windows' histograms; Bessel-corrected spread; a single run's "
    "side widened by the run-to-run noise; with repeats and an A/A calibration of other runs, the "
    "runs' spread pooled with the calibration's unless an F-test (5 %) says they are noisier, never "
    "below their own; percentile CI of the difference, widened by Student's t over z at the Welch "
    "degrees of freedom of the run-to-run spread; each row's level set by max-T over the joint "
    "replicates (Aggregated's rows half of 1 - the confidence, the names' the rest) so that the whole "
    "table calls a change that is not there (estimate past the band and CI past 0) in at most "
    "1 - the confidence of comparisons, not each row"
)
"""The method in one line, for the terminal table, compare.json and the HTML report."""

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}

BOOTSTRAP = 2000
"""Replicates: a 95 % percentile interval rests on the 50 replicates beyond each end; 2000 keeps
the Monte-Carlo error of its ends under ~0.5 % of their width (Efron & Tibshirani: 1000-2000 for
intervals), and two 10-minute runs still bootstrap in well under a second."""


def block_length(n_windows: int) -> int:
    """Windows per bootstrap block: ceil(sqrt(n)).

    Why: per-window latency is autocorrelated (a GC pause, a noisy neighbour or a slow disk spans
    seconds), and resampling single windows would treat them as independent and make the interval
    too narrow. Blocks keep runs of consecutive windows together. The MSE-optimal length for a
    variance grows like n^(1/3) (Hall, Horowitz & Jing 1995); sqrt(n) is longer, so it keeps
    longer-range dependence (a slow drift over a minute) at the price of a slightly wider
    interval: the conservative choice for a tool whose false alarm fails a build. 20 windows -> 5,
    600 windows (10 minutes) -> 25 s blocks."""
    return max(1, math.ceil(math.sqrt(n_windows)))


@dataclass
class Run:
    """One run's windows for every series (request name) of a comparison, on the shared grids.

    `hist` is (windows, all columns): each series' buckets side by side (`columns[name]` its slice),
    `requests`/`failures` are (windows, series) in `names` order."""

    hist: np.ndarray
    requests: np.ndarray
    failures: np.ndarray

    @property
    def windows(self) -> int:
        return self.hist.shape[0]


@dataclass
class Grid:
    """The series compared and their bucket values: `values[columns[name]]` are NAME's buckets (ms)."""

    names: list[str]
    columns: dict[str, slice]
    values: np.ndarray

    def series(self, name: str) -> int:
        return self.names.index(name)


@dataclass
class Side:
    """A side's runs on the shared grid, and the run-to-run noise folded into its replicates
    (`noise[metric]`: excess relative standard deviation between identical runs; noise.py): a side of
    one run takes it whole, a side of repeats pools it with its runs' own spread (pooled())."""

    runs: list[Run]
    noise: dict[str, float] = field(default_factory=dict)
    noise_runs: int = 0
    """Identical runs the calibration in `noise` was measured on, none of them this side's: its
    run-to-run spread then has noise_runs - 1 degrees of freedom of its own to pool (pooled()).
    0: the default noise or a calibration that includes this side's runs, used for one run only."""

    @cached_property
    def merged(self) -> Run:
        """All windows of all runs, one run (the point estimates' input)."""
        return Run(
            np.vstack([r.hist for r in self.runs]),
            np.vstack([r.requests for r in self.runs]),
            np.vstack([r.failures for r in self.runs]),
        )


def percentiles_of(hists: np.ndarray, values: np.ndarray, ps: list[float]) -> list[np.ndarray]:
    """Each P-th percentile of each row of HISTS (replicates x buckets), HdrHistogram's rule: the
    value of the first bucket whose cumulative count reaches max(1, round(p/100 * total)); NaN for
    an empty row. One cumulative sum serves every P."""
    cum = np.cumsum(hists, axis=1)
    total = cum[:, -1]
    out = []
    for p in ps:
        target = np.maximum(np.floor(p * total / 100 + 0.5), 1)
        index = np.minimum((cum < target[:, None]).sum(axis=1), len(values) - 1)
        out.append(np.where(total > 0, values[index], np.nan))
    return out


def statistics(
    weights: np.ndarray, side: Side, grid: Grid, metrics: list[str], windows: np.ndarray
) -> dict[str, dict[str, np.ndarray]]:
    """{metric: {name: values}}, one value for each row of WEIGHTS (replicates x all the side's
    windows: how often each window was drawn); WINDOWS is each replicate's window count."""
    merged = side.merged
    out: dict[str, dict[str, np.ndarray]] = {m: {} for m in metrics}
    wanted = [m for m in metrics if m in PERCENTILES]
    hists = weights @ merged.hist if wanted else None  # one product for every series
    requests = weights @ merged.requests
    failures = weights @ merged.failures
    for i, name in enumerate(grid.names):
        if hists is not None:
            cols = grid.columns[name]
            found = percentiles_of(hists[:, cols], grid.values[cols], [PERCENTILES[m] for m in wanted])
            out.update({m: {**out[m], name: v} for m, v in zip(wanted, found, strict=True)})
        if "throughput" in out:
            out["throughput"][name] = requests[:, i] / windows / WINDOW_S
        if "error_rate" in out:
            shown = requests[:, i] > 0
            rate = np.divide(failures[:, i], requests[:, i], out=np.full(len(windows), np.nan), where=shown)
            out["error_rate"][name] = rate
    return out


def point(side: Side, grid: Grid, metrics: list[str]) -> dict[str, dict[str, float]]:
    """{metric: {name: value}} over every window of the side merged (exact: the histograms' sum)."""
    n = sum(r.windows for r in side.runs)
    found = statistics(np.ones((1, n)), side, grid, metrics, np.array([float(n)]))
    return {m: {name: float(v[0]) for name, v in values.items()} for m, values in found.items()}


def run_offsets(lengths: list[int]) -> np.ndarray:
    """Where each run's windows begin in a side's rows (Side.merged: runs one after another)."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)


def resample(side: Side, replicates: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Weights (replicates x windows) of a two-stage bootstrap: draw as many runs as the side has,
    with replacement; in each drawn run, circular blocks of block_length() consecutive windows up to
    the run's length. Also each replicate's window count (runs differ in length)."""
    lengths = [r.windows for r in side.runs]
    offsets = run_offsets(lengths)
    total = int(sum(lengths))
    counts = np.zeros(replicates * total, dtype=np.int64)
    windows = np.zeros(replicates)
    picks = rng.integers(0, len(lengths), size=(replicates, len(lengths)))
    for run, n in enumerate(lengths):
        rows = np.nonzero(picks == run)[0]  # one entry per time the run was drawn
        if not len(rows):
            continue
        size = block_length(n)
        blocks = math.ceil(n / size)
        starts = rng.integers(0, n, size=(len(rows), blocks))
        drawn = ((starts[:, :, None] + np.arange(size)) % n).reshape(len(rows), -1)[:, :n]
        flat = rows[:, None] * total + offsets[run] + drawn
        counts += np.bincount(flat.ravel(), minlength=replicates * total)
        windows += np.bincount(rows, minlength=replicates) * n
    return counts.reshape(replicates, total).astype(np.float64), windows


def bootstrap(
    side: Side, grid: Grid, metrics: list[str], replicates: int, rng: np.random.Generator
) -> dict[str, dict[str, np.ndarray]]:
    """{metric: {name: replicate values}} of one side. Spread by small_sample_correction(); a side
    of ONE run also gets its run-to-run noise folded in, each replicate times (1 + noise * Z), Z
    standard normal: one run cannot show how identical runs differ (noise.py)."""
    weights, windows = resample(side, replicates, rng)
    out = statistics(weights, side, grid, metrics, windows)
    stretch = small_sample_correction(side)
    for metric in metrics:
        out[metric] = {name: stretched(v, stretch) for name, v in out[metric].items()}
        sigma = side.noise.get(metric, 0.0) if len(side.runs) == 1 else 0.0
        if sigma > 0:
            factor = 1 + sigma * rng.standard_normal(replicates)
            out[metric] = {name: v * factor for name, v in out[metric].items()}
    return out


def small_sample_correction(side: Side) -> float:
    """sqrt(m / (m - 1)), m the side's blocks in all, or its runs when it has several: a bootstrap's
    variance is the plug-in variance over what it resamples, (m - 1)/m of the unbiased one (Bessel's
    correction). A 15 s run has 4 blocks (13 % too narrow uncorrected); 3 repeats, 22 %. Runs
    dominate when there are several: between-run spread is the larger part on a shared machine."""
    blocks = sum(math.ceil(r.windows / block_length(r.windows)) for r in side.runs)
    m = len(side.runs) if len(side.runs) > 1 else blocks
    return math.sqrt(m / (m - 1)) if m > 1 else 1.0


def stretched(values: np.ndarray, factor: float) -> np.ndarray:
    """VALUES spread FACTOR times as far from their median (NaN kept)."""
    if factor == 1.0 or not np.isfinite(values).any():
        return values
    centre = np.nanmedian(values)
    return centre + (values - centre) * factor


@dataclass(frozen=True)
class Difference:
    """Candidate minus baseline: both values, the difference, its interval, the relative change."""

    baseline: float
    candidate: float
    diff: float
    low: float
    high: float

    @property
    def relative(self) -> float | None:
        return self.diff / self.baseline if self.baseline else None


def per_run(side: Side, grid: Grid, metrics: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """{metric: {name: one value per run}}: each run's own point estimate (rows of 0/1 weights)."""
    lengths = [r.windows for r in side.runs]
    weights = np.zeros((len(lengths), sum(lengths)))
    for i, start in enumerate(run_offsets(lengths)):
        weights[i, start : start + lengths[i]] = 1.0
    return statistics(weights, side, grid, metrics, np.array(lengths, dtype=float))


def between_runs(values: np.ndarray) -> float:
    """The spread of a side's mean that its runs' own values show: s^2 / m (0 below two runs)."""
    values = values[np.isfinite(values)]
    return float(np.var(values, ddof=1)) / len(values) if len(values) > 1 else 0.0


def welch_df(sides: list[tuple[np.ndarray, float, float]]) -> float:
    """Welch-Satterthwaite degrees of freedom of the difference, from each side's (replicates,
    run-to-run part B, B's degrees of freedom).

    A side's bootstrap variance V holds two parts: window-to-window noise within its runs, estimated
    from many blocks (as good as known), and run-to-run spread B, estimated from its m runs (m - 1
    degrees of freedom, more when pooled with a calibration; B is at most V). So
    df = (V_base + V_cand)^2 / sum(B^2 / df_B): df_B per side when runs differ more than their
    windows do (the usual case on a shared machine), large when runs agree and the windows carry
    the noise. A side of one run adds none (df_B 0): its run-to-run spread is the calibrated noise
    term, not estimated from these runs. inf when nothing is."""
    spread = [(float(np.nanvar(reps)), b, df) for reps, b, df in sides]
    bottom = sum(min(b, v) ** 2 / df for v, b, df in spread if df > 0)
    return sum(v for v, _, _ in spread) ** 2 / bottom if bottom > 0 else math.inf


POOL_TEST = 0.05
"""A side's repeats are pooled with the calibration unless their spread exceeds its at this level
(F-test): a change that made the service noisier keeps its own, larger spread."""


def pooled(side: Side, metric: str, reps: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(replicates, run-to-run part of their variance, its degrees of freedom) of one side, metric
    and name: REPS and RUNS (one value per run) as they are, unless the side has repeats and a
    calibration of other runs (noise_runs), whose spread then joins its runs' own.

    Why: with 3 runs a side the spread between runs is estimated from 2 degrees of freedom, and an
    honest interval pays for that with t(4) = 2.78 instead of 1.96. An A/A calibration of this
    machine and load on n other runs knows the same spread with n - 1 more. Per run, the
    calibrated variance is the calibration's excess noise (its relative SD times this side's
    value) plus this side's own window-to-window part w; the pooled variance weights it and the
    runs' own by their degrees of freedom (the textbook pooled variance), and the side's mean
    varies by that over m. The blocks' extra spread in REPS is w again (a run's value already
    holds its windows' noise): here it is counted once. Pooling is skipped when the runs are
    noisier than calibrated (F-test at POOL_TEST), and the pooled variance is never below the runs'
    own, so a calibration buys degrees of freedom, never a smaller spread than the runs show.
    tests/test_compare_stats.py measures coverage, false alarms and power with and without it."""
    values = runs[np.isfinite(runs)]
    m = len(values)
    if m < 2:
        return reps, 0.0, 0.0
    own = between_runs(values)
    sigma = side.noise.get(metric, 0.0)
    total = float(np.nanvar(reps))
    if side.noise_runs < 2 or not total > 0:
        return reps, own, float(m - 1)
    # The bootstrap's variance is ~ s^2 / m + w / (m - 1) (runs resampled and Bessel-corrected,
    # then each drawn run's blocks): what it holds beyond the runs' own values is w / (m - 1).
    within = max(0.0, total - own) * (m - 1)
    calibrated = (sigma * float(np.mean(values))) ** 2 + within  # one run's variance, as calibrated
    sample, df_cal = own * m, side.noise_runs - 1
    if calibrated <= 0 or sample > f_quantile(1 - POOL_TEST, m - 1, df_cal) * calibrated:
        return reps, own, float(m - 1)
    run_part = max(sample, ((m - 1) * sample + df_cal * calibrated) / (m - 1 + df_cal)) / m
    return stretched(reps, math.sqrt(run_part / total)), run_part, float(m - 1 + df_cal)


def interval(
    base: np.ndarray, cand: np.ndarray, confidence: float, df: float = math.inf
) -> tuple[float, float]:
    """Percentile interval of the replicate differences (replicates with an empty side dropped),
    spread around their median by t(DF) / z.

    Why: the bootstrap's spread over m repeats estimates the run-to-run variance from m values; a
    percentile interval treats that estimate as exact, which is the normal interval's z where
    Student's t belongs. With 3 runs a side (df ~ 4) the uncorrected 95 % interval held the true
    difference in 88 % of A/A draws of real runs here (bench/bench_compare.py); t/z = 1.42 widens it
    to what it says. From 10 runs a side the factor is under 1.07."""
    diffs = cand - base
    diffs = diffs[~np.isnan(diffs)]
    if not len(diffs):
        return math.nan, math.nan
    q = 1 - (1 - confidence) / 2
    # Beyond 95 % the percentile would rest on a handful of replicates (a simultaneous row's 99.7 %:
    # 3 of 2000): the 95 % ends are taken instead, stretched to the wanted level as t(q) / z(0.975).
    q0 = min(q, PERCENTILE_LEVEL)
    diffs = stretched(diffs, t_quantile(q, df) / NormalDist().inv_cdf(q0))
    tail = (1 - q0) * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(low), float(high)


PERCENTILE_LEVEL = 0.975
"""The highest percentile of the replicates an interval's end is read at (interval): 50 of the 2000
replicates lie beyond it. A wider interval is that one stretched about the median by t(q) / z."""


AGGREGATED_SHARE = 0.5
"""The part of a comparison's alpha Aggregated's rows share, in compare's table and in the history
gate (the request names' rows share the rest): the whole run's figures are what a regression moves
first and most surely, and with 10 names a uniform share would leave each Aggregated row 1/66 of
alpha."""


def aggregated_share(names: Sequence[str]) -> float:
    """The part of a comparison's alpha Aggregated's rows take among NAMES: AGGREGATED_SHARE when
    request names are there too, else all of it to whichever group is there (compare's table and the
    history gate's row_alphas split alike)."""
    whole, parts = AGGREGATED in names, any(n != AGGREGATED for n in names)
    return AGGREGATED_SHARE if whole and parts else 1.0 if whole else 0.0


def simultaneous(
    diffs: list[np.ndarray], confidence: float, bands: list[float] | None = None, least: float | None = None
) -> float:
    """The confidence each row's interval needs for the whole table to call a change that is not
    there in at most 1 - CONFIDENCE of comparisons (max-T, Westfall & Young, over the verdict's own
    rule): each row's replicate differences minus their median are how its estimate strays from the
    truth; a row strays into a false verdict when that is beyond its BAND (core/checks.py band: the
    estimate must pass it too, as ASV's rule asks) and beyond c of its SDs (its interval then
    excludes 0). c is the CONFIDENCE quantile of each replicate's largest such |z| over all rows, and
    the row level returned is the two-sided normal level of c, never below LEAST (CONFIDENCE unless
    given; one row, or bands wide against the noise: about CONFIDENCE, or LEAST).

    Why not Bonferroni: a table's rows move together (a name's p50, p90 and p95, Aggregated and its
    names come from the same drawn windows), and the joint replicates know by how much; and where
    the band alone keeps a row from a false verdict, its interval need not widen. Rows without
    spread (no failures on either side) or replicates are left out: their interval is a point."""
    z = []
    for i, d in enumerate(diffs):
        if not np.isfinite(d).sum() > 1:
            continue
        sd = float(np.nanstd(d, ddof=1))
        if not sd > 0:
            continue
        stray = np.abs(d - np.nanmedian(d))
        edge = bands[i] if bands is not None and math.isfinite(bands[i]) else 0.0
        z.append(np.where(stray > edge, stray / sd, 0.0))  # NaN stays NaN (np.where keeps it)
    least = confidence if least is None else least
    if not z:
        return least
    largest = np.fmax.reduce(np.vstack(z), axis=0)  # NaN only where every row's is
    largest = largest[np.isfinite(largest)]
    if not len(largest):
        return least
    c = float(np.quantile(largest, confidence))
    return max(least, 2 * NormalDist().cdf(c) - 1)


def compare(
    baseline: Side,
    candidate: Side,
    grid: Grid,
    metrics: list[str],
    confidence: float = 0.95,
    seed: int = 0,
    replicates: int = BOOTSTRAP,
    min_effect: float = 0.0,
) -> dict[str, dict[str, Difference]]:
    """{metric: {name: Difference}}: point estimates and the bootstrap interval, seeded (the
    baseline draws first, then the candidate, from one generator: the same SEED, the same CI). The
    intervals are simultaneous: every row of the table is judged (core/checks.py verdict, with
    MIN_EFFECT's band), so each row's level is the one at which the whole table calls a change that
    is not there in at most 1 - CONFIDENCE of comparisons, not each row."""
    rng = np.random.default_rng(seed)
    base_boot = bootstrap(baseline, grid, metrics, replicates, rng)
    cand_boot = bootstrap(candidate, grid, metrics, replicates, rng)
    base_point, cand_point = point(baseline, grid, metrics), point(candidate, grid, metrics)
    base_runs, cand_runs = per_run(baseline, grid, metrics), per_run(candidate, grid, metrics)
    rows = {}
    for metric in metrics:
        for name in grid.names:
            b_reps, b_run, b_df = pooled(baseline, metric, base_boot[metric][name], base_runs[metric][name])
            c_reps, c_run, c_df = pooled(candidate, metric, cand_boot[metric][name], cand_runs[metric][name])
            rows[(metric, name)] = (b_reps, c_reps, welch_df([(b_reps, b_run, b_df), (c_reps, c_run, c_df)]))
    # Aggregated's rows take AGGREGATED_SHARE of 1 - CONFIDENCE, the names' rows the rest (as the
    # history gate shares its alpha): a name's p99 of a few requests is noisy against its band, and
    # in one family it would widen the precise whole-run rows as much as its own.
    levels = {}
    groups = [[key for key in rows if (key[1] == AGGREGATED) is whole] for whole in (True, False)]
    share = aggregated_share(grid.names)
    for group, part in zip(groups, (share, 1 - share), strict=True):
        level = simultaneous(
            [rows[key][1] - rows[key][0] for key in group],
            1 - (1 - confidence) * part,
            [band(key[0], base_point[key[0]][key[1]], min_effect) for key in group],
            least=confidence,
        )
        levels.update(dict.fromkeys(group, level))
    out: dict[str, dict[str, Difference]] = {}
    for metric in metrics:
        out[metric] = {}
        for name in grid.names:
            b_reps, c_reps, df = rows[(metric, name)]
            low, high = interval(b_reps, c_reps, levels[(metric, name)], df)
            b, c = base_point[metric][name], cand_point[metric][name]
            if math.isfinite(b):  # every metric is >= 0, so the difference is >= -baseline
                low, high = max(low, -b), max(high, -b)
            out[metric][name] = Difference(b, c, c - b, low, high)
    return out
