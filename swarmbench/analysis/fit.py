"""Scaling laws fitted to throughput X measured at N load generators (repeats as separate points).

    Amdahl: X(N) = γ·N / (1 + s·(N−1))                     s: serial fraction, max speedup 1/s
    USL:    X(N) = γ·N / (1 + α·(N−1) + β·N·(N−1))         α: contention, β: coherency,
                                                            peak at N* = sqrt((1−α)/β)

γ (throughput of one generator) is fitted with the rest instead of being read off a single noisy
N = 1 run, so every point informs the speedup scale.

Method: bounded nonlinear least squares (scipy.optimize.least_squares, trust-region reflective) on
LOG residuals, log X_model − log X_measured. Throughput noise is roughly proportional to
throughput (a few % per run), which log residuals make uniform across N, so the point at 8
generators does not outweigh the point at 1. Parameters are (log γ, s) and (log γ, α, β), with
s, α in [0, 1] and β in [0, 1].

95 % intervals: from the Jacobian at the optimum, cov = σ²·(JᵀJ)⁻¹ with σ² = SSR / (m − p), times
the t-quantile with m − p degrees of freedom; clipped to the parameter bounds. This is the usual
asymptotic (linearised) interval: good with repeats and a few % noise, optimistic when a parameter
sits on a bound. With m = p (no spare points) there is no interval (None).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

AMDAHL_MIN_DISTINCT_N = 2
USL_MIN_DISTINCT_N = 3
_STARTS = (0.02, 0.2, 0.6, 0.95)  # starting serial fractions/contentions: the fit has local minima


class FitError(ValueError):
    """The points cannot support this fit (too few distinct worker counts, bad throughput)."""


Interval = tuple[float, float]


@dataclass(frozen=True)
class AmdahlFit:
    gamma: float
    gamma_ci95: Interval | None
    serial_fraction: float
    ci95: Interval | None
    n_points: int
    distinct_workers: int
    dof: int
    rel_rmse: float  # root mean square of the log residuals ≈ typical relative error

    @property
    def max_speedup(self) -> float:
        """1/s: the ceiling of speedup as N → ∞ (inf when s = 0)."""
        return math.inf if self.serial_fraction <= 0 else 1.0 / self.serial_fraction

    def speedup(self, n: np.ndarray | float) -> np.ndarray:
        n = np.asarray(n, dtype=float)
        return n / (1.0 + self.serial_fraction * (n - 1.0))

    def throughput(self, n: np.ndarray | float) -> np.ndarray:
        return self.gamma * self.speedup(n)

    def to_dict(self) -> dict:
        return {
            "serial_fraction": self.serial_fraction,
            "ci95": _list(self.ci95),
            "gamma": self.gamma,
            "gamma_ci95": _list(self.gamma_ci95),
            "max_speedup": None if math.isinf(self.max_speedup) else self.max_speedup,
            "n_points": self.n_points,
            "dof": self.dof,
            "rel_rmse": self.rel_rmse,
        }


@dataclass(frozen=True)
class USLFit:
    gamma: float
    gamma_ci95: Interval | None
    alpha: float
    alpha_ci95: Interval | None
    beta: float
    beta_ci95: Interval | None
    n_points: int
    distinct_workers: int
    dof: int
    rel_rmse: float

    @property
    def peak_workers(self) -> float | None:
        """N* = sqrt((1−α)/β), where throughput peaks; None when β = 0 (no retrograde region)."""
        if self.beta <= 0 or self.alpha >= 1:
            return None  # α = 1: throughput is flat from N = 1 on (N* would be 0, X(0) = 0/0)
        return math.sqrt(max(1.0 - self.alpha, 0.0) / self.beta)

    def speedup(self, n: np.ndarray | float) -> np.ndarray:
        n = np.asarray(n, dtype=float)
        return n / (1.0 + self.alpha * (n - 1.0) + self.beta * n * (n - 1.0))

    def throughput(self, n: np.ndarray | float) -> np.ndarray:
        return self.gamma * self.speedup(n)

    def to_dict(self) -> dict:
        peak = self.peak_workers
        return {
            "alpha": self.alpha,
            "alpha_ci95": _list(self.alpha_ci95),
            "beta": self.beta,
            "beta_ci95": _list(self.beta_ci95),
            "gamma": self.gamma,
            "gamma_ci95": _list(self.gamma_ci95),
            "peak_workers": peak,
            "peak_rps": float(self.throughput(peak)) if peak is not None else None,
            "n_points": self.n_points,
            "dof": self.dof,
            "rel_rmse": self.rel_rmse,
        }


def _list(ci: Interval | None) -> list[float] | None:
    return None if ci is None else [ci[0], ci[1]]


# --- models in log space: residuals and their analytic Jacobians ---------------------------------


def _amdahl_residuals(p: np.ndarray, n: np.ndarray, log_x: np.ndarray) -> np.ndarray:
    log_gamma, s = p
    return log_gamma + np.log(n) - np.log1p(s * (n - 1.0)) - log_x


def _amdahl_jac(p: np.ndarray, n: np.ndarray, _log_x: np.ndarray) -> np.ndarray:
    _, s = p
    return np.column_stack([np.ones_like(n), -(n - 1.0) / (1.0 + s * (n - 1.0))])


def _usl_residuals(p: np.ndarray, n: np.ndarray, log_x: np.ndarray) -> np.ndarray:
    log_gamma, a, b = p
    return log_gamma + np.log(n) - np.log(1.0 + a * (n - 1.0) + b * n * (n - 1.0)) - log_x


def _usl_jac(p: np.ndarray, n: np.ndarray, _log_x: np.ndarray) -> np.ndarray:
    _, a, b = p
    d = 1.0 + a * (n - 1.0) + b * n * (n - 1.0)
    return np.column_stack([np.ones_like(n), -(n - 1.0) / d, -n * (n - 1.0) / d])


# --- the shared least-squares + interval machinery ------------------------------------------------


@dataclass(frozen=True)
class _Solution:
    params: np.ndarray
    ci: list[Interval] | None
    dof: int
    rel_rmse: float


def _check_points(workers: Sequence[float], throughput: Sequence[float], min_distinct: int, model: str):
    n = np.asarray(workers, dtype=float)
    x = np.asarray(throughput, dtype=float)
    if n.shape != x.shape or n.ndim != 1:
        raise FitError("workers and throughput must be 1-D and the same length")
    if not np.all(np.isfinite(n)) or np.any(n < 1):
        raise FitError("worker counts must be finite and >= 1")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise FitError("throughput must be finite and > 0 at every point")
    distinct = len(np.unique(n))
    if distinct < min_distinct:
        raise FitError(f"{model} needs at least {min_distinct} distinct worker counts, got {distinct}")
    return n, x, distinct


def _solve(
    residuals: Callable,
    jac: Callable,
    starts: list[np.ndarray],
    lower: np.ndarray,
    upper: np.ndarray,
    n: np.ndarray,
    x: np.ndarray,
) -> _Solution:
    from scipy import optimize, stats  # imported here: only fitting needs scipy (CLI start-up time)

    log_x = np.log(x)
    best = None
    for p0 in starts:
        res = optimize.least_squares(
            residuals,
            p0,
            jac=jac,
            bounds=(lower, upper),
            args=(n, log_x),
            method="trf",
            x_scale="jac",
            xtol=1e-12,
            ftol=1e-12,
            gtol=1e-12,
        )
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    # Trust-region reflective iterates stay strictly inside the bounds: a value within 1e-7 of a
    # bound IS the bound (s = 0 means "no serial part", and 1/s must then be infinite, not 2e7).
    params = np.where(np.abs(best.x - lower) < 1e-7, lower, best.x)
    params = np.where(np.abs(params - upper) < 1e-7, upper, params)
    m, p = len(x), len(params)
    dof = m - p
    ssr = float(np.sum(best.fun**2))
    rel_rmse = math.sqrt(ssr / m)
    ci = None
    if dof > 0:
        sigma2 = ssr / dof
        cov = sigma2 * np.linalg.pinv(best.jac.T @ best.jac)
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        t = float(stats.t.ppf(0.975, dof))
        ci = [
            (float(max(v - t * e, lo)), float(min(v + t * e, hi)))
            for v, e, lo, hi in zip(params, se, lower, upper, strict=True)
        ]
    return _Solution(params, ci, dof, rel_rmse)


def _gamma_start(n: np.ndarray, x: np.ndarray) -> float:
    smallest = n == n.min()
    return float(np.log(np.mean(x[smallest]) / n.min()))


def fit_amdahl(workers: Sequence[float], throughput: Sequence[float]) -> AmdahlFit:
    """Fit Amdahl's law; FitError with fewer than 2 distinct worker counts."""
    n, x, distinct = _check_points(workers, throughput, AMDAHL_MIN_DISTINCT_N, "Amdahl")
    g0 = _gamma_start(n, x)
    sol = _solve(
        _amdahl_residuals,
        _amdahl_jac,
        [np.array([g0, s0]) for s0 in _STARTS],
        np.array([-np.inf, 0.0]),
        np.array([np.inf, 1.0]),
        n,
        x,
    )
    log_gamma, s = sol.params
    return AmdahlFit(
        gamma=float(np.exp(log_gamma)),
        gamma_ci95=None if sol.ci is None else (math.exp(sol.ci[0][0]), math.exp(sol.ci[0][1])),
        serial_fraction=float(s),
        ci95=None if sol.ci is None else sol.ci[1],
        n_points=len(x),
        distinct_workers=distinct,
        dof=sol.dof,
        rel_rmse=sol.rel_rmse,
    )


def fit_usl(workers: Sequence[float], throughput: Sequence[float]) -> USLFit:
    """Fit the Universal Scalability Law; FitError with fewer than 3 distinct worker counts."""
    n, x, distinct = _check_points(workers, throughput, USL_MIN_DISTINCT_N, "USL")
    g0 = _gamma_start(n, x)
    starts = [np.array([g0, a0, b0]) for a0 in _STARTS for b0 in (0.0, 0.01, 0.1)]
    sol = _solve(
        _usl_residuals, _usl_jac, starts, np.array([-np.inf, 0.0, 0.0]), np.array([np.inf, 1.0, 1.0]), n, x
    )
    log_gamma, a, b = sol.params
    ci = sol.ci
    return USLFit(
        gamma=float(np.exp(log_gamma)),
        gamma_ci95=None if ci is None else (math.exp(ci[0][0]), math.exp(ci[0][1])),
        alpha=float(a),
        alpha_ci95=None if ci is None else ci[1],
        beta=float(b),
        beta_ci95=None if ci is None else ci[2],
        n_points=len(x),
        distinct_workers=distinct,
        dof=sol.dof,
        rel_rmse=sol.rel_rmse,
    )
