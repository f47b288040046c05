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
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from locust import events
from locust.rpc.protocol import Message
from locust.runners import MasterRunner

OUT_ENV = "SWARMBENCH_PROBE_OUT"
"""Where the timings go (a JSON file); unset: the probe stays out of the way."""

TIMED = ("stats", "heartbeat")
"""The message types whose handling is recorded (the others are rare: connects, spawns, quits)."""

_timings: dict[str, list[list[float]]] = {kind: [] for kind in TIMED}
_decode_s = [0.0]  # the last message's msgpack decode, added to its handling


def _install(runner: MasterRunner, out: str) -> None:
    unserialize = Message.unserialize.__func__  # type: ignore[attr-defined]

    def timed_unserialize(cls: type, data: bytes) -> Message:
        started = time.perf_counter()
        msg = unserialize(cls, data)
        _decode_s[0] = time.perf_counter() - started
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

    def write(**_kw: Any) -> None:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(_timings, f)

    events.quit.add_listener(write)


@events.init.add_listener
def _on_init(environment: Any, runner: Any = None, **_kw: Any) -> None:
    out = os.environ.get(OUT_ENV)
    if out and isinstance(runner, MasterRunner):
        _install(runner, out)
