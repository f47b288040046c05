"""The open model on a load generator: free users claim the slots of its share and sleep until due.

Every user class gets a `wait_time` that blocks until the user's next iteration (its next task) is
due, and an `on_start` that waits for one before the first task; the user's own tasks, TaskSets and
on_start run unchanged, so any locustfile works, and the albums journey still steps through its
list -> get -> create -> get cycle one iteration at a time (3:1 held).

A user that becomes free claims the lowest unclaimed slot of this generator's share of the schedule
(core/slots.py) and sleeps on its own timer until the slot is due: users claim in the order they
free up, so the one that has waited longest runs the next iteration. A slot that comes due with
no claim found no free user: it is DROPPED and counted -- never silently delayed. With
--arrival-max-wait S > 0 a user that frees up within S of a slot's time still takes it, late: the
wait is then part of its intended-start latency, the queueing a closed-loop test never shows.

There is no dispatcher: an iteration costs one timer and one switch into its user, as a paced
closed-loop user's does (a ticker handing iterations to idle users cost two more switches and an
event-loop round each). The timer is a timerfd where there is one (alarm.py): gevent's own wake
up to 1 ms late, and that lateness would be measured as latency. The intended time travels with
the iteration, so every request it makes records both Locust's response time and the time since
the intended start.
"""

from __future__ import annotations

import os
import time
from typing import Any

import gevent
from gevent.hub import Waiter

from swarmbench.core.arrival import ArrivalSchedule
from swarmbench.core.arrival_counts import ArrivalCounts
from swarmbench.core.slots import Slots
from swarmbench.plugin.alarm import EARLY_S, Alarm

LATE_START_GRACE_S = 0.001
"""A user that frees up this soon after a slot's time still takes it (late) rather than dropping
it, even without --arrival-max-wait: gevent's timers and a busy event loop run users up to about
1 ms late, and that jitter is the generator's, not a sign that the pool ran out. The lateness still
counts in the iteration's intended-start latency."""

PARK_S = 1.0
"""How long a user with nothing to claim (before the master's first word, or a share of 0) sleeps
before looking again; a change of share wakes it at once."""

INTENDED = "swarmbench_intended_start"
"""Attribute of a user's greenlet: its current iteration's (intended start, latency origin), in
perf_counter time. On the greenlet, so it lives exactly as long as the user does."""

PATCHED = "swarmbench_open_model"
"""Marks the open-model wrappers (install may run twice; a subclass inherits its parent's)."""


class Pool:
    """This generator's share of the schedule, its users' claims, and what it has not reported yet."""

    def __init__(self) -> None:
        self.counts = ArrivalCounts()  # since the last report
        self.slots: Slots | None = None  # None: not configured yet, or stopped
        self.last_t0 = 0.0  # the clock of requests still finishing once the test is stopping
        self.wall_offset = 0.0  # time.time() - time.perf_counter(): Locust stamps requests in epoch time
        self.found_user = True  # the last slot found a free user (a drop after it starts an event)
        self.max_wait_s = 0.0
        self.sleepers: set[Waiter] = set()  # the users asleep (for a slot, or parked)
        self.alarm: Alarm | None = None
        self.alarm_made = False
        os.register_at_fork(after_in_child=self._forget_alarm)

    # --- the master's word: this generator's share, the schedule's clock -----------------------

    def configure(self, schedule: ArrivalSchedule, share: float, elapsed_s: float, phase: float) -> None:
        """Take SHARE of SCHEDULE, now ELAPSED_S seconds into it. The first call sets the clock and
        skips what was due before this generator joined (it never offered those); later calls
        re-split without a jump in the count. PHASE in [0, 1) staggers generators' iterations."""
        now = time.perf_counter()
        if self.slots is None:
            self.slots = Slots.join(schedule, share, now, elapsed_s, phase)
            self.wall_offset = time.time() - now
            self.last_t0 = self.slots.t0
            self.counts.cover(now - self.slots.t0)
        elif not self.slots.resplit(share, now):
            return
        self._wake_all()  # parked users may claim now; claimed slots fall due at other times

    def stop(self) -> None:
        """The test is stopping: no more iterations (users being stopped are not drops). Slots that
        came due without a user never started: dropped. A claimed slot whose user has not woken
        yet never started either, for want of time, not of users: it is not counted."""
        if self.slots is None:
            return
        now = time.perf_counter()
        self._expire(now, 0.0)
        self.slots = None
        self._wake_all()

    def _wake_all(self) -> None:
        loop = gevent.get_hub().loop
        for waiter in list(self.sleepers):
            loop.run_callback(waiter.switch, None)

    def _expire(self, now: float, wait_s: float) -> None:
        """At NOW, count the slots due more than WAIT_S ago that no user claimed as dropped."""
        assert self.slots is not None
        self._account(self.slots.expire(now - wait_s), now)

    def _account(self, dropped: dict[int, int], now: float) -> None:
        """Count DROPPED {second: how many} (a run of drops starts an exhaustion event), and that
        this generator was live at NOW."""
        assert self.slots is not None
        self.counts.cover(now - self.slots.t0)
        if dropped and self.found_user:
            self.counts.exhaustion_events += 1
            self.found_user = False
        for second, n in dropped.items():
            self.counts.record_many(second, started=0, dropped=n)

    def _record(self, intended: float, started: bool) -> None:
        self.counts.record(int(intended - self.last_t0), started)

    # --- the users' side --------------------------------------------------------------------------

    def wait_for_iteration(self) -> float:
        """Block the calling user until its next iteration is due; remember the iteration's
        intended start for the requests it makes. Returns 0: Locust then sleeps 0 s (the wait
        happened here)."""
        while True:
            slots = self.slots
            if slots is None or slots.share <= 0:
                self._sleep(time.perf_counter() + PARK_S)
                continue
            now = time.perf_counter()
            k, due, dropped = slots.claim(now - max(self.max_wait_s, LATE_START_GRACE_S))
            self._account(dropped, now)
            late = now - due > LATE_START_GRACE_S  # claimed after its time: no user was free then
            early = EARLY_S if self._alarm() is not None else 0.0
            while due > now + early:
                self._sleep(min(due, now + PARK_S))
                if self.slots is not slots:  # stopped (or a new test) while asleep: no iteration
                    break
                due, now = slots.due(k), time.perf_counter()  # a re-split moves the slot
            else:
                self._start(due, min(due, now), late)
                return 0.0

    def _start(self, intended: float, origin: float, late: bool) -> None:
        """The calling user starts the iteration INTENDED for then, now. Its requests' latency
        counts from ORIGIN: the intended time, or the actual start when woken early (alarm.py)."""
        if late:  # no user was free at its time: it waited for this one (--arrival-max-wait)
            self.counts.queued += 1
            if self.found_user:
                self.counts.exhaustion_events += 1
            self.found_user = False
        else:
            self.found_user = True
        self._record(intended, started=True)
        setattr(gevent.getcurrent(), INTENDED, (intended, origin))  # its requests look it up

    def _sleep(self, until: float) -> None:
        """Sleep until UNTIL (perf_counter time) or until configure()/stop() wakes every sleeper."""
        hub = gevent.get_hub()
        waiter = Waiter(hub)
        self.sleepers.add(waiter)
        alarm = self._alarm()
        try:
            if alarm is not None:
                entry = alarm.sleep_until(until, waiter)
                try:
                    waiter.get()
                finally:
                    alarm.cancel(entry)
            else:
                hub.loop.update_now()  # libev's cached time may be a loop iteration old
                with hub.loop.timer(max(0.0, until - time.perf_counter())) as timer:
                    timer.start(waiter.switch, None)
                    waiter.get()
        finally:
            self.sleepers.discard(waiter)

    def _alarm(self) -> Alarm | None:
        """This process's precise alarm, made on first use: Locust's --processes forks workers
        after the plugin loads, and a timerfd must belong to the process that sleeps on it."""
        if not self.alarm_made:
            self.alarm, self.alarm_made = Alarm.create(), True
        return self.alarm

    def _forget_alarm(self) -> None:
        """(a forked child) The parent's alarm is not this process's."""
        self.alarm, self.alarm_made = None, False

    def intended(self, start_time: float | None, response_time: float) -> tuple[float, int] | None:
        """The request the calling user just made: (ms from its iteration's intended start to its
        end, the schedule's second of that start); None outside an iteration (a user's on_start).
        The exact-latency recorder (latency.py) asks, so each request is recorded once."""
        iteration = getattr(gevent.getcurrent(), INTENDED, None)
        if iteration is None:
            return None
        intended, origin = iteration
        # The request's end as Locust timed it (start + response time), not now: a task that parses
        # the body inside `catch_response` fires the event later, and that is not the server's time.
        end = start_time - self.wall_offset + response_time / 1000 if start_time else time.perf_counter()
        return (end - origin) * 1000, int(intended - self.last_t0)

    def take_report(self) -> dict[str, Any]:
        """What happened since the last report (deltas), then start over. Slots that came due
        unclaimed are counted first, so drops reach the master within a report interval."""
        if self.slots is not None:
            self._expire(time.perf_counter(), max(self.max_wait_s, LATE_START_GRACE_S))
        out = {"counts": self.counts.to_report()}
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
