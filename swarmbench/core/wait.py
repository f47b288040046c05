"""The --wait-time spec, parsed once: `between MIN MAX`, `constant S`, `throughput R`, `pacing S`.

Pacing decides whether adding load generators can raise the request rate at all, so it is a run
setting (recorded in run.json) rather than something edited in a locustfile. The plugin turns a
spec into Locust's wait function (plugin/wait.py); the runner validates it before anything starts;
the verdict reads its think time and the rate cap it puts on closed-loop users. All from here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

DEFAULT_WAIT_TIME = "between 0.5 1.5"
"""Default pacing: closed loop, ~1 s think time per user, like a person clicking through a UI.
With U users it caps the offered load near U requests/s whatever the worker count; use
`throughput R` or more users to measure a server's capacity."""

ARITY = {"between": 2, "constant": 1, "throughput": 1, "pacing": 1}
"""Each form and how many numbers it takes."""

WAIT_USAGE = "expected 'between MIN MAX', 'constant SECONDS', 'throughput TASKS_PER_S' or 'pacing SECONDS'"


@dataclass(frozen=True)
class WaitSpec:
    """A parsed spec: `kind` one of ARITY, `values` its numbers (finite, >= 0)."""

    kind: str
    values: tuple[float, ...]

    def __str__(self) -> str:
        return " ".join([self.kind, *(f"{v:g}" for v in self.values)])

    @property
    def think_time_s(self) -> float | None:
        """Mean seconds a closed-loop user waits between tasks; None for open-ish pacing
        (throughput, pacing), where the wait shrinks as responses slow down."""
        if self.kind == "between":
            return (self.values[0] + self.values[1]) / 2
        if self.kind == "constant":
            return self.values[0]
        return None

    @property
    def rate_per_user(self) -> float | None:
        """Most tasks/s one user can start with this pacing (even with instant responses); None
        when it does not cap the rate (zero think time)."""
        if self.kind == "throughput":
            return self.values[0]
        wait = self.values[0] if self.kind == "pacing" else self.think_time_s
        return 1 / wait if wait else None

    def offered_rate_cap(self, users: int) -> float | None:
        """Upper bound on tasks/s that USERS users with this pacing can start."""
        rate = self.rate_per_user
        return None if rate is None else rate * users


@functools.lru_cache(maxsize=64)
def parse_wait_time(spec: str) -> WaitSpec:
    """Parse a spec such as "between 0.5 1.5" or "throughput 2" (commas work as spaces).

    Raises ValueError with a message naming the spec when it is malformed.
    """
    words = spec.replace(",", " ").split()
    if not words or words[0] not in ARITY or len(words) - 1 != ARITY[words[0]]:
        raise ValueError(f"invalid wait time {spec!r}: {WAIT_USAGE}")
    try:
        numbers = tuple(float(w) for w in words[1:])
    except ValueError:
        raise ValueError(f"invalid wait time {spec!r}: {words[1:]} are not numbers") from None
    if any(n < 0 or not math.isfinite(n) for n in numbers):
        raise ValueError(f"invalid wait time {spec!r}: values must be finite and >= 0")
    if words[0] == "between" and numbers[0] > numbers[1]:
        raise ValueError(f"invalid wait time {spec!r}: MIN is larger than MAX")
    if words[0] == "throughput" and numbers[0] == 0:
        raise ValueError(f"invalid wait time {spec!r}: throughput must be > 0")
    return WaitSpec(words[0], numbers)


def try_parse(spec: str | None) -> WaitSpec | None:
    """The parsed spec, or None for no spec or a malformed one (a recorded run.json is read, not
    validated: an old or hand-made value must not stop the analysis)."""
    if not spec:
        return None
    try:
        return parse_wait_time(spec)
    except ValueError:
        return None
