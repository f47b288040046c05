"""The users' pacing: the --wait-time option as a Locust wait_time function, and the waits the users
actually took.

The --wait-time option as a Locust wait_time function (the spec itself: core/loadspec.py).

The pacing the users actually took: each user class's waits, measured where the users run.

The verdict's load-bound rule needs each class's think time. The --wait-time option is not it: a
locustfile's class may set its own `wait_time` (e.g. `constant(0.02)`), and then the option says
nothing about what the users did. So every load generator wraps each user class's `wait_time` and
counts, per class, the waits and the seconds they asked for, whether they went through the option
(plugin/pacing.py marks those) and the peak number of users. Workers piggyback the cumulative sums on
their stats report (like generator.py's CPU seconds); the master keeps each worker's latest and adds them
up; a standalone runner reads its own. run.json's `pacing` is the result (core/bottleneck.py reads it)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

from locust import between, constant, constant_pacing, constant_throughput
from locust.env import Environment
from locust.runners import MasterRunner, Runner, WorkerRunner

from swarmbench.core.loadspec import parse_wait_time
from swarmbench.core.manifest import ClassPacing

# --- the --wait-time option -----------------------------------------------------------------------

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


# --- the pacing measured --------------------------------------------------------------------------

REPORT_KEY = "swarmbench_pacing"
"""Key in the worker -> master stats report; namespaced so it never collides with Locust's."""

WRAPPED = "swarmbench_pacing_wrapped"
"""Set on the wrapper, so a class is wrapped once (install() may run twice; subclasses inherit)."""

USERS_SAMPLE_S = 1.0
"""How often (at most) a wait also samples the runner's user count per class: counting users walks
every user, too costly on each of thousands of waits per second, and the peak changes slowly."""

OPEN_LOOP = ("constant_pacing.", "constant_throughput.")
"""Locust's wait_time helpers whose waits shrink as tasks slow down (a rate, not a think time):
their mean wait says nothing about the rate cap (constant_throughput is built on constant_pacing)."""


@dataclass
class ClassWaits:
    """One user class's cumulative waits since the test started, in one process (or summed)."""

    waits: int = 0
    wait_s: float = 0.0
    option_waits: int = 0
    peak_users: int = 0
    open_loop: bool = False

    def add(self, other: ClassWaits) -> None:
        self.waits += other.waits
        self.wait_s += other.wait_s
        self.option_waits += other.option_waits
        self.peak_users += other.peak_users  # workers' users add up
        self.open_loop = self.open_loop or other.open_loop

    @classmethod
    def from_report(cls, report: Any) -> ClassWaits:
        """A worker's entry, keeping only the fields this version knows (never fails the run)."""
        known = {f.name for f in fields(cls)} if isinstance(report, dict) else set()
        return cls(**{k: v for k, v in report.items() if k in known}) if known else cls()

    def manifest(self) -> ClassPacing:
        """run.json's entry for the class (mean_wait_s None: its users never called the class's
        wait_time -- e.g. a TaskSet with a wait_time of its own; the verdict then has no cap)."""
        return ClassPacing(
            users=self.peak_users,
            waits=self.waits,
            mean_wait_s=round(self.wait_s / self.waits, 6) if self.waits else None,
            wait_time_option_used=self.option_waits > 0,
            open_loop=self.open_loop,
        )


class Pacing:
    """This process's counts (load generators) or the workers' latest reports (master)."""

    def __init__(self) -> None:
        self.counts: dict[str, ClassWaits] = {}
        self.reports: dict[str, dict[str, dict[str, Any]]] = {}
        self.runner: Runner | None = None
        self.next_sample = 0.0

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        self.runner = runner
        if isinstance(runner, MasterRunner):
            return  # a master runs no users
        for cls in environment.user_classes:
            self.wrap(cls)

    def wrap(self, cls: type) -> None:
        original = getattr(cls, "wait_time", None)
        if original is None or getattr(original, WRAPPED, False):
            return
        open_loop = getattr(original, "__qualname__", "").startswith(OPEN_LOOP)
        pacing = self

        def wait_time(user: Any) -> float:
            user.__dict__.pop(OPTION_MARK, None)
            seconds = original(user)
            pacing.record(type(user).__name__, seconds, user.__dict__.pop(OPTION_MARK, False), open_loop)
            return seconds

        setattr(wait_time, WRAPPED, True)
        cls.wait_time = wait_time

    def record(self, name: str, seconds: float, option: bool, open_loop: bool) -> None:
        c = self.counts.setdefault(name, ClassWaits())
        c.waits += 1
        c.wait_s += float(seconds)
        c.option_waits += option
        c.open_loop = c.open_loop or open_loop
        now = time.monotonic()
        if now >= self.next_sample:
            self.next_sample = now + USERS_SAMPLE_S
            self.sample_users()

    def sample_users(self) -> None:
        if self.runner is None:
            return
        for name, n in self.runner.user_classes_count.items():
            c = self.counts.setdefault(name, ClassWaits())
            c.peak_users = max(c.peak_users, n)

    def on_test_start(self, environment: Environment, **_kw: Any) -> None:
        """Count from the test's start, like the stats (a UI run may start several tests)."""
        self.counts.clear()
        self.reports.clear()
        self.next_sample = 0.0

    def on_report_to_master(self, client_id: str, data: dict, **_kw: Any) -> None:
        if isinstance(self.runner, WorkerRunner) and self.counts:
            self.sample_users()
            data[REPORT_KEY] = {name: asdict(c) for name, c in self.counts.items()}

    def on_worker_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        report = data.get(REPORT_KEY)
        if isinstance(report, dict):
            self.reports[client_id] = report  # cumulative: the latest replaces the previous

    def manifest(self) -> dict[str, ClassPacing] | None:
        """run.json's `pacing`: {class: ClassWaits.manifest()}; None when no user waited."""
        if isinstance(self.runner, MasterRunner):
            total: dict[str, ClassWaits] = {}
            for report in self.reports.values():
                for name, entry in report.items():
                    total.setdefault(name, ClassWaits()).add(ClassWaits.from_report(entry))
        else:
            self.sample_users()
            total = self.counts
        out = {name: c.manifest() for name, c in sorted(total.items()) if c.waits or c.peak_users}
        return out or None
