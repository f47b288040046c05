"""The --wait-time option as a Locust wait_time function (the spec itself: core/wait.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from locust import between, constant, constant_pacing, constant_throughput

from swarmbench.core.wait import parse_wait_time

WaitFunc = Callable[..., float]

_MAKERS: dict[str, Callable[..., WaitFunc]] = {
    "between": between,
    "constant": constant,
    "throughput": constant_throughput,
    "pacing": constant_pacing,
}

OPTION_MARK = "_swarmbench_option_wait"
"""Set on a user for each wait taken through the option, so plugin/pacing.py can tell a class paced
by --wait-time from one with a wait_time of its own (the verdict names the latter)."""


@functools.lru_cache(maxsize=32)
def wait_function(spec: str) -> WaitFunc:
    """Locust's wait function for SPEC; ValueError (naming the spec) when it is malformed."""
    parsed = parse_wait_time(spec)
    locust_wait = _MAKERS[parsed.kind](*parsed.values)

    def option_wait(user) -> float:
        setattr(user, OPTION_MARK, True)
        return locust_wait(user)

    return option_wait
