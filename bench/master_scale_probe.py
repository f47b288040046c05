"""Locustfile put in front of BOTH masters by bench/bench_master_scale.py: times every message the
master handles, so "report handling time" is measured inside the process, the same way for the
Swarmbench master and the plain Locust one.

It wraps the master's `handle_message` (every listener of `worker_report` runs inside it: Locust's
stats merge and, on the Swarmbench master, the plugin's) and Locust's `Message.unserialize` (the
msgpack decode, which grows with the payload), and adds the two per message. At quit it writes
[[epoch seconds, seconds taken], ...] per message type ("stats", "heartbeat") to the JSON file
named by SWARMBENCH_PROBE_OUT; the bench keeps the messages of its measured interval. Its own cost
is two perf_counter() calls a message, the same on both masters. Defines no user class; does
nothing without SWARMBENCH_PROBE_OUT or on a worker.

With SWARMBENCH_PROBE_LISTENERS set (bench_master_scale.py --listeners) it also wraps every
`worker_report` listener, and the decode of each stats message, in the thread's CPU clock
(time.thread_time: CPU, not wall, so a master that waits for the CPU is not charged for it) and
writes {"listeners": {epoch second: {listener: [calls, CPU seconds]}}}: each listener's share of
the master's CPU; Python's cyclic collector is charged the same way, per generation. It costs the
master two clock reads (system calls) per listener and report, more on the master with more
listeners: the ratio of a run with it is not the benchmark's figure.
"""

from __future__ import annotations

import gc
import json
import os
import time
from typing import Any

from locust import events
from locust.rpc.protocol import Message
from locust.runners import MasterRunner

OUT_ENV = "SWARMBENCH_PROBE_OUT"
"""Where the timings go (a JSON file); unset: the probe stays out of the way."""

LISTENERS_ENV = "SWARMBENCH_PROBE_LISTENERS"
"""Set: every worker_report listener's CPU is measured too (module docstring)."""

TIMED = ("stats", "heartbeat")
"""The message types whose handling is recorded (the others are rare: connects, spawns, quits)."""

_timings: dict[str, list[list[float]]] = {kind: [] for kind in TIMED}
_decode_s = [0.0]  # the last message's msgpack decode, added to its handling
_cpu: dict[int, dict[str, list[float]]] = {}  # epoch second -> listener -> [calls, CPU seconds]


def _charge(name: str, cpu_s: float) -> None:
    into = _cpu.setdefault(int(time.time()), {}).setdefault(name, [0, 0.0])
    into[0] += 1
    into[1] += cpu_s


def _timed_listener(name: str, listener: Any) -> Any:
    def timed(*args: Any, **kw: Any) -> Any:
        started = time.thread_time()
        try:
            return listener(*args, **kw)
        finally:
            _charge(name, time.thread_time() - started)

    return timed


_gc_started = [0.0]


def _time_gc(phase: str, info: dict[str, int]) -> None:
    """Python's cyclic collector, charged like a listener (its CPU, per generation)."""
    if phase == "start":
        _gc_started[0] = time.thread_time()
    else:
        _charge(f"gc generation {info['generation']}", time.thread_time() - _gc_started[0])


def _install(runner: MasterRunner, out: str) -> None:
    unserialize = Message.unserialize.__func__  # type: ignore[attr-defined]
    per_listener = bool(os.environ.get(LISTENERS_ENV))

    def timed_unserialize(cls: type, data: bytes) -> Message:
        started, cpu = time.perf_counter(), time.thread_time() if per_listener else 0.0
        msg = unserialize(cls, data)
        _decode_s[0] = time.perf_counter() - started
        if per_listener and msg.type == "stats":
            _charge("msgpack decode (Locust's Message.unserialize)", time.thread_time() - cpu)
        return msg

    Message.unserialize = classmethod(timed_unserialize)  # type: ignore[method-assign,assignment]
    handle = runner.handle_message

    def timed_handle(client_id: str, msg: Message) -> None:
        started = time.perf_counter()
        try:
            handle(client_id, msg)
        finally:
            took = time.perf_counter() - started + _decode_s[0]
            series = _timings.get(msg.type)
            if series is not None:
                series.append([time.time(), took])

    runner.handle_message = timed_handle  # type: ignore[method-assign]
    if per_listener:
        gc.callbacks.append(_time_gc)
        hook = runner.environment.events.worker_report
        hook._handlers = [  # Locust's EventHook keeps its listeners here, called in this order
            _timed_listener(getattr(h, "__qualname__", repr(h)), h) for h in hook._handlers
        ]

    def write(**_kw: Any) -> None:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({**_timings, "listeners": _cpu} if per_listener else _timings, f)

    events.quit.add_listener(write)


@events.init.add_listener
def _on_init(environment: Any, runner: Any = None, **_kw: Any) -> None:
    out = os.environ.get(OUT_ENV)
    if out and isinstance(runner, MasterRunner):
        _install(runner, out)
