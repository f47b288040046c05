"""Waking greenlets at an exact time: a Linux timerfd, not gevent's timers.

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
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import itertools
import os
import sys
import time

import gevent
from gevent.hub import Waiter

EARLY_S = 0.001
"""Sleepers due this soon after a wake-up are woken with it, early: the schedule is kept to 1 ms,
the granularity of gevent's own timers (which run up to 1 ms late instead). A wake-up of an idle
event loop costs a generator ~40 µs of CPU on a VM; one per iteration cost a fifth of its requests
at 3000/s (71 % CPU against 58 % with this, and 69 % on gevent's timers). An iteration that starts
early is measured from when it started (plugin/pool.py), so the shift never shortens a latency."""

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
