"""Open-model load: the --arrival-rate stage grammar, the rate it offers over time, and its counts.

An arrival-rate run starts iterations (one task of one user) at a rate R per second across all load
generators, whatever the responses take: a user of the pre-spawned pool (`--users`) runs each
iteration; an iteration whose intended start finds no idle user is DROPPED and counted, never
delayed (a delayed start is what hides a slow server from a closed-loop test).

The grammar, `STAGE; STAGE; ...`:

    100             100 iterations/s from the start (a '/s' suffix is allowed: 100/s)
    50; 100@30s     start at 50/s, ramp linearly to 100/s over 30 s, then hold 100/s
    100@10s         ramp from 0 to 100/s over 10 s, then hold
    50; 50@30s; 200@0s; 200@1m
                    hold 50/s for 30 s, jump to 200/s, hold it for a minute (and after)

The last rate holds until the run ends. Durations: 500ms, 30s, 2m, 1h or plain seconds.

Standard library only: the plugin schedules iterations from it, the runner validates the setting
before anything starts, the analysis reads the counts back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import verdict
from .errors import UsageError

USAGE = "expected 'RATE[@DURATION]; ...' such as '100', '50; 100@30s' or '100@10s; 400@1m'"

_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}

MAX_RATE = 1_000_000.0
"""Iterations/s above which a value is surely a typo (a million starts per second is beyond any
Locust cluster); it also keeps the scheduler's 1/rate gaps away from float underflow."""


@dataclass(frozen=True)
class Stage:
    """Ramp linearly to `rate` iterations/s over `duration_s` (0: jump)."""

    rate: float
    duration_s: float


@dataclass(frozen=True)
class ArrivalSchedule:
    """The offered rate over time: `start_rate` at t=0, then each stage in turn, then the last rate."""

    start_rate: float
    stages: tuple[Stage, ...] = ()

    def rate_at(self, t: float) -> float:
        """Iterations/s offered T seconds after the schedule started (all generators together)."""
        rate, t0 = self.start_rate, 0.0
        for st in self.stages:
            if t < t0 + st.duration_s:
                return rate + (st.rate - rate) * (t - t0) / st.duration_s
            rate, t0 = st.rate, t0 + st.duration_s
        return rate

    def iterations(self, t1: float) -> float:
        """Iterations offered in [0, T1] (the integral of rate_at): what a run of T1 seconds offers."""
        total, rate, t0 = 0.0, self.start_rate, 0.0
        for st in self.stages:
            end = min(t1, t0 + st.duration_s)
            if end > t0:
                mid = self.rate_at((t0 + end) / 2)  # linear within a stage: the midpoint is exact
                total += mid * (end - t0)
            if t1 <= t0 + st.duration_s:
                return total
            rate, t0 = st.rate, t0 + st.duration_s
        return total + rate * max(0.0, t1 - t0)

    def time_at(self, n: float) -> float:
        """The first time T with iterations(T) = N: when the schedule's N-th iteration is due
        (math.inf when it never offers that many). Exact per stage (a ramp's count is quadratic in
        time), so a ramp from 0 starts at once instead of waiting 1 / (a tiny first rate)."""
        if n <= 0:
            return 0.0
        done, rate, t0 = 0.0, self.start_rate, 0.0
        for st in self.stages:
            seg = (rate + st.rate) / 2 * st.duration_s
            if seg > 0 and done + seg >= n:
                need, a = n - done, (st.rate - rate) / (2 * st.duration_s)
                # rate*x + a*x^2 = need, in the form that is stable for either sign of a
                x = 2 * need / (rate + math.sqrt(max(0.0, rate * rate + 4 * a * need)))
                return t0 + min(st.duration_s, x)
            done, rate, t0 = done + seg, st.rate, t0 + st.duration_s
        return t0 + (n - done) / rate if rate > 0 else math.inf

    def __str__(self) -> str:
        first = [f"{self.start_rate:g}"] if self.start_rate or not self.stages else []
        return "; ".join(first + [f"{s.rate:g}@{s.duration_s:g}s" for s in self.stages])


def parse_duration(text: str) -> float:
    """Seconds of '500ms', '30s', '2m', '1h' or a plain number of seconds; ValueError otherwise."""
    m = _DURATION.match(text.strip())
    if not m:
        raise ValueError(f"{text.strip()!r} is not a duration like 30s, 500ms, 2m or 1h")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def _rate(text: str) -> float:
    word = text.strip().removesuffix("/s").strip()
    try:
        rate = float(word)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a rate (iterations per second)") from None
    if not math.isfinite(rate) or rate < 0 or rate > MAX_RATE:
        raise ValueError(f"rate {text.strip()!r} must be between 0 and {MAX_RATE:g} per second")
    return rate


def parse_arrival_rate(spec: str) -> ArrivalSchedule:
    """The schedule of SPEC; ValueError naming the spec and the stage that is wrong."""
    items = spec.split(";")
    if not spec.strip():
        raise ValueError(f"empty arrival rate: {USAGE}")
    start, stages = 0.0, []
    for i, item in enumerate(items, 1):
        try:
            if not item.strip():
                raise ValueError("empty stage")
            rate_text, at, dur_text = item.partition("@")
            rate = _rate(rate_text)
            if at:
                stages.append(Stage(rate, parse_duration(dur_text)))
            elif i == 1:
                start = rate
            else:
                raise ValueError("only the first stage may omit '@DURATION'")
        except ValueError as e:
            raise ValueError(
                f"invalid arrival rate {spec!r}: stage {i} {item.strip()!r}: {e}; {USAGE}"
            ) from None
    schedule = ArrivalSchedule(start, tuple(stages))
    if schedule.start_rate == 0 and all(s.rate == 0 for s in stages):
        raise ValueError(f"invalid arrival rate {spec!r}: every rate is 0, nothing would be sent")
    return schedule


# --- counts: what each generator shipped, summed on the master -----------------------------------


@dataclass
class ArrivalCounts:
    """Iterations of one generator (or, summed, of the run): scheduled = started + dropped.

    `per_second` maps a second of the schedule (0 = its start) to [scheduled, started, dropped].
    An exhaustion event is the start of a run of drops: the pool ran out of idle users. `span` is
    the part of the schedule (its seconds) the generator covered: from when it joined to the last
    moment it was handing out iterations (a stopping Locust blocks a while before saying so, and
    those moments offered nothing).
    """

    scheduled: int = 0
    started: int = 0
    dropped: int = 0
    exhaustion_events: int = 0
    queued: int = 0  # iterations that found no idle user and waited for one (--arrival-max-wait)
    per_second: dict[int, list[int]] = field(default_factory=dict)
    span: list[float] = field(default_factory=list)  # [first, last] second of the schedule covered

    def cover(self, t: float) -> None:
        """The generator was live T seconds into the schedule."""
        span = self.span
        if not span:
            span.extend((t, t))
        elif t > span[1]:
            span[1] = t
        elif t < span[0]:
            span[0] = t

    @property
    def span_s(self) -> float:
        return self.span[1] - self.span[0] if self.span else 0.0

    def record(self, second: int, started: bool) -> None:
        """One iteration's outcome, filed under its intended second."""
        self.record_many(second, int(started), int(not started))

    def record_many(self, second: int, started: int, dropped: int) -> None:
        """STARTED and DROPPED iterations at once, all filed under SECOND."""
        row = self.per_second.setdefault(second, [0, 0, 0])
        self.scheduled += started + dropped
        self.started += started
        self.dropped += dropped
        row[0] += started + dropped
        row[1] += started
        row[2] += dropped

    def to_report(self) -> dict[str, Any]:
        """JSON-safe form for the worker -> master report (msgpack keys stay strings)."""
        return {
            "scheduled": self.scheduled,
            "started": self.started,
            "dropped": self.dropped,
            "exhaustion_events": self.exhaustion_events,
            "queued": self.queued,
            "per_second": {str(k): v for k, v in self.per_second.items()},
            "span": self.span,
        }

    def add_report(self, report: dict[str, Any]) -> None:
        """Add a delta another generator shipped (see to_report)."""
        self.scheduled += int(report.get("scheduled", 0))
        self.started += int(report.get("started", 0))
        self.dropped += int(report.get("dropped", 0))
        self.exhaustion_events += int(report.get("exhaustion_events", 0))
        self.queued += int(report.get("queued", 0))
        for key, (sch, sta, dro) in (report.get("per_second") or {}).items():
            row = self.per_second.setdefault(int(key), [0, 0, 0])
            row[0] += sch
            row[1] += sta
            row[2] += dro
        for t in report.get("span") or []:
            self.cover(float(t))

    def rows(self) -> list[list[int]]:
        """[second, scheduled, started, dropped] per second of the schedule, in order, gaps as 0."""
        if not self.per_second:
            return []
        return [[s, *self.per_second.get(s, [0, 0, 0])] for s in range(max(self.per_second) + 1)]


PER_SECOND_COLUMNS = ("second", "scheduled", "started", "dropped")
"""Columns of the run folder's per-second arrival CSV (folder.ARRIVAL_CSV)."""


def summarize(spec: str, schedule: ArrivalSchedule, counts: ArrivalCounts, pool: int | None) -> dict:
    """run.json's `open_model`: what was offered, what started, what was dropped.

    Rates are per second across all generators over the window the generators covered (the union
    of their spans): offered_rate is the schedule's mean there, scheduled_rate what the generators
    scheduled of it, achieved_rate the iterations that started.
    """
    start, end = counts.span or [0.0, 0.0]
    window = max(end - start, 1e-9)
    drops = [row[3] for row in counts.rows()]
    offered = schedule.iterations(end) - schedule.iterations(start)
    return {
        "arrival_rate": spec,
        "schedule": str(schedule),
        "pool_users": pool,
        "window_s": round(end - start, 3),
        "window_start_s": round(start, 3),
        "offered_rate": round(offered / window, 3),
        "scheduled_rate": round(counts.scheduled / window, 3),
        "achieved_rate": round(counts.started / window, 3),
        "iterations_scheduled": counts.scheduled,
        "iterations_started": counts.started,
        "dropped_iterations": counts.dropped,
        # offered by the schedule but by no generator: one lost until the master saw it missing
        "unscheduled_iterations": max(0, round(offered) - counts.scheduled),
        "dropped_ratio": round(counts.dropped / counts.scheduled, 5) if counts.scheduled else None,
        "max_dropped_per_s": max(drops) if drops else 0,
        "pool_exhaustion_events": counts.exhaustion_events,
        "queued_iterations": counts.queued,
    }


def check_settings(env: Mapping[str, str]) -> None:
    """The host runner's check of the open-model settings, before images build or a target starts:
    UsageError naming the setting."""
    spec, wait = env.get("LOCUST_ARRIVAL_RATE", "").strip(), env.get("LOCUST_ARRIVAL_MAX_WAIT", "").strip()
    try:
        if spec:
            parse_arrival_rate(spec)
    except ValueError as e:
        raise UsageError(f"LOCUST_ARRIVAL_RATE: {e}") from None
    try:
        if wait:
            parse_duration(wait)
    except ValueError as e:
        raise UsageError(f"LOCUST_ARRIVAL_MAX_WAIT={wait!r}: {e}") from None


# --- the verdict of an open-model run ---------------------------------------------------------------

DROP_LIMIT = 0.01
"""Dropped share of scheduled iterations at which the offered rate counts as not held: 1 % is the
knee criterion (the highest rate held with < 1 % dropped)."""

LATENCY_GROWTH = 2.0
"""Intended-start p99 in the last third of the schedule over the first third at which latency counts
as growing: the queue for free users (or the server's) was still building when the run ended."""

LATENCY_GROWTH_MIN_MS = 50.0
"""...and by at least this much: a p99 of a few ms doubling is noise on a busy machine, not a queue."""


def judge_open(run: dict[str, Any]) -> dict[str, Any]:
    """Capacity reached (drops, the generators behind their schedule, or intended latency growing)
    and by what: generator CPU, target CPU, or neither -- from run.json alone, with the closed-loop
    verdict's own CPU limits. {"capacity_reached", "by" (None while held), "reason"}."""
    om = run.get("open_model") or {}
    dropped = float(om.get("dropped_ratio") or 0.0)
    offered, scheduled = float(om.get("offered_rate") or 0.0), float(om.get("scheduled_rate") or 0.0)
    behind = offered > 0 and scheduled < (1 - DROP_LIMIT) * offered
    first, last = om.get("intended_p99_first_third_ms"), om.get("intended_p99_last_third_ms")
    detail = (
        f"{om.get('achieved_rate', 0):g} of {om.get('offered_rate', 0):g} iterations/s started, "
        f"{dropped:.1%} dropped"
    )
    growing = False
    if isinstance(first, int | float) and isinstance(last, int | float) and first > 0:
        detail += f", intended-start p99 {first:g} -> {last:g} ms from the first to the last third"
        growing = last / first >= LATENCY_GROWTH and last - first >= LATENCY_GROWTH_MIN_MS
    if dropped < DROP_LIMIT and not growing and not behind:
        return {"capacity_reached": False, "by": None, "reason": f"the offered rate was held ({detail})"}
    by, words = _open_limit(verdict.inputs_from_manifest(run))
    if behind and by != "generator CPU":  # late iterations are the generators' own doing
        by, words = (
            "generator CPU",
            (
                f"the generators scheduled only {scheduled:g} of {offered:g} iterations/s: they fell "
                "behind their schedule (a busy event loop, or a generator lost mid-run)"
            ),
        )
    return {"capacity_reached": True, "by": by, "reason": f"{detail}; limited by {by} ({words})"}


def _open_limit(inputs: dict[str, Any]) -> tuple[str, str]:
    gen, host = inputs.get("worker_cpu_max_mean_percent"), inputs.get("host_cpu_mean_percent")
    util = inputs.get("target_cpu_util")
    if gen is not None and gen >= verdict.GENERATOR_CPU_LIMIT_PCT:
        return "generator CPU", f"the busiest load generator at {gen:.0f} % of its core"
    if host is not None and host >= verdict.HOST_CPU_BUSY_PCT:
        return "generator CPU", f"the machine {host:.0f} % busy: generators and target competed for cores"
    if util is not None and util >= verdict.TARGET_CPU_BUSY:
        return "target CPU", f"the target at {util:.0%} of its CPUs"
    return (
        "neither",
        "no CPU at its limit: the target's latency (locks, delays, queueing) over the pool of users",
    )
