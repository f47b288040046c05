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

The last rate holds until the run ends. Durations: core/durations.py (500ms, 30s, 2m, plain seconds).
The holds of a schedule (a stage at the rate it starts from) are its steps, whoever wrote it (knee,
sweep, ARRIVAL_RATE by hand): the analysis judges each hold.

Standard library only: the plugin schedules iterations from it, the runner validates the setting
before anything starts, the analysis reads the schedule back. What each generator counted, and
run.json's `open_model` summary: arrival_counts.py; the open-model verdict: verdict.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from swarmbench.core.durations import parse_duration

ARRIVAL_USAGE = "expected 'RATE[@DURATION]; ...' such as '100', '50; 100@30s' or '100@10s; 400@1m'"


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


@dataclass(frozen=True)
class Hold:
    """A constant offered rate from T0 to T1 seconds of the schedule (T1 = inf: until the run ends)."""

    rate: float
    t0: float
    t1: float


def holds(schedule: ArrivalSchedule) -> list[Hold]:
    """The schedule's constant-rate parts, in order, the last one open-ended; ramps are no step.
    A rate of 0 offers nothing to judge and is left out."""
    out: list[Hold] = []
    rate, t0 = schedule.start_rate, 0.0
    for st in schedule.stages:
        if st.duration_s > 0 and st.rate == rate and rate > 0:
            if out and out[-1].rate == rate and out[-1].t1 == t0:  # '100; 100@10s; 100@10s' is one step
                out[-1] = Hold(rate, out[-1].t0, t0 + st.duration_s)
            else:
                out.append(Hold(rate, t0, t0 + st.duration_s))
        rate, t0 = st.rate, t0 + st.duration_s
    if rate > 0:
        if out and out[-1].rate == rate and out[-1].t1 == t0:
            out[-1] = Hold(rate, out[-1].t0, math.inf)
        else:
            out.append(Hold(rate, t0, math.inf))
    return out


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
        raise ValueError(f"empty arrival rate: {ARRIVAL_USAGE}")
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
                f"invalid arrival rate {spec!r}: stage {i} {item.strip()!r}: {e}; {ARRIVAL_USAGE}"
            ) from None
    schedule = ArrivalSchedule(start, tuple(stages))
    if schedule.start_rate == 0 and all(s.rate == 0 for s in stages):
        raise ValueError(f"invalid arrival rate {spec!r}: every rate is 0, nothing would be sent")
    return schedule
