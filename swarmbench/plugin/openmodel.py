"""The open model (--arrival-rate) inside Locust: the schedule shared by all load generators, users
claiming its slots, woken on time by a timerfd.

Waking greenlets at an exact time: a Linux timerfd, not gevent's timers.

gevent's timers (libev on epoll) wake up to 1 ms late: epoll_wait takes its timeout in whole
milliseconds and libev rounds it up. For a closed-loop user that is noise; for the open model it is
not -- every iteration would start ~0.6 ms after its intended time and that lateness would be
measured as latency (intended-start p50 on a fast target was 3x the service time). A timerfd armed
at the earliest due time makes epoll return within about 50 µs of it, with the default backend and
inside containers (Docker's seccomp profile allows timerfd; it blocks io_uring, the other way out).

One Alarm per process: sleepers in a heap by due time, the timerfd armed for the first. When it
fires, the hub wakes every sleeper due by now + EARLY_S, in due order (the user that claimed first
runs first).
Where there is no timerfd (macOS, or ctypes cannot find it) `Alarm.create()` returns None and
callers sleep on gevent's own timers.

The open model on a load generator: free users claim the slots of its share and sleep until due.

Every user class gets a `wait_time` that blocks until the user's next iteration (its next task) is
due, and an `on_start` that waits for one before the first task; the user's own tasks, TaskSets and
on_start run unchanged, so any locustfile works, and the albums journey still steps through its
list -> get -> create -> get cycle one iteration at a time (3:1 held).

A user that becomes free claims the lowest unclaimed slot of this generator's share of the schedule
(core/openmodel.py) and sleeps on its own timer until the slot is due: users claim in the order they
free up, so the one that has waited longest runs the next iteration. A slot that comes due with
no claim found no free user: it is DROPPED and counted -- never silently delayed. With
--arrival-max-wait S > 0 a user that frees up within S of a slot's time still takes it, late: the
wait is then part of its intended-start latency, the queueing a closed-loop test never shows.

There is no dispatcher: an iteration costs one timer and one switch into its user, as a paced
closed-loop user's does (a ticker handing iterations to idle users cost two more switches and an
event-loop round each). The timer is a timerfd where there is one (Alarm, below): gevent's own wake
up to 1 ms late, and that lateness would be measured as latency. The intended time travels with
the iteration, so every request it makes records both Locust's response time and the time since
the intended start.

--arrival-rate: open-model load across all load generators (the grammar: core/loadspec.py).

Who does what:

    every process   init: parse the schedule (a bad value stops the run with one line)
    generators      the users wait for iterations from a Pool (below), which tells the
                    exact-latency recorder (latency.py) each request's intended-start latency;
                    each stats report carries the counts since the last one (deltas)
    master          from the end of spawning (the pool is ready) to the stop, tells each worker
                    every COORDINATE_INTERVAL_S its share of the rate (its users / all users of
                    the connected workers; equal shares until they report users), its phase, and
                    how far into the schedule the run is; a worker that joins or goes missing
                    changes the shares at the next tick. It sums the reports and, at quitting,
                    writes locust_arrival.csv and run.json's `open_model` (the latency
                    files are every run's: latency.py)
    standalone      both roles in one process, without messages

The clock of the schedule is the master's: a worker sets its second 0 from the elapsed time in the
first message, so every generator ramps together however late it joined."""

from __future__ import annotations

import contextlib
import csv
import ctypes
import heapq
import itertools
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import gevent
from gevent.hub import Waiter
from hdrh.histogram import HdrHistogram
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner, Runner, WorkerRunner

from swarmbench.core import folder
from swarmbench.core.atomic import atomic_file
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.loadspec import ArrivalSchedule, parse_arrival_rate, parse_duration
from swarmbench.core.manifest import LatencyFigures, OpenLatency, OpenModel
from swarmbench.core.openmodel import (
    PER_SECOND_COLUMNS,
    ArrivalCounts,
    Slots,
    generator_iterations,
    summarize,
)
from swarmbench.latency.histogram import TIMELINE_COLUMNS, LatencyBook, Samples, max_ms, percentile_ms
from swarmbench.plugin.options import die

# --- waking greenlets at an exact time ------------------------------------------------------------

EARLY_S = 0.001
"""Sleepers due this soon after a wake-up are woken with it, early: the schedule is kept to 1 ms,
the granularity of gevent's own timers (which run up to 1 ms late instead). A wake-up of an idle
event loop costs a generator ~40 µs of CPU on a VM; one per iteration cost a fifth of its requests
at 3000/s (71 % CPU against 58 % with this, and 69 % on gevent's timers). An iteration that starts
early is measured from when it started (plugin/openmodel.py), so the shift never shortens a latency."""

CLOCK_MONOTONIC = 1
"""time.perf_counter()'s clock on Linux, so due times need no conversion."""
TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class Alarm:
    """Sleep until a perf_counter() time, woken by one timerfd shared by all sleepers."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._settime = libc.timerfd_settime
        self._fd = fd
        self._spec = _Itimerspec()
        self._heap: list[list] = []  # [due, seq, waiter or None when cancelled]
        self._seq = itertools.count()
        self._armed = float("inf")
        self._watcher = gevent.get_hub().loop.io(fd, 1, ref=False)  # ref'd while anyone sleeps
        self._watcher.start(self._fired)

    @classmethod
    def create(cls) -> Alarm | None:
        """This process's alarm, or None where there is no timerfd (sleep on gevent's timers)."""
        if not sys.platform.startswith("linux") or time.get_clock_info("perf_counter").adjustable:
            return None
        try:  # the process's own symbols include libc's (find_library would run ldconfig)
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.timerfd_create(CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(libc, fd) if fd >= 0 else None

    def sleep_until(self, due: float, waiter: Waiter) -> list:
        """Have WAITER switched (from the hub) once DUE has come; the caller then waits on it.
        Returns the entry to cancel() if the caller wakes for another reason first."""
        entry = [due, next(self._seq), waiter]
        if not self._heap:
            self._watcher.ref = True  # a sleeper waits on it: the loop must not think itself idle
        heapq.heappush(self._heap, entry)
        if due < self._armed:
            self._arm(due)
        return entry

    @staticmethod
    def cancel(entry: list) -> None:
        entry[2] = None  # left in the heap; dropped when it comes up

    def _arm(self, due: float) -> None:
        sec = int(due)
        value = self._spec.it_value
        value.tv_sec, value.tv_nsec = sec, max(1, int((due - sec) * 1e9))  # 0 would disarm it
        if self._settime(self._fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")
        self._armed = due

    def _fired(self) -> None:
        """(hub) The timerfd is readable: wake every sleeper due by now (+ EARLY_S), then arm for
        the next."""
        with contextlib.suppress(BlockingIOError):  # already read on an earlier wake-up
            os.read(self._fd, 8)
        self._armed = float("inf")
        heap = self._heap
        limit = time.perf_counter() + EARLY_S
        while heap and heap[0][0] <= limit:
            waiter = heapq.heappop(heap)[2]
            if waiter is not None:
                waiter.switch(None)  # runs the sleeper until it blocks again
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
        if heap:
            self._arm(heap[0][0])
        else:
            self._watcher.ref = False  # nobody waits: it keeps no process alive


# --- a generator's pool of users ------------------------------------------------------------------

LATE_START_GRACE_S = 0.001
"""A user that frees up this soon after a slot's time still takes it (late) rather than dropping
it, even without --arrival-max-wait: gevent's timers and a busy event loop run users up to about
1 ms late, and that jitter is the generator's, not a sign that the pool ran out. The lateness still
counts in the iteration's intended-start latency."""

STOP_HOLD_MAX_S = 1.0
"""The most of a hold before test_stopping that Pool.stop() leaves out of the schedule: bounds what
a wall-clock step in between could take away."""

PARK_S = 1.0
"""How long a user with nothing to claim (before the master's first word, or a share of 0) sleeps
before looking again; a change of share wakes it at once."""

INTENDED = "swarmbench_intended_start"
"""Attribute of a user's greenlet: its current iteration's [intended start, latency origin (both in
perf_counter time), its first request still to come]. On the greenlet, so it lives exactly as long
as the user does."""

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
        self.start_lag = Samples()  # µs from each iteration's origin to its first request (intended())
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
        yet never started either, for want of time, not of users: it is not counted.

        Neither is a slot that came due while the stopping Locust held the event loop before
        saying so: its stop() walks the stack with inspect.stack() (~50 ms here) before it fires
        test_stopping, and every slot due meanwhile found the free users asleep on their timers,
        not busy; at 1,000/s that was 10-15 false drops a run and a "pool exhaustion event". The
        schedule ends at the loop's last iteration (libev's time of it), the last moment a free
        user could have started one."""
        if self.slots is None:
            return
        now = time.perf_counter()
        held = time.time() - gevent.get_hub().loop.now()  # both wall-clock: since the loop last ran
        end = now - min(max(held, 0.0), STOP_HOLD_MAX_S)
        self._expire(end, 0.0)
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
        counts from ORIGIN: the intended time, or the actual start when woken early (Alarm)."""
        if late:  # no user was free at its time: it waited for this one (--arrival-max-wait)
            self.counts.queued += 1
            if self.found_user:
                self.counts.exhaustion_events += 1
            self.found_user = False
        else:
            self.found_user = True
        self._record(intended, started=True)
        setattr(gevent.getcurrent(), INTENDED, [intended, origin, True])  # its requests look it up

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
        intended, origin, first = iteration
        # The request's end as Locust timed it (start + response time), not now: a task that parses
        # the body inside `catch_response` fires the event later, and that is not the server's time.
        end = start_time - self.wall_offset + response_time / 1000 if start_time else time.perf_counter()
        if first:  # the iteration's first request: how late it went out is the generator's own share
            iteration[2] = False
            lag = self.start_lag.pending
            lag.append(int((end - origin) * 1_000_000 - response_time * 1000 + 0.5))
            if len(lag) >= Samples.FOLD_AT:
                self.start_lag.fold()
        return (end - origin) * 1000, int(intended - self.last_t0)

    def take_report(self) -> dict[str, Any]:
        """What happened since the last report (deltas), then start over. Slots that came due
        unclaimed are counted first, so drops reach the master within a report interval."""
        if self.slots is not None:
            self._expire(time.perf_counter(), max(self.max_wait_s, LATE_START_GRACE_S))
        out: dict[str, Any] = {"counts": self.counts.to_report()}
        self.counts = ArrivalCounts()
        lag = self.start_lag.take()
        if lag is not None:
            out["start_lag"] = lag
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


# --- the schedule across all generators -----------------------------------------------------------

logger = logging.getLogger("swarmbench")

MESSAGE = "swarmbench_arrival"
"""Custom master -> worker message: {"spec", "share", "phase", "elapsed_s"}."""

REPORT_KEY = "swarmbench_arrival"
"""Key in the worker -> master stats report; namespaced so it never collides with Locust's."""

COORDINATE_INTERVAL_S = 0.5
"""How often the master re-sends each worker its share: a worker that joins gets its share, and
the others theirs re-split, within this long (each message is a few bytes)."""


class ArrivalLoad:
    """The open model in this process; inactive (no listener does anything) without the option."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin  # the Swarmbench object: its `run` is the folder to write to
        self.spec = ""
        self.max_wait_s = 0.0
        self.schedule: ArrivalSchedule | None = None
        self.runner: Runner | None = None
        self.pool: Pool | None = None  # load generators only
        self.counts = ArrivalCounts()  # master/standalone: the run's sum
        self.per_worker: dict[str, ArrivalCounts] = {}
        self.start_lag: dict[str, Samples] = {}  # master/standalone: each generator's
        self.clock0 = 0.0  # time.monotonic() at the schedule's second 0 (master/standalone)
        self.clock0_epoch = 0.0  # the same moment, time.time(): the CSV's timestamps
        self.coordinator: gevent.Greenlet | None = None
        self.stopping = False

    @property
    def active(self) -> bool:
        return self.schedule is not None

    # --- init -----------------------------------------------------------------------------------

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        opts = environment.parsed_options
        spec = (getattr(opts, "arrival_rate", "") or "").strip() if opts is not None else ""
        if isinstance(runner, WorkerRunner):
            runner.register_message(MESSAGE, self.on_message)  # also to say when the flag is missing
        if not spec:
            return
        try:
            self.schedule = parse_arrival_rate(spec)
        except ValueError as e:
            die(f"--arrival-rate/LOCUST_ARRIVAL_RATE: {e}")
        try:
            self.max_wait_s = parse_duration(str(getattr(opts, "arrival_max_wait", "0") or "0"))
        except ValueError as e:
            die(f"--arrival-max-wait/LOCUST_ARRIVAL_MAX_WAIT: {e}")
        self.spec, self.runner = spec, runner
        if isinstance(runner, MasterRunner):
            return  # a master runs no users
        self.pool = Pool()
        self.pool.max_wait_s = self.max_wait_s
        install_users(environment.user_classes, self.pool)
        self.plugin.latency.intended = self.pool.intended  # its requests' intended-start latency

    # --- the test -------------------------------------------------------------------------------

    def on_test_start(self, **_kw: Any) -> None:
        self.stopping = False

    def on_spawning_complete(self, **_kw: Any) -> None:
        """The pool is there: the schedule starts (once per test; a re-spawn keeps it)."""
        if not self.active or isinstance(self.runner, WorkerRunner) or self.coordinator is not None:
            return
        self.clock0, self.clock0_epoch = time.monotonic(), time.time()
        self.coordinator = gevent.spawn(self._coordinate)
        logger.info("Open model: arrival rate %r (iterations/s) starts now", self.spec)

    def _coordinate(self) -> None:
        while True:
            elapsed = time.monotonic() - self.clock0
            if isinstance(self.runner, MasterRunner):
                for client_id, share, phase in shares(self.runner):
                    data = {"spec": self.spec, "max_wait_s": self.max_wait_s, "share": share}
                    data.update(phase=phase, elapsed_s=elapsed)
                    self.runner.send_message(MESSAGE, data, client_id=client_id)
            elif self.pool is not None and self.schedule is not None:
                self.pool.configure(self.schedule, 1.0, elapsed, 0.0)
            gevent.sleep(COORDINATE_INTERVAL_S)

    def on_message(self, msg: Any, **_kw: Any) -> None:
        """(worker) The master's share for this worker."""
        data = msg.data or {}
        if self.pool is None:
            if not self.stopping:  # once: its users already run closed-loop, so the run is not open
                logger.error(
                    "the master runs --arrival-rate %r but this worker has no --arrival-rate: set "
                    "LOCUST_ARRIVAL_RATE for the workers too",
                    data.get("spec"),
                )
                self.stopping = True
            return
        if self.stopping:
            return
        if data.get("spec") != self.spec:  # the master's value wins (a worker started with another)
            self.spec, self.schedule = data["spec"], parse_arrival_rate(data["spec"])
        assert self.schedule is not None
        self.pool.max_wait_s = float(data.get("max_wait_s", self.max_wait_s))
        self.pool.configure(
            self.schedule, float(data["share"]), float(data["elapsed_s"]), float(data["phase"])
        )

    def on_test_stopping(self, **_kw: Any) -> None:
        """Stop offering iterations before the users stop: users being stopped are no drops."""
        if not self.active:
            return
        self.stopping = True
        if self.coordinator is not None:
            self.coordinator.kill(block=False)
            self.coordinator = None
        if self.pool is not None:
            self.pool.stop()

    # --- reports --------------------------------------------------------------------------------

    def on_report_to_master(self, client_id: str, data: dict, **_kw: Any) -> None:
        if self.pool is not None:
            data[REPORT_KEY] = self.pool.take_report()

    def on_worker_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        report = data.get(REPORT_KEY)
        if self.active and isinstance(report, dict):
            self.add_report(client_id, report)

    def add_report(self, source: str, report: dict) -> None:
        counts = report.get("counts") or {}
        self.counts.add_report(counts)
        self.per_worker.setdefault(source, ArrivalCounts()).add_report({**counts, "per_second": {}})
        lag = report.get("start_lag")
        if lag is not None:
            try:
                self.start_lag.setdefault(source, Samples()).merge(lag)
            except ValueError as e:  # a worker of another version: its figure is left out, not the run
                logger.warning("Open model: %s's start lag is left out: %s", source, e)

    # --- the end --------------------------------------------------------------------------------

    def on_quitting(self, **_kw: Any) -> None:
        if not self.active or isinstance(self.runner, WorkerRunner):
            return
        self.on_test_stopping()  # a run that ends without a stop (Ctrl-C) stops offering too
        if self.pool is not None:
            self.add_report("local", self.pool.take_report())
        summary = self.summary()
        logger.info(
            "Open model: offered %.1f/s, achieved %.1f/s, %d dropped (%d pool exhaustion events)",
            summary.offered_rate,
            summary.achieved_rate,
            summary.dropped_iterations,
            summary.pool_exhaustion_events,
        )
        run = self.plugin.run
        if run is None:
            return
        run.manifest.open_model = summary
        if run.run_dir:
            self.write(run.run_dir)

    def summary(self) -> OpenModel:
        assert self.schedule is not None
        opts = self.runner.environment.parsed_options if self.runner else None
        out = summarize(self.spec, self.schedule, self.counts, getattr(opts, "num_users", None))
        out.max_wait_s = self.max_wait_s
        seconds = len(self.counts.rows())
        book, timeline = self.plugin.latency.totals(), self.plugin.latency.timeline  # after totals()
        if seconds >= 3:  # is the intended-start latency still growing? (core/bottleneck.judge_open)
            third = seconds // 3
            out.intended_p99_first_third_ms = timeline.percentile_between("intended", 0, third, 99)
            out.intended_p99_last_third_ms = timeline.percentile_between(
                "intended", seconds - third, seconds, 99
            )
        out.latency_ms = latency_summary(book)
        out.per_worker = {wid: generator_iterations(c) for wid, c in sorted(self.per_worker.items())}
        every = Samples()
        for wid, lag in self.start_lag.items():
            every.add(lag)
            if wid in out.per_worker:
                out.per_worker[wid].start_lag = figures(lag.histogram())
        out.latency_ms.start_lag = figures(every.histogram())
        return out

    def write(self, run_dir: Path) -> None:
        self.plugin.latency.totals()  # this process's own samples filed (standalone)
        curves = self.plugin.latency.timeline.percentiles()
        with atomic_file(run_dir / folder.ARRIVAL_CSV, newline="") as f:
            writer = csv.writer(f)
            writer.writerow(("timestamp", *PER_SECOND_COLUMNS, *TIMELINE_COLUMNS))
            for second, *counts in self.counts.rows():
                latency = curves.get(second, {})
                stamp = round(self.clock0_epoch + second, 3)
                writer.writerow([stamp, second, *counts, *(latency.get(c, "") for c in TIMELINE_COLUMNS)])


def shares(runner: MasterRunner) -> list[tuple[str, float, float]]:
    """(worker id, share of the rate, phase) for every connected worker: shares in proportion to
    the users each runs (they are the pool), equal while none has reported users yet."""
    live = sorted((c for c in runner.clients.values() if c.state != STATE_MISSING), key=lambda c: c.id)
    if not live:
        return []
    users = [c.user_count for c in live]
    total = sum(users)
    n = len(live)
    return [
        (c.id, (u / total) if total else 1 / n, i / n)
        for i, (c, u) in enumerate(zip(live, users, strict=True))
    ]


def latency_summary(book: LatencyBook) -> OpenLatency:
    """Aggregated p50/p99/max of both kinds, and the coordinated-omission gap at p99."""
    out = OpenLatency(name=AGGREGATED)
    for kind in ("service", "intended"):
        setattr(out, kind, figures(book.aggregated(kind)))
    if out.service and out.intended and out.service.p99 is not None and out.intended.p99 is not None:
        out.p99_gap = round(out.intended.p99 - out.service.p99, 3)
    return out


def figures(hist: HdrHistogram) -> LatencyFigures | None:
    """HIST's count, p50, p99 and max (ms); None when it holds nothing."""
    if not hist.get_total_count():
        return None
    return LatencyFigures(
        count=hist.get_total_count(),
        p50=percentile_ms(hist, 50),
        p99=percentile_ms(hist, 99),
        max=max_ms(hist),
    )
