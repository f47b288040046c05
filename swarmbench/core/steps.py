"""The one step grammar, `START STEP SECONDS MAX`: user steps (`--step-users`, STEP_USERS) and rate
steps (`knee --rates`, STEP_RATES) alike.

    10 10 20 80        users 10, 20, ... 80, 20 s each (a closed-loop step load)
    100 100 20s 800    100, 200, ... 800 iterations/s, 20 s each (an open-model knee)

Users must be whole numbers from 1; rates may be fractional (`2.5/s`) up to arrival.MAX_RATE. A
user step load runs as locustfiles/step_load.py's shape; a rate step load is written in the
--arrival-rate grammar as holds joined by jumps, so the plugin needs nothing new for it.
Standard library only: the runner validates, the plugin runs, the analysis reads back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from swarmbench.core.arrival import MAX_RATE
from swarmbench.core.durations import parse_duration
from swarmbench.core.sections import LoadShape

STEP_SETTLE_S = 5
"""Seconds `knee` adds to a step load's run time, so the last step runs its whole length."""

STEP_USAGE = "expected 'START STEP SECONDS MAX', e.g. '10 10 20 80' (users) or '100 100 20 800' (iterations/s)"


@dataclass(frozen=True)
class Steps:
    """START, START+STEP, ... up to MAX (users or iterations/s), SECONDS per step."""

    start: float
    step: float
    seconds: float
    max: float

    @property
    def levels(self) -> list[float]:
        """Every step's value, in order."""
        n = int(math.floor((self.max - self.start) / self.step + 1e-9)) + 1
        return [self.start + i * self.step for i in range(n)]

    @property
    def duration_s(self) -> float:
        return len(self.levels) * self.seconds

    def run_time(self) -> str:
        """A --run-time that covers every step plus STEP_SETTLE_S, e.g. '125s'."""
        return f"{math.ceil(self.duration_s) + STEP_SETTLE_S}s"

    # --- user steps ---

    def users_at(self, run_time_s: float) -> int | None:
        """Users at RUN_TIME_S seconds into the test; None once the last step has run."""
        index = int(run_time_s // self.seconds)
        levels = self.levels
        return None if index >= len(levels) else int(levels[index])

    def load_shape(self) -> LoadShape:
        """run.json's `load_shape` of a user step load."""
        return LoadShape(
            kind="step", start=int(self.start), step=int(self.step), seconds=self.seconds, max=int(self.max)
        )

    # --- rate steps ---

    def arrival_rate(self) -> str:
        """The --arrival-rate spec: hold each rate SECONDS, jump to the next (the last holds on)."""
        stages = [f"{self.start:g}"]
        for i, rate in enumerate(self.levels):
            if i:
                stages.append(f"{rate:g}@0s")
            stages.append(f"{rate:g}@{self.seconds:g}s")
        return "; ".join(stages)


def parse_steps(spec: str, rates: bool) -> Steps:
    """'START STEP SECONDS MAX' -> Steps; ValueError naming the problem. RATES: iterations/s
    (fractional, an optional '/s'), else users (whole numbers)."""
    words = spec.replace(",", " ").split()
    if len(words) != 4:
        raise ValueError(f"{spec!r}: {STEP_USAGE}")
    try:
        start, step, top = (float(w.removesuffix("/s")) if rates else int(w) for w in (*words[:2], words[3]))
    except ValueError:
        what = "numbers" if rates else "whole numbers"
        raise ValueError(f"{spec!r}: START, STEP and MAX must be {what}; {STEP_USAGE}") from None
    try:
        seconds = parse_duration(words[2])
    except ValueError as e:
        raise ValueError(f"{spec!r}: SECONDS {e}; {STEP_USAGE}") from None
    if not all(math.isfinite(v) for v in (start, step, seconds, top)):
        raise ValueError(f"{spec!r}: every value must be finite; {STEP_USAGE}")
    low, high = (0.0, MAX_RATE) if rates else (1, math.inf)
    if start <= 0 or start < low or step <= 0 or seconds <= 0 or top < start or top > high:
        limit = f" <= {MAX_RATE:g}" if rates else ""
        raise ValueError(f"{spec!r}: need START > 0, STEP > 0, SECONDS > 0 and START <= MAX{limit}; {STEP_USAGE}")
    return Steps(start, step, seconds, top)


def parse_step_users(spec: str) -> Steps:
    """User steps (--step-users/STEP_USERS): whole numbers of users."""
    return parse_steps(spec, rates=False)


def parse_step_rates(spec: str) -> Steps:
    """Rate steps (knee --rates/STEP_RATES): iterations/s."""
    return parse_steps(spec, rates=True)
