"""The sequential A/B's statistic (compare/sequential.py) on synthetic pairs with a known truth:
the constant's repeated intervals hold the truth at every look at once, the whole procedure (a look
after every pair, several gated rows) raises a false alarm in at most 5 % of A/A sequences while a
naive design (a 95 % t interval at every look) does not, and a +10 % change at 3 % per-pair noise is
called `regressed` within 10 pairs 9 times in 10."""

from __future__ import annotations

import math

import numpy as np
import pytest

from swarmbench.compare import sequential as S
from swarmbench.compare.history_stats import row_alphas
from swarmbench.compare.stats import t_quantile
from swarmbench.core.checks import AGGREGATED, IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED
from swarmbench.runner import ab

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

SEQUENCES = 5000
"""Simulated sequences of the false-alarm figure: a 5 % rate has a Monte Carlo SD of 0.3 % here."""

FALSE_ALARM_LIMIT = 0.065
"""5 % plus ~3 Monte Carlo SDs: what an honest 5 % design stays under and a naive one does not."""


def running(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sequence (rows) and look (columns, k = 1..K): the mean, SD and pair count of d_1..d_k."""
    n = np.arange(1, d.shape[-1] + 1, dtype=float)
    mean = np.cumsum(d, axis=-1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (np.cumsum(d * d, axis=-1) - n * mean**2) / (n - 1)
    return mean, np.sqrt(np.maximum(var, 0)), n


def regressed_ever(d: np.ndarray, c_of_look: np.ndarray, min_effect: float, first: int) -> np.ndarray:
    """Whether a design that looks after every pair from FIRST on, with C_OF_LOOK[k-1] at look k,
    calls the row `regressed` at some look (its interval's low end beyond the band): [sequences]."""
    mean, sd, n = running(d)
    low = mean - c_of_look * np.maximum(sd, 1e-3) / np.sqrt(n)
    return (low > math.log1p(min_effect))[..., first - 1 :].any(axis=-1)


@pytest.mark.parametrize("pairs", [3, 5, 10, 20])
def test_the_repeated_intervals_hold_the_truth_at_every_look_at_once(pairs):
    # Heavy-ish noise (Student t with 4 degrees of freedom, scaled to 5 %) around a true +7 %.
    rng = np.random.default_rng(pairs)
    truth = math.log(1.07)
    d = truth + 0.05 / math.sqrt(2) * rng.standard_t(4, size=(4000, pairs))
    c = S.constant(pairs, 0.025)  # 95 % two-sided
    mean, sd, n = running(d)
    half = c * sd / np.sqrt(n)
    held = (np.abs(mean - truth) <= half)[:, S.FIRST_LOOK - 1 :].all(axis=1)
    assert held.mean() >= 0.94, (pairs, held.mean(), c)  # 95 % less ~3 Monte Carlo SDs
    # ... and no wider than it must be: at 99 % the same intervals are too narrow for ~99 % data.
    assert held.mean() <= 0.975, held.mean()


def test_the_constant_grows_with_the_looks_and_the_rows():
    c = {k: S.constant(k, 0.025) for k in (3, 5, 10, 20)}
    assert c[3] < c[5] < c[10] <= c[20] + 0.05, c
    # One look (K = first): the t quantile itself, up to the Monte Carlo error.
    assert S.constant(3, 0.025) == pytest.approx(t_quantile(0.975, 2), rel=0.03)
    # A smaller share of alpha (more gated rows): a larger constant.
    assert S.constant(10, 0.025 / 6) > S.constant(10, 0.025)
    # From 5 pairs on, the 2-degree-of-freedom first looks are gone: a much smaller constant.
    assert S.constant(10, 0.025, first=5) < 0.75 * c[10]
    # K: what the budget buys at the first pair's time (the runner's, which cannot import numpy).
    assert ab.planned_pairs(300, 50, S.FIRST_LOOK) == 6 and ab.planned_pairs(300, 200, 3) == 3
    assert ab.planned_pairs(3600, 1, 3) == S.MAX_PAIRS == ab.MAX_PAIRS and ab.FIRST_LOOK == S.FIRST_LOOK


def test_identical_sides_raise_at_most_five_percent_false_alarms_a_naive_design_far_more():
    # Looks after every pair, 10 pairs, 4 gated rows (Aggregated and one name x p50, p95) whose
    # differences are correlated (one run's noise moves all its figures), band 0: the worst case
    # (a band only makes `regressed` rarer).
    rows = [(n, m) for n in ("GET /albums", AGGREGATED) for m in ("p50", "p95")]
    alphas = row_alphas([AGGREGATED, "GET /albums"], ["p50", "p95"], 0.05)
    pairs, rng = 10, np.random.default_rng(7)
    shared = rng.standard_normal((SEQUENCES, 1, pairs))
    d = 0.04 * (0.6 * shared + 0.8 * rng.standard_normal((SEQUENCES, len(rows), pairs)))
    sequential = np.stack([np.full(pairs, S.constant(pairs, alphas[key])) for key in rows])  # rows x looks
    naive = np.array([t_quantile(0.975, max(k - 1, 1)) for k in range(1, pairs + 1)])
    fa_sequential = regressed_ever(d, sequential, 0.0, S.FIRST_LOOK).any(axis=1).mean()
    fa_naive = regressed_ever(d, naive, 0.0, S.FIRST_LOOK).any(axis=1).mean()
    assert fa_sequential <= FALSE_ALARM_LIMIT, fa_sequential
    assert fa_naive > FALSE_ALARM_LIMIT, fa_naive  # the assert above would catch a design without c
    # The module's look() takes the same decisions as the vectorised simulation above.
    for i in range(40):
        state = S.look(
            {key: d[i, j] for j, key in enumerate(rows)}, max_pairs=pairs, alphas=alphas, min_effect=0.0
        )
        expected = regressed_ever(d[i], sequential, 0.0, pairs)  # the last look only
        assert [r.verdict == REGRESSED for r in state.rows] == list(expected), i


def sequence(effect: float, sigma: float, pairs: int, seed: int, min_effect: float = 0.05):
    """One simulated sequential A/B of one row (Aggregated p95): looks after every pair from the
    first look, stops when decisive; (the verdict, the pairs used)."""
    rng = np.random.default_rng(seed)
    d = math.log1p(effect) + sigma * rng.standard_normal(pairs)
    alphas = {(AGGREGATED, "p95"): 0.05}
    for k in range(1, pairs + 1):
        state = S.look({(AGGREGATED, "p95"): d[:k]}, max_pairs=pairs, alphas=alphas, min_effect=min_effect)
        if state.decided:
            return state.rows[0].verdict, k
    return state.rows[0].verdict, pairs


def test_a_ten_percent_slowdown_is_called_regressed_within_ten_pairs_nine_times_in_ten():
    found = [sequence(0.10, 0.03, 10, seed) for seed in range(600)]
    called = sum(v == REGRESSED for v, _ in found) / len(found)
    assert called >= 0.90, called
    assert not any(v == IMPROVED for v, _ in found)
    # It stops early when it can: most sequences need fewer than all 10 pairs.
    assert np.median([k for _, k in found]) < 10


def test_identical_sides_end_in_no_change_when_the_noise_allows():
    found = [sequence(0.0, 0.01, 10, seed) for seed in range(200)]
    assert sum(v == NO_CHANGE for v, _ in found) / len(found) >= 0.9
    assert not any(v == REGRESSED for v, _ in found)


def test_a_look_reports_what_it_can_catch_and_the_pairs_it_needs():
    key = (AGGREGATED, "p95")
    rng = np.random.default_rng(3)
    d = math.log(1.08) + 0.05 * rng.standard_normal(4)
    state = S.look({key: d}, max_pairs=20, alphas={key: 0.025}, min_effect=0.05, baselines={key: 20.0})
    row = state.rows[0]
    assert state.looked and row.pairs == 4 and row.verdict == INCONCLUSIVE
    assert row.catch(0.05) == pytest.approx(math.expm1(math.log(1.05) + row.half))
    # The pairs needed put the half-width under the gap between the estimate and the band's edge.
    n = row.needed
    assert n is not None and n > 4
    assert row.c * row.sd / math.sqrt(n) <= abs(row.mean - math.log(1.05)) < row.c * row.sd / math.sqrt(n - 1)
    # In the metric's unit around A's level: 20 ms.
    diff = row.difference()
    assert diff.baseline == 20.0 and diff.low == pytest.approx(20 * row.low)
    # Before the first look: no interval, no estimate of the pairs needed.
    early = S.look({key: d[:2]}, max_pairs=20, alphas={key: 0.025}, min_effect=0.05)
    assert not early.looked and early.needed is None and math.isnan(early.rows[0].half)
    js = state.to_json()
    assert js["pairs"] == 4 and js["rows"][0]["verdict"] == INCONCLUSIVE and js["rows"][0]["c"] > 0


def test_bad_designs_are_refused():
    with pytest.raises(ValueError):
        S.constant(2, 0.05, first=3)
    with pytest.raises(ValueError):
        S.constant(S.MAX_PAIRS + 1, 0.05)
