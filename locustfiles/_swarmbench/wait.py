"""The --wait-time option: one spec string -> a Locust wait_time function.

Closed-loop (`between`, `constant`) and open-ish (`throughput`, `pacing`) pacing are the knob that
decides whether adding load generators can raise the request rate at all, so it is a run setting
(recorded in run.json), not something edited in a locustfile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from locust import between, constant, constant_pacing, constant_throughput

DEFAULT_WAIT_TIME = "between 0.5 1.5"
"""Default pacing: closed loop, ~1 s think time per user, like a person clicking through a UI.
With U users it caps the offered load near U requests/s whatever the worker count; use
`throughput R` or more users to measure a server's capacity."""

WaitFunc = Callable[..., float]

_FORMS = {
    "between": (2, lambda a, b: between(a, b)),
    "constant": (1, lambda x: constant(x)),
    "throughput": (1, lambda r: constant_throughput(r)),
    "pacing": (1, lambda x: constant_pacing(x)),
}

USAGE = "expected 'between MIN MAX', 'constant SECONDS', 'throughput TASKS_PER_S' or 'pacing SECONDS'"


@functools.lru_cache(maxsize=32)
def parse_wait_time(spec: str) -> WaitFunc:
    """Parse a wait-time spec such as "between 0.5 1.5" or "throughput 2".

    Raises ValueError with a message naming the spec when it is malformed.
    """
    words = spec.replace(",", " ").split()
    if not words or words[0] not in _FORMS:
        raise ValueError(f"invalid wait time {spec!r}: {USAGE}")
    arity, make = _FORMS[words[0]]
    if len(words) - 1 != arity:
        raise ValueError(f"invalid wait time {spec!r}: {USAGE}")
    try:
        numbers = [float(w) for w in words[1:]]
    except ValueError:
        raise ValueError(f"invalid wait time {spec!r}: {words[1:]} are not numbers") from None
    if any(n < 0 or n != n or n == float("inf") for n in numbers):
        raise ValueError(f"invalid wait time {spec!r}: values must be finite and >= 0")
    if words[0] == "between" and numbers[0] > numbers[1]:
        raise ValueError(f"invalid wait time {spec!r}: MIN is larger than MAX")
    if words[0] == "throughput" and numbers[0] == 0:
        raise ValueError(f"invalid wait time {spec!r}: throughput must be > 0")
    return make(*numbers)
