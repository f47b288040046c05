"""What limited a run: generator-bound, target-bound, load-bound or none -- from run.json alone.

Standard library only and free of Locust imports, so the same thresholds serve the plugin (which
writes run.json's `bottleneck` at quit) and analysis/ (which loads this file by path for the
sweep-level verdict): one definition of each limit, never two that drift apart.

Order of the checks matters. A generator at its CPU limit makes every other number suspect (its
latency includes its own queueing), so it is checked first; a server at its CPU limit comes next;
only when neither machine is busy can the closed loop of users x think time be what capped the rate.
"""

from __future__ import annotations

from typing import Any

GENERATOR_CPU_LIMIT_PCT = 90.0
"""A Locust worker is one Python process: one core at most. At >= 90 % of it (mean over the run,
the busiest worker) its users queue for the CPU, latencies it reports are inflated and it cannot
offer more load -- the same level at which Locust itself warns."""

TARGET_CPU_BUSY = 0.85
"""Target CPU seconds / (duration x its CPUs) at or above which the server is at its limit. Below
1.0 because the scrape window includes ramp-up and the stop, when the server idles."""

HOST_CPU_BUSY_PCT = 85.0
"""The whole machine's CPU (all cores, mean over the run) at or above which the load generators were
starved for cores: on a shared machine (workers, master and target together) no single worker
reaches GENERATOR_CPU_LIMIT_PCT, yet none can get more CPU. Lower than the per-worker limit, like
TARGET_CPU_BUSY, because the mean includes the spawn and stop seconds, when the machine idles."""

LOAD_BOUND_SHARE = 0.75
"""Measured requests/s at or above this share of the closed-loop cap (users / mean think time)
means the users' pacing capped the rate: even with instant responses they could go at most
1 / 0.75 = 1.33x faster, so no worker count can show more scaling than that. (A closed loop
always runs at users / (think + response time); the question is which term dominates.)"""

LATENCY_DOMINATES = 1.0
"""Mean response time at or above this multiple of the mean think time: users spent more of each
cycle waiting for the server than thinking, so the server's response time set the rate (a target
limit even when its CPU is not full: locks, sleeps, queueing)."""

VERDICTS = ("generator-bound", "target-bound", "load-bound", "none")


def mean_think_time_s(spec: str | None) -> float | None:
    """Mean seconds a closed-loop user waits between tasks; None for open-ish pacing or no spec."""
    if not spec:
        return None
    words = spec.replace(",", " ").split()
    try:
        numbers = [float(w) for w in words[1:]]
    except ValueError:
        return None
    if words[0] == "between" and len(numbers) == 2:
        return (numbers[0] + numbers[1]) / 2
    if words[0] == "constant" and len(numbers) == 1:
        return numbers[0]
    return None


def offered_rate_cap(spec: str, users: int) -> float | None:
    """Upper bound on tasks/s that `users` closed-loop users with this pacing can start.

    Used to tell a load-bound run (users x think time cap the rate) from a server limit. Returns
    None when the spec does not cap the rate (zero think time) or is not understood.
    """
    words = spec.replace(",", " ").split()
    if not words:
        return None
    try:
        numbers = [float(w) for w in words[1:]]
    except ValueError:
        return None
    per_user = {
        "between": lambda a, b: 1 / ((a + b) / 2) if a + b > 0 else None,
        "constant": lambda x: 1 / x if x > 0 else None,
        "throughput": lambda r: r,
        "pacing": lambda x: 1 / x if x > 0 else None,
    }.get(words[0])
    if per_user is None:
        return None
    try:
        rate = per_user(*numbers)
    except TypeError:  # wrong number of values
        return None
    return None if rate is None else rate * users


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def inputs_from_manifest(run: dict[str, Any], rps: float | None = None, avg_ms: float | None = None) -> dict:
    """The numbers the verdict rests on, from run.json's own fields (recorded next to the verdict).

    RPS and AVG_MS default to totals over duration_s (the plugin passes Locust's own figures).
    """
    duration = _num(run.get("duration_s"))
    totals = run.get("totals") or {}
    if rps is None and duration and _num(totals.get("requests")) is not None:
        rps = float(totals["requests"]) / duration
    cpu = run.get("worker_cpu") or {}
    busiest = [_num(w.get("mean_percent")) for w in cpu.get("per_worker") or []]
    busiest = [b for b in busiest if b is not None]
    target = run.get("target") or {}
    util = None
    t_cpu, t_cpus = _num(target.get("cpu_seconds")), _num(target.get("cpus"))
    if t_cpu is not None and t_cpus and duration:
        util = t_cpu / (duration * t_cpus)
    host = run.get("host_cpu") or {}
    users = run.get("users") if isinstance(run.get("users"), int) else None
    wait = run.get("wait_time") if isinstance(run.get("wait_time"), str) else None
    cap = offered_rate_cap(wait, users) if wait and users else None
    return {
        "rps": None if rps is None else round(rps, 2),
        "avg_response_ms": None if avg_ms is None else round(avg_ms, 2),
        "worker_cpu_max_mean_percent": max(busiest) if busiest else None,
        "host_cpu_mean_percent": _num(host.get("mean_percent")),
        "host_cpus": _num(host.get("cpus")),
        "target_cpu_util": None if util is None else round(util, 3),
        "target_cpus": t_cpus,
        "users": users,
        "wait_time": wait,
        "offered_rate_cap": None if cap is None else round(cap, 2),
        "think_time_s": mean_think_time_s(wait),
    }


def _cpus(cpus: float | None) -> str:
    return "?" if cpus is None else f"{cpus:g}"


def judge(inputs: dict[str, Any]) -> dict[str, Any]:
    """{"verdict", "reason", "inputs"} for one run from `inputs_from_manifest`'s numbers."""
    gen = inputs.get("worker_cpu_max_mean_percent")
    util = inputs.get("target_cpu_util")
    rps = inputs.get("rps")
    cap = inputs.get("offered_rate_cap")
    think = inputs.get("think_time_s")
    avg = inputs.get("avg_response_ms")
    cpus = inputs.get("target_cpus")

    def out(verdict: str, reason: str) -> dict[str, Any]:
        return {"verdict": verdict, "reason": reason, "inputs": inputs}

    if gen is not None and gen >= GENERATOR_CPU_LIMIT_PCT:
        return out(
            "generator-bound",
            f"the busiest load generator used {gen:.0f} % of its CPU core (limit "
            f"{GENERATOR_CPU_LIMIT_PCT:.0f} %): Locust itself could not offer more load",
        )
    if util is not None and util >= TARGET_CPU_BUSY:
        return out(
            "target-bound",
            f"the target used {util:.0%} of its {_cpus(cpus)} CPU(s) (limit {TARGET_CPU_BUSY:.0%}): "
            "the server, not the generators, capped the rate",
        )
    host = inputs.get("host_cpu_mean_percent")
    if host is not None and host >= HOST_CPU_BUSY_PCT:
        cores = inputs.get("host_cpus")
        return out(
            "generator-bound",
            f"the machine's {_cpus(cores)} CPUs were {host:.0f} % busy (limit {HOST_CPU_BUSY_PCT:.0f} %): "
            "generators, master and target competed for cores, so the generators could not offer "
            "more load (the busiest worker used "
            f"{gen if gen is not None else 0:.0f} % of a core)",
        )
    if rps is not None and cap and rps >= LOAD_BOUND_SHARE * cap:
        return out(
            "load-bound",
            f"{inputs.get('users')} users with wait '{inputs.get('wait_time')}' can start at most "
            f"{cap:.0f} requests/s and the run reached {rps:.0f} ({rps / cap:.0%}): the users' pacing "
            f"capped the rate ({_headroom(cap, rps)}); more workers "
            "cannot raise it, more users or less think time can",
        )
    if avg is not None and think and avg / 1000 >= LATENCY_DOMINATES * think:
        return out(
            "target-bound",
            f"mean response time {avg:.0f} ms is longer than the {think * 1000:.0f} ms think time and "
            f"the run reached {rps or 0:.0f} of a possible {cap or 0:.0f} requests/s: users waited on "
            "the server (locks, delays, queueing) more than they thought",
        )
    parts = []
    if gen is not None:
        parts.append(f"generators at most {gen:.0f} % CPU")
    if host is not None:
        parts.append(f"machine {host:.0f} % busy")
    if util is not None:
        parts.append(f"target at {util:.0%} of its CPUs")
    if cap:
        parts.append(f"{rps or 0:.0f} of a possible {cap:.0f} requests/s")
    detail = "; ".join(parts) or "no CPU or pacing figures recorded"
    return out("none", f"no limit reached ({detail})")


def judge_manifest(run: dict[str, Any], rps: float | None = None, avg_ms: float | None = None) -> dict:
    """The `bottleneck` section of run.json for a finished run's manifest."""
    return judge(inputs_from_manifest(run, rps=rps, avg_ms=avg_ms))


def _headroom(cap: float, rps: float) -> str:
    """What instant responses could add; "none" once the run is at the cap (the cap assumes the
    mean think time, so a lucky run can exceed it slightly)."""
    return "no headroom left" if rps >= cap else f"at most {cap / rps:.2f}× more even with instant responses"
