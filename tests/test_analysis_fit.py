"""Fitting math on synthetic throughputs (the ONLY synthetic numbers in the analysis tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from swarmbench.analysis.scaling import FitError, fit_amdahl, fit_usl

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

N = np.repeat(np.arange(1, 9), 3)  # N = 1..8, 3 repeats each
GAMMA = 480.0
NOISE = 0.03  # 3 % multiplicative noise per run


def amdahl(n, s, gamma=GAMMA):
    return gamma * n / (1 + s * (n - 1))


def usl(n, a, b, gamma=GAMMA):
    return gamma * n / (1 + a * (n - 1) + b * n * (n - 1))


def noisy(x, seed):
    return x * (1 + NOISE * np.random.default_rng(seed).standard_normal(x.shape))


@pytest.mark.parametrize("s", [0.1, 0.3, 0.6])
def test_amdahl_recovers_serial_fraction(s):
    fit = fit_amdahl(N, noisy(amdahl(N, s), seed=1234))
    assert fit.serial_fraction == pytest.approx(s, abs=0.03)
    lo, hi = fit.ci95
    assert lo <= s <= hi and hi - lo < 0.1  # covers, and is not vacuously wide
    assert fit.gamma == pytest.approx(GAMMA, rel=0.04)
    assert fit.gamma_ci95[0] <= GAMMA <= fit.gamma_ci95[1]
    assert fit.max_speedup == pytest.approx(1 / fit.serial_fraction)
    assert fit.dof == len(N) - 2 and fit.distinct_workers == 8


@pytest.mark.parametrize("s", [0.1, 0.3, 0.6])
def test_amdahl_interval_coverage_is_near_95_percent(s):
    seeds = range(40)
    covered = sum(lo <= s <= hi for lo, hi in (fit_amdahl(N, noisy(amdahl(N, s), k)).ci95 for k in seeds))
    assert covered >= 34  # 85 %: the linearised interval is approximate, but not far off


@pytest.mark.parametrize(("a", "b"), [(0.05, 0.002), (0.1, 0.02), (0.3, 0.01)])
def test_usl_recovers_contention_and_coherency(a, b):
    fit = fit_usl(N, noisy(usl(N, a, b), seed=99))
    assert fit.alpha == pytest.approx(a, abs=0.05)
    assert fit.beta == pytest.approx(b, abs=0.006)
    assert fit.alpha_ci95[0] <= a <= fit.alpha_ci95[1]
    assert fit.beta_ci95[0] <= b <= fit.beta_ci95[1]
    assert fit.gamma == pytest.approx(GAMMA, rel=0.05)
    true_peak = math.sqrt((1 - a) / b)
    assert fit.peak_workers == pytest.approx(math.sqrt((1 - fit.alpha) / fit.beta))
    if true_peak < 12:  # a peak near the measured range is pinned down well
        assert fit.peak_workers == pytest.approx(true_peak, rel=0.25)


def test_exact_data_gives_exact_parameters():
    fit = fit_usl(N, usl(N, 0.2, 0.01))
    assert (fit.alpha, fit.beta) == pytest.approx((0.2, 0.01), abs=1e-6)
    assert fit_amdahl(N, amdahl(N, 0.25)).serial_fraction == pytest.approx(0.25, abs=1e-8)


def test_perfect_scaling_sits_on_the_bound():
    fit = fit_amdahl(N, GAMMA * N.astype(float))
    assert fit.serial_fraction == pytest.approx(0.0, abs=1e-6)
    assert math.isinf(fit.max_speedup) and fit.to_dict()["max_speedup"] is None
    assert fit_usl(N, GAMMA * N.astype(float)).peak_workers is None


def test_too_few_distinct_worker_counts():
    with pytest.raises(FitError, match="Amdahl needs at least 2"):
        fit_amdahl([2, 2, 2], [100, 101, 99])
    with pytest.raises(FitError, match="USL needs at least 3"):
        fit_usl([1, 2, 1, 2], [100, 150, 101, 149])


def test_no_interval_without_spare_points():
    fit = fit_amdahl([1, 2], [100, 150])
    assert fit.ci95 is None and fit.dof == 0
    assert fit.serial_fraction == pytest.approx(1 / 3, abs=1e-6)  # 2/(1+s) = 1.5


def test_bad_throughput_is_refused():
    with pytest.raises(FitError, match="> 0"):
        fit_amdahl([1, 2, 3], [100, 0, 120])
