"""Group runs that differ only in worker count, fit Amdahl and USL per group, say what it means.

Group key: user classes, users (users per worker for a weak-scaling sweep, where total users grow
with workers), wait time, run time, host, target store, locustfile and the sweep's mode. Mode
(local/distributed/processes) is deliberately NOT in the key: a local run is the N = 1 point of a
distributed sweep. Throughput per run is Locust's Aggregated Requests/s from *_stats.csv.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from swarmbench.analysis import columns as C
from swarmbench.analysis.bottleneck import explain_serial_fraction, group_bottleneck, rules
from swarmbench.analysis.errors import warn
from swarmbench.analysis.fit import (
    AMDAHL_MIN_DISTINCT_N,
    USL_MIN_DISTINCT_N,
    AmdahlFit,
    FitError,
    USLFit,
    fit_amdahl,
    fit_usl,
)
from swarmbench.analysis.load import Run
from swarmbench.analysis.summary import OWN_WAIT, pacing_key, target_cpu_util


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
    # The same limit as the per-run verdict (verdict.py), so the two sentences never disagree.
    if util >= rules.TARGET_CPU_BUSY:
        return [
            f"At {_gen(top.workers)} the target used {util:.0%} of its {cpus:g} CPUs: the server, not "
            "the load generators, is the likely limit."
        ]
    if not math.isnan(util):
        return [f"At {_gen(top.workers)} the target used {util:.0%} of its CPUs: it was not CPU-bound."]
    return []
