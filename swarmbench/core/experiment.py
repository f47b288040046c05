"""What an experiment varies: request mixes, the target's store strategies, sweep modes, step load.

Named once here: the albums scenario builds its cycles under these mix names, the plugin validates
--albums-mix against them, the sweep plans over them, the CLI's help lists them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_MIX = "default"
READ_HEAVY = "read-heavy"
POST_HEAVY = "post-heavy"
MIXES: dict[str, str] = {DEFAULT_MIX: "3:1", READ_HEAVY: "9:1", POST_HEAVY: "1:3"}
"""Request mixes of the bundled albums scenario -> their GET:POST ratio (the cycles live in
locustfiles/albums.py). The store strategies differ most between a write-heavy and a read-heavy load."""

STORES = ("mutex", "rwmutex", "syncmap", "sharded")
"""The target's shared-state strategies (ALBUMS_STORE); target/store.go implements them."""

STRONG, WEAK = "strong", "weak"
SWEEP_MODES = (STRONG, WEAK)
"""strong: total users fixed as workers grow; weak: users per worker fixed, so the total grows."""

STEP_SETTLE_S = 5
"""Seconds `knee` adds to a step load's run time, so the last step runs its whole length."""


@dataclass(frozen=True)
class StepLoad:
    """Users START, START+STEP, ... up to MAX, SECONDS per step (`--step-users`)."""

    start: int
    step: int
    seconds: float
    max: int

    @property
    def steps(self) -> int:
        return (self.max - self.start) // self.step + 1

    @property
    def duration_s(self) -> float:
        return self.steps * self.seconds

    def users_at(self, run_time_s: float) -> int | None:
        """Users at RUN_TIME_S seconds into the test; None once the last step has run."""
        index = int(run_time_s // self.seconds)
        return None if index >= self.steps else self.start + index * self.step

    def run_time(self) -> str:
        """A --run-time that covers every step plus STEP_SETTLE_S, e.g. '125s'."""
        return f"{math.ceil(self.duration_s) + STEP_SETTLE_S}s"

    def as_json(self) -> dict:
        return {
            "kind": "step",
            "start": self.start,
            "step": self.step,
            "seconds": self.seconds,
            "max": self.max,
        }


def parse_step_users(spec: str) -> StepLoad:
    """'START STEP SECONDS MAX' -> StepLoad; ValueError naming the problem."""
    words = spec.replace(",", " ").split()
    if len(words) != 4:
        raise ValueError(f"{spec!r}: expected 'START STEP SECONDS MAX', e.g. '10 10 20 80'")
    try:
        start, step, top = int(words[0]), int(words[1]), int(words[3])
        seconds = float(words[2].rstrip("s"))
    except ValueError:
        raise ValueError(f"{spec!r}: START, STEP and MAX must be whole numbers, SECONDS a number") from None
    if start < 1 or step < 1 or not (0 < seconds < math.inf) or top < start:
        raise ValueError(f"{spec!r}: need START >= 1, STEP >= 1, SECONDS > 0 and MAX >= START")
    return StepLoad(start, step, seconds, top)
