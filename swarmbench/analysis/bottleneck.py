"""What limited each run and each scaling group, in plain words, and what that means for the fit.

The per-run rules are swarmbench.core.verdict, the same module the plugin judges with: a run.json
written by the plugin and a run judged here use the same numbers. Runs recorded
before the plugin wrote a verdict are judged here from their run.json and CSVs.

Group level (it sees all points): the verdict at the largest worker count, where a limit shows
first; and one curve-shape rule the per-run verdict cannot see -- latency rising while throughput
flattens across worker counts means the server is queueing (target-bound) even when its CPU
figure is missing or below the limit.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from swarmbench.analysis import columns as C
from swarmbench.analysis.load import Run
from swarmbench.core import verdict as rules
from swarmbench.core.sections import Bottleneck

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
