"""Stepped arrival rates: the open-model knee's schedule, and the constant-rate steps of any schedule.

`knee --rates 'START STEP SECONDS MAX'` (STEP_RATES, mirroring STEP_USERS) offers START, START+STEP,
... up to MAX iterations/s, SECONDS per step. It is written in the --arrival-rate grammar
(core/arrival.py) as holds joined by jumps -- '100; 100@20s; 200@0s; 200@20s; 300@0s; 300@20s' --
so the plugin needs nothing new. The analysis goes the other way: the holds of any schedule (a stage
at the rate it starts from) are its steps, whoever wrote it (knee, sweep, ARRIVAL_RATE by hand).

Standard library only: the runner builds and validates the schedule, the analysis reads it back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .arrival import MAX_RATE, ArrivalSchedule
from .experiment import STEP_SETTLE_S

USAGE = "expected 'START STEP SECONDS MAX' iterations/s, e.g. '100 100 20 800'"


@dataclass(frozen=True)
class RateSteps:
    """Rates START, START+STEP, ... up to MAX iterations/s, SECONDS per step."""

    start: float
    step: float
    seconds: float
    max: float

    @property
    def rates(self) -> list[float]:
        n = int(math.floor((self.max - self.start) / self.step + 1e-9)) + 1
        return [self.start + i * self.step for i in range(n)]

    @property
    def duration_s(self) -> float:
        return len(self.rates) * self.seconds

    def arrival_rate(self) -> str:
        """The --arrival-rate spec: hold each rate SECONDS, jump to the next (the last holds on)."""
        stages = [f"{self.start:g}"]
        for i, rate in enumerate(self.rates):
            if i:
                stages.append(f"{rate:g}@0s")
            stages.append(f"{rate:g}@{self.seconds:g}s")
        return "; ".join(stages)

    def run_time(self) -> str:
        """A --run-time that covers every step plus STEP_SETTLE_S, e.g. '125s'."""
        return f"{math.ceil(self.duration_s) + STEP_SETTLE_S}s"


def parse_step_rates(spec: str) -> RateSteps:
    """'START STEP SECONDS MAX' -> RateSteps; ValueError naming the problem."""
    words = spec.replace(",", " ").split()
    if len(words) != 4:
        raise ValueError(f"{spec!r}: {USAGE}")
    try:
        start, step, seconds, top = (float(w.removesuffix("/s").removesuffix("s")) for w in words)
    except ValueError:
        raise ValueError(f"{spec!r}: START, STEP, SECONDS and MAX must be numbers; {USAGE}") from None
    if not all(math.isfinite(v) for v in (start, step, seconds, top)):
        raise ValueError(f"{spec!r}: every value must be finite; {USAGE}")
    if start <= 0 or step <= 0 or seconds <= 0 or top < start or top > MAX_RATE:
        raise ValueError(
            f"{spec!r}: need START > 0, STEP > 0, SECONDS > 0 and START <= MAX <= {MAX_RATE:g}; {USAGE}"
        )
    return RateSteps(start, step, seconds, top)


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


KNEE_P99_MS = 500.0
"""Default bound on a knee step's intended-start p99 (KNEE_P99_MS overrides it): half a second from
when an iteration was due to its answer is what a user notices, far above a healthy loopback p99."""


def knee_p99_ms(text: str) -> float:
    """The KNEE_P99_MS setting ('' = the default) in ms; ValueError saying what is wrong."""
    text = text.strip()
    if not text:
        return KNEE_P99_MS
    try:
        value = float(text.removesuffix("ms"))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} is not a positive number of milliseconds, e.g. 500")
    return value
