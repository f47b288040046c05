"""The open model on a load generator: a pool of idle users, iterations handed out on schedule.

Every user class gets a `wait_time` that blocks until the generator hands its user an iteration
(the user's next task), and an `on_start` that waits for one before the first task; the user's
own tasks, TaskSets and on_start run unchanged, so any locustfile works, and the albums journey
still steps through its list -> get -> create -> get cycle one iteration at a time (3:1 held).

A ticker greenlet fires this generator's share of the schedule: the k-th local iteration is due
when share x iterations(t) reaches k (core/arrival.py). At its intended time it goes to the user
that has waited longest; with no user idle it is DROPPED and counted -- never silently delayed.
With --arrival-max-wait S > 0 it may instead wait up to S for the next user that frees up (oldest
first), and is dropped after that: the wait is then part of its intended-start latency, the
queueing a closed-loop test never shows. The intended time travels with the iteration, so every
request it makes records both Locust's response time and the time since the intended start.
"""

from __future__ import annotations

import contextlib
import math
import time
import weakref
from collections import deque
from typing import Any

import gevent
from gevent.event import AsyncResult

from swarmbench.core.arrival import ArrivalCounts, ArrivalSchedule

from .hdr import LatencyBook, Timeline

MAX_SLEEP_S = 0.1
"""Longest the ticker sleeps before looking at the schedule again (a rate of 0, a long gap): it
also marks this generator live, so the window its achieved rate is taken over ends within this of
the stop even at 1 iteration/s."""

PATCHED = "swarmbench_open_model"
"""Marks the open-model wrappers (install may run twice; a subclass inherits its parent's)."""


class Pool:
    """This generator's idle users, its share of the schedule, and what it has not reported yet."""

    def __init__(self) -> None:
        self.idle: deque[AsyncResult] = deque()
        self.counts = ArrivalCounts()  # since the last report
        self.latency = LatencyBook()  # since the last report
        self.timeline = Timeline()  # since the last report
        self.iteration: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self.schedule: ArrivalSchedule | None = None
        self.t0: float | None = None  # perf_counter() at the schedule's second 0
        self.last_t0 = 0.0  # the clock of requests still finishing once the test is stopping
        self.wall_offset = 0.0  # time.time() - time.perf_counter(): Locust stamps requests in epoch time
        self.share = 0.0
        self.offset = 0.0  # local count = share * iterations(t) + offset (continuous over re-splits)
        self.next_k = 0.0
        self.found_user = True
        self.max_wait_s = 0.0
        self.pending: deque[float] = deque()  # intended times waiting for a user (max_wait_s > 0)
        self.ticker: gevent.Greenlet | None = None

    # --- the master's word: this generator's share, the schedule's clock -----------------------

    def configure(self, schedule: ArrivalSchedule, share: float, elapsed_s: float, phase: float) -> None:
        """Take SHARE of SCHEDULE, now ELAPSED_S seconds into it. The first call sets the clock and
        skips what was due before this generator joined (it never offered those); later calls
        re-split without a jump in the count. PHASE in [0, 1) staggers generators' iterations."""
        now = time.perf_counter()
        if self.t0 is None:
            self.schedule, self.t0, self.share = schedule, now - elapsed_s, share
            self.wall_offset = time.time() - time.perf_counter()
            self.last_t0 = self.t0
            self.offset = 0.0
            self.next_k = phase + math.ceil(max(0.0, self._count(now) - phase))
        elif share != self.share:
            count = self._count(now)
            self.share = share
            self.offset = count - share * self._iterations(now)
        if self.ticker is None:
            self.ticker = gevent.spawn(self._tick)

    def stop(self) -> None:
        """The test is stopping: no more iterations (users being stopped are not drops); those
        still waiting for a user never started: dropped."""
        if self.ticker is not None:
            self.ticker.kill(block=False)
            self.ticker = None
        while self.pending:
            self._record(self.pending.popleft(), started=False)
        self.t0, self.share = None, 0.0

    def _iterations(self, t: float) -> float:
        assert self.schedule is not None and self.t0 is not None
        return self.schedule.iterations(t - self.t0)

    def _count(self, t: float) -> float:
        return self.share * self._iterations(t) + self.offset

    def _due(self) -> float:
        """perf_counter() time of the next local iteration; inf while this share offers none."""
        if self.share <= 0 or self.schedule is None or self.t0 is None:
            return math.inf
        return self.t0 + self.schedule.time_at((self.next_k - self.offset) / self.share)

    # --- the ticker -------------------------------------------------------------------------------

    def _tick(self) -> None:
        while self.t0 is not None:  # stop() clears it (a kill may land after one more wake-up)
            now = time.perf_counter()
            self.counts.cover(now - self.t0)
            self._expire(now)
            due = self._due()
            if due > now:
                # A plain sleep (a re-split takes effect at the next wake, within MAX_SLEEP_S):
                # an Event wait with a timeout costs about twice as much CPU per iteration.
                gevent.sleep(min(due - now, MAX_SLEEP_S))
                continue
            # Everything due by now in one go, each at its own intended time: at high rates one
            # wake-up (the event loop's timers have ~1 ms resolution) serves several iterations,
            # and a late process catches up without a switch per iteration.
            while due <= now and self.t0 is not None:
                self._dispatch(due)
                due = self._due()
            gevent.sleep(0)  # let the users it just woke run

    def _dispatch(self, intended: float) -> None:
        if self.t0 is None:  # stopped while the ticker was already due to resume
            return
        self.next_k += 1
        self._expire(time.perf_counter())
        found = bool(self.idle)  # (an idle user would already have taken any pending iteration)
        if not found and self.found_user:
            self.counts.exhaustion_events += 1
        self.found_user = found
        if found:
            self.idle.popleft().set(intended)
            self._record(intended, started=True)
        elif self.max_wait_s > 0:
            self.pending.append(intended)
            self.counts.queued += 1
        else:
            self._record(intended, started=False)

    def _expire(self, now: float) -> None:
        """Drop the iterations that have waited longer than --arrival-max-wait for a user."""
        while self.pending and now - self.pending[0] > self.max_wait_s:
            self._record(self.pending.popleft(), started=False)

    def _record(self, intended: float, started: bool) -> None:
        assert self.t0 is not None
        self.counts.record(int(intended - self.t0), started)

    # --- the users' side --------------------------------------------------------------------------

    def wait_for_iteration(self) -> float:
        """Block the calling user until an iteration is handed to it; remember its intended start
        for the requests it makes. Returns 0: Locust then sleeps 0 s (the wait happened here)."""
        if self.pending:
            self._expire(time.perf_counter())
        if self.pending:  # an iteration is already waiting for a user: this one takes it
            intended = self.pending.popleft()
            self._record(intended, started=True)
        else:
            slot = AsyncResult()
            self.idle.append(slot)
            try:
                intended = slot.get()
            finally:
                if not slot.ready():  # killed while idle (the test stops): leave the queue
                    with contextlib.suppress(ValueError):
                        self.idle.remove(slot)
        self.iteration[gevent.getcurrent()] = intended
        return 0.0

    def on_request(
        self,
        request_type: str,
        name: str,
        response_time: float | None,
        start_time: float | None = None,
        **_kw: Any,
    ) -> None:
        if response_time is None:
            return
        self.latency.record(request_type, name, "service", response_time)
        intended = self.iteration.get(gevent.getcurrent())
        if intended is None:  # a request outside an iteration (a user's on_start) has none
            return
        second = int(intended - self.last_t0)
        # The request's end as Locust timed it (start + response time), not now: a task that parses
        # the body inside `catch_response` fires the event later, and that is not the server's time.
        end = start_time - self.wall_offset + response_time / 1000 if start_time else time.perf_counter()
        self.latency.record(request_type, name, "intended", (end - intended) * 1000)
        self.timeline.record(second, "service", response_time)
        self.timeline.record(second, "intended", (end - intended) * 1000)

    def take_report(self) -> dict[str, Any]:
        """What happened since the last report (deltas), then start over."""
        out = {
            "counts": self.counts.to_report(),
            "latency": self.latency.take(),
            "timeline": self.timeline.take(),
        }
        self.counts = ArrivalCounts()
        return out


def install_users(user_classes: list[type], pool: Pool) -> None:
    """Give every user class the open-model wait (see the module's docstring). The wrappers are
    marked, so a subclass of a class already given them (or a second install) keeps them as is."""
    for cls in user_classes:
        if not getattr(cls.on_start, PATCHED, False):
            cls.on_start = _waiting_on_start(cls.on_start)
        if not getattr(cls.wait_time, PATCHED, False):
            cls.wait_time = _marked(lambda user: pool.wait_for_iteration())
        for taskset in _tasksets(cls):
            own = vars(taskset).get("wait_time")
            if own is not None and not getattr(own, PATCHED, False):  # it would bypass the user's
                taskset.wait_time = _marked(lambda ts: pool.wait_for_iteration())


def _waiting_on_start(original: Any) -> Any:
    def on_start(user: Any) -> None:
        original(user)
        user.wait()  # Locust's own wait (state "waiting": a stop ends it at once) -> wait_time

    return _marked(on_start)


def _marked(function: Any) -> Any:
    setattr(function, PATCHED, True)
    return function


def _tasksets(cls: type) -> list[type]:
    """TaskSet classes reachable from a user class's tasks (nested ones too)."""
    found: list[type] = []
    todo = list(getattr(cls, "tasks", []) or [])
    while todo:
        task = todo.pop()
        if isinstance(task, type) and hasattr(task, "tasks") and task not in found:
            found.append(task)
            todo.extend(task.tasks or [])
    return found
