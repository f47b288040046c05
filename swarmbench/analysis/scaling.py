"""Scaling: runs grouped by what they share, Amdahl and USL fitted per group, and what limited each run
and group, in plain words.

Scaling laws fitted to throughput X measured at N load generators (repeats as separate points).

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

What limited each run and each scaling group, in plain words, and what that means for the fit.

The per-run rules are swarmbench.core.bottleneck, the same module the plugin judges with: a run.json
written by the plugin and a run judged here use the same numbers. Runs recorded
before the plugin wrote a verdict are judged here from their run.json and CSVs.

Group level (it sees all points): the verdict at the largest worker count, where a limit shows
first; and one curve-shape rule the per-run verdict cannot see -- latency rising while throughput
flattens across worker counts means the server is queueing (target-bound) even when its CPU
figure is missing or below the limit.

Group runs that differ only in worker count, fit Amdahl and USL per group, say what it means.

Group key: user classes, users (users per worker for a weak-scaling sweep, where total users grow
with workers), wait time, run time, host, target store, locustfile and the sweep's mode. Mode
(local/distributed/processes) is deliberately NOT in the key: a local run is the N = 1 point of a
distributed sweep. Throughput per run is Locust's Aggregated Requests/s from *_stats.csv."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from swarmbench.analysis import columns as C
from swarmbench.analysis.locust_csv import warn
from swarmbench.analysis.runs import Run
from swarmbench.analysis.summary import OWN_WAIT, pacing_key, target_cpu_util
from swarmbench.core import bottleneck as rules
from swarmbench.core.manifest import Bottleneck

# --- the scaling laws, fitted ---------------------------------------------------------------------

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


# --- what limited each run and group --------------------------------------------------------------

FLAT_SHARE = 0.25
"""Throughput flattened: the largest worker count gained less than this share of the ideal (linear)
gain over the smallest."""
LATENCY_RISE = 1.5
"""...while the aggregated p95 grew by at least this factor: requests queue at the server."""


def run_bottleneck(run: Run) -> Bottleneck | None:
    """run.json's `bottleneck`, or the same judgement made now for a run recorded without one."""
    m = run.meta
    if m.bottleneck and m.bottleneck.verdict:
        return m.bottleneck
    if not run.has_manifest:
        return None
    agg = run.aggregated
    return rules.judge_manifest(m, rps=float(agg[C.RPS_OUT]), avg_ms=float(agg[C.AVG_MS]))


def run_verdict(run: Run) -> str | None:
    b = run_bottleneck(run)
    return b.verdict if b else None


def group_bottleneck(group) -> tuple[str, str] | None:
    """(verdict, sentence) for a ScalingGroup: the limit at its largest worker count."""
    if not group.points:
        return None
    top = group.points[-1]
    runs = [r for r in group.runs if r.run_id in top.run_ids]
    judged = [(r, run_bottleneck(r)) for r in runs]
    judged = [(r, b) for r, b in judged if b]
    if not judged:
        return None
    counts = Counter(b.verdict for _, b in judged)
    verdict, _ = counts.most_common(1)[0]
    reason = next(b.reason for _, b in judged if b.verdict == verdict)
    workers = f"{top.workers} worker" + ("" if top.workers == 1 else "s")
    sentence = f"Bottleneck: {verdict} — at {workers}, {reason}."
    if verdict == rules.NONE and len(group.points) >= 2:
        flat = _latency_rise(group)
        if flat:
            verdict, sentence = rules.TARGET_BOUND, f"Bottleneck: {rules.TARGET_BOUND} — {flat}."
    return verdict, sentence


def _p95(runs: list[Run]) -> float:
    return float(np.mean([float(r.aggregated[C.P95_MS]) for r in runs]))


def _latency_rise(group) -> str | None:
    lo, hi = group.points[0], group.points[-1]
    ideal = hi.workers / lo.workers
    gain = hi.mean_rps / lo.mean_rps if lo.mean_rps else 0.0
    lo_runs = [r for r in group.runs if r.run_id in lo.run_ids]
    hi_runs = [r for r in group.runs if r.run_id in hi.run_ids]
    p_lo, p_hi = _p95(lo_runs), _p95(hi_runs)
    if gain - 1 < FLAT_SHARE * (ideal - 1) and p_lo > 0 and p_hi >= LATENCY_RISE * p_lo:
        return (
            f"from {lo.workers} to {hi.workers} workers throughput grew only {gain:.2f}× while p95 rose "
            f"{p_hi / p_lo:.1f}× ({p_lo:.0f} → {p_hi:.0f} ms): requests queue at the server"
        )
    return None


def explain_serial_fraction(group, verdict: str) -> str | None:
    """What the fitted Amdahl s means, given what limited the runs."""
    a = group.amdahl
    if a is None:
        return None
    s = f"s = {a.serial_fraction:.2f}"
    key = group.key
    if verdict == rules.LOAD_BOUND:
        how = (
            "the users' pacing"
            if key.sweep_mode != "weak"
            else "each worker's users' pacing (weak scaling: the cap grows with workers)"
        )
        return (
            f"Read {s} with care: it is not Locust's or the server's serial part. The runs were "
            f"load-bound — {how} capped the request rate, so with a fixed user count and wait time "
            "more workers only split the same users. To measure generator scaling raise USERS, "
            "lower the wait time or use MODE=weak."
        )
    if verdict == rules.TARGET_BOUND:
        return (
            f"{s} describes the server, not the load generators: the target was at its limit, so "
            "extra workers only queue more requests at it. Give it more CPUs (TARGET_CPUS) or a "
            "cheaper store before reading this as Locust's scalability."
        )
    if verdict == rules.TARGET_FAILED:
        return (
            f"Do not read {s} as scalability: most requests failed at the largest worker count (the "
            "target stopped answering), so the throughput counts failures. Fix the target and rerun."
        )
    if verdict == rules.GENERATOR_BOUND:
        return (
            f"The load generators were CPU-starved (a worker at ≥ {rules.GENERATOR_CPU_LIMIT_PCT:.0f} % "
            f"of a core, or the machine at ≥ {rules.HOST_CPU_BUSY_PCT:.0f} %), so {s} is what keeps N "
            "workers from adding up on this machine: the master, and workers sharing cores with each "
            "other and the target (more busy processes than cores cannot scale). It says little about "
            "Locust on a bigger machine."
        )
    return (
        f"No limit was reached at the largest worker count, so {s} is the harness's own scaling "
        "over this range."
    )


# --- groups of runs, their fits and what they mean ------------------------------------------------


def partial_runs(runs: Sequence[Run]) -> list[Run]:
    """The runs a scaling fit leaves out by default: status degraded, interrupted or failed (a lost
    worker's users are never replaced, an interrupted run is short, a failed one served nothing).
    A run.json without `status` (an older harness) is kept, as it always was."""
    return [r for r in runs if r.meta.partial]


@dataclass(frozen=True)
class GroupKey:
    user_classes: tuple[str, ...]
    users: int | None
    users_per_worker: float | None
    wait_time: str | None
    run_time: float | None
    host: str | None
    store: str | None
    locustfile: str | None
    sweep_mode: str | None
    mix: str | None = None  # the scenario's request mix; runs of different mixes never pool

    def label(self) -> str:
        """Readable: "AlbumsHttpUser, 12 users, wait constant 0, 8 s, store rwmutex"."""
        parts = ["+".join(self.user_classes) or "?"]
        if self.users_per_worker is not None:
            parts.append(f"{self.users_per_worker:g} users/worker (weak)")
        elif self.users is not None:
            parts.append(f"{self.users} users")
        if self.wait_time:
            parts.append(self.wait_time if self.wait_time == OWN_WAIT else f"wait {self.wait_time}")
        if self.run_time is not None:
            parts.append(f"{self.run_time:g} s")
        if self.store:
            parts.append(f"store {self.store}")
        if self.mix and self.mix != "default":
            parts.append(f"mix {self.mix}")
        return ", ".join(parts)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["user_classes"] = list(self.user_classes)
        return d


@dataclass
class ScalingPoint:
    workers: int
    rps: list[float]
    run_ids: list[str]

    @property
    def mean_rps(self) -> float:
        return float(np.mean(self.rps))


@dataclass
class ScalingGroup:
    key: GroupKey
    runs: list[Run]
    points: list[ScalingPoint] = field(default_factory=list)
    amdahl: AmdahlFit | None = None
    usl: USLFit | None = None
    warnings: list[str] = field(default_factory=list)
    index: int = 0

    @property
    def slug(self) -> str:
        """File-name-safe id: "g1_AlbumsHttpUser"."""
        classes = "+".join(self.key.user_classes) or "unknown"
        return f"g{self.index + 1}_" + "".join(ch if ch.isalnum() or ch in "+-_" else "-" for ch in classes)

    @property
    def where(self) -> str:
        """How warnings name the group: its label and (some of) its run folders."""
        folders = [str(r.folder) for r in self.runs]
        shown = ", ".join(folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
        return f"group '{self.key.label()}' ({shown})"

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(workers, rps) with one entry per run: repeats are separate points."""
        n = [p.workers for p in self.points for _ in p.rps]
        x = [v for p in self.points for v in p.rps]
        return np.asarray(n, dtype=float), np.asarray(x, dtype=float)

    def measured_speedup(self) -> tuple[ScalingPoint, ScalingPoint, float] | None:
        """Largest N against smallest N (mean of repeats): the plain-words headline."""
        if len(self.points) < 2:
            return None
        lo, hi = self.points[0], self.points[-1]
        return lo, hi, hi.mean_rps / lo.mean_rps

    def verdict(self) -> list[str]:
        return verdict(self)

    def to_dict(self) -> dict:
        return {
            "id": self.slug,
            "label": self.key.label(),
            "key": self.key.to_dict(),
            "runs": [r.run_id for r in self.runs],
            "points": [{C.WORKERS: p.workers, C.RPS_OUT: p.rps, "run_ids": p.run_ids} for p in self.points],
            "amdahl": self.amdahl.to_dict() if self.amdahl else None,
            "usl": self.usl.to_dict() if self.usl else None,
            "verdict": self.verdict(),
            "bottleneck": (group_bottleneck(self) or (None,))[0],
            "warnings": self.warnings,
        }


def group_key(run: Run) -> GroupKey:
    m = run.meta
    weak = m.sweep_mode == "weak"
    per_worker = m.users / run.workers if weak and m.users is not None and run.workers else None
    return GroupKey(
        user_classes=m.user_classes,
        users=None if weak else m.users,
        users_per_worker=per_worker,
        wait_time=pacing_key(run),
        run_time=m.run_time,
        host=m.host,
        store=m.store,
        locustfile=m.locustfile,
        sweep_mode=m.sweep_mode,
        mix=m.albums_mix,
    )


def configuration_key(run: Run) -> object:
    """What makes runs repeats of one configuration: the scaling group's settings and the worker
    count (a run without run.json is a configuration of its own)."""
    return (group_key(run), run.workers) if run.has_manifest else run.folder


def one_configuration(runs: Sequence[Run]) -> bool:
    """RUNS are one run, or repeats of one configuration: nothing to scale or compare across."""
    return len({configuration_key(r) for r in runs}) == 1


def group_runs(runs: Sequence[Run], include_partial: bool = False) -> tuple[list[ScalingGroup], list[str]]:
    """Groups (unfitted) and the warnings about runs that cannot join any group. Runs whose status
    says they did not run as asked (degraded, interrupted, failed) are left out, with one warning
    naming them, unless INCLUDE_PARTIAL."""
    notes: list[str] = []
    groups: dict[GroupKey, ScalingGroup] = {}
    partial = partial_runs(runs)
    if partial and not include_partial:
        names = ", ".join(f"{r.run_id} ({r.meta.status})" for r in partial)
        notes.append(
            warn(
                "scaling",
                f"{len(partial)} run(s) left out of scaling fits because they did not run as asked: {names}; "
                "--include-partial keeps them",
            )
        )
        runs = [r for r in runs if r not in partial]
    for run in runs:
        if not run.has_manifest:
            continue  # load already warned: no run.json, left out of scaling
        if run.workers is None:
            notes.append(warn(run.folder, "worker count unknown (run.json); left out of scaling fits"))
            continue
        key = group_key(run)
        groups.setdefault(key, ScalingGroup(key=key, runs=[])).runs.append(run)
    out = list(groups.values())
    for i, group in enumerate(out):
        group.index = i
        by_n: dict[int, ScalingPoint] = {}
        for run in sorted(group.runs, key=lambda r: (r.workers, r.meta.started_at or "", r.run_id)):
            point = by_n.setdefault(run.workers, ScalingPoint(run.workers, [], []))
            point.rps.append(float(run.aggregated[C.RPS_OUT]))
            point.run_ids.append(run.run_id)
        group.points = sorted(by_n.values(), key=lambda p: p.workers)
    return out, notes


def fit_group(group: ScalingGroup) -> ScalingGroup:
    """Fit both laws where the points allow; otherwise a warning that says why, never a crash."""
    distinct = len(group.points)
    if distinct < AMDAHL_MIN_DISTINCT_N:
        only = group.points[0].workers if group.points else "none"
        group.warnings.append(
            warn(group.where, f"only one worker count (N = {only}); no scaling fit (Amdahl needs 2, USL 3)")
        )
        return group
    n, x = group.arrays()
    try:
        group.amdahl = fit_amdahl(n, x)
    except FitError as e:
        group.warnings.append(warn(group.where, f"no Amdahl fit: {e}"))
    if distinct < USL_MIN_DISTINCT_N:
        group.warnings.append(
            warn(group.where, f"{distinct} distinct worker counts; USL needs 3, not fitted")
        )
    else:
        try:
            group.usl = fit_usl(n, x)
        except FitError as e:
            group.warnings.append(warn(group.where, f"no USL fit: {e}"))
    if group.amdahl is not None and group.amdahl.ci95 is None:
        group.warnings.append(
            warn(group.where, "as many points as Amdahl parameters: no 95 % interval (add repeats)")
        )
    return group


def analyze_scaling(
    runs: Sequence[Run], include_partial: bool = False
) -> tuple[list[ScalingGroup], list[str]]:
    """Group, then fit every group. Returns the groups and the run-level warnings. Degraded,
    interrupted and failed runs are left out unless INCLUDE_PARTIAL (see group_runs)."""
    groups, notes = group_runs(runs, include_partial)
    return [fit_group(g) for g in groups], notes


def scaling_json(groups: Sequence[ScalingGroup], notes: Sequence[str] = ()) -> dict:
    return {
        "schema_version": 1,
        "throughput": "Locust Aggregated Requests/s (*_stats.csv), one point per run",
        "fit": "bounded least squares on log throughput; ci95 from Jacobian covariance x t-quantile",
        "groups": [g.to_dict() for g in groups],
        "warnings": list(notes),
    }


# --- plain words ------------------------------------------------------------------------------------


def _gen(n: int) -> str:
    return f"{n} worker" + ("" if n == 1 else "s")


def verdict(group: ScalingGroup) -> list[str]:
    """Sentences a person reads first: measured speedup, what the fits say, where the limit is."""
    lines: list[str] = []
    measured = group.measured_speedup()
    if measured is None:
        only = group.points[0] if group.points else None
        if only is not None:
            lines.append(
                f"Only {_gen(only.workers)} measured ({only.mean_rps:.0f} requests/s): nothing to compare."
            )
        limit = group_bottleneck(group)
        if limit:
            lines.append(limit[1])
        return lines
    lo, hi, ratio = measured
    lines.append(
        f"{_gen(hi.workers)} gave {ratio:.2f}× the throughput of {lo.workers} "
        f"({hi.mean_rps:.0f} vs {lo.mean_rps:.0f} requests/s, mean of repeats)."
    )
    a = group.amdahl
    if a is not None:
        ci = f" [{a.ci95[0]:.2f}, {a.ci95[1]:.2f}]" if a.ci95 else ""
        if a.serial_fraction < 0.005:
            lines.append(
                f"Fitted serial fraction s = {a.serial_fraction:.3f}{ci}: no serial bottleneck visible; "
                "throughput grew in proportion to workers over the range tested."
            )
        else:
            lines.append(
                f"Fitted serial fraction s = {a.serial_fraction:.2f}{ci} → at most "
                f"{a.max_speedup:.1f}× the throughput of one worker, whatever the worker count."
            )
    u = group.usl
    if u is not None:
        peak = u.peak_workers
        if peak is None or peak > 1000:
            lines.append(
                f"USL: contention α = {u.alpha:.3f}, coherency β ≈ {u.beta:.1e}: no sign that more "
                "workers would lower throughput."
            )
        else:
            tested = max(p.workers for p in group.points)
            where = "beyond the largest count tested" if peak > tested else "within the range tested"
            lines.append(
                f"USL: contention α = {u.alpha:.3f}, coherency β = {u.beta:.4f} → throughput peaks near "
                f"N* = {peak:.1f} workers ({float(u.throughput(peak)):.0f} requests/s), {where}; "
                "past N* more workers lower throughput."
            )
    lines.extend(_bottleneck_hints(group, hi))
    limit = group_bottleneck(group)
    if limit:
        lines.append(limit[1])
        explained = explain_serial_fraction(group, limit[0])
        if explained:
            lines.append(explained)
    return lines


def _bottleneck_hints(group: ScalingGroup, top: ScalingPoint) -> list[str]:
    runs = [r for r in group.runs if r.run_id in top.run_ids]
    utils = [u for u in (target_cpu_util(r) for r in runs) if u is not None]
    if not utils:
        return []
    util = float(np.mean(utils))
    cpus = runs[0].meta.target.cpus if runs[0].meta.target else None
    # The same limit as the per-run verdict (core/bottleneck.py), so the two sentences never disagree.
    if util >= rules.TARGET_CPU_BUSY:
        return [
            f"At {_gen(top.workers)} the target used {util:.0%} of its {cpus:g} CPUs: the server, not "
            "the load generators, is the likely limit."
        ]
    if not math.isnan(util):
        return [f"At {_gen(top.workers)} the target used {util:.0%} of its CPUs: it was not CPU-bound."]
    return []
