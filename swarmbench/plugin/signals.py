"""Ctrl-C and SIGTERM: record them, then end the process the way its normal end does.

Locust's own handling loses what a run needs: on SIGTERM it shuts down at once (its master waits
0.5 s for the workers' final stats, so the CSVs miss requests the target served) and nothing says
the run was cut short. Here the first SIGINT/SIGTERM is recorded (the run's status becomes
`interrupted`, the exit code 130/143) and the process ends exactly as at --run-time: a master stops
the test, quits its workers and waits for their final stats; a standalone runner stops its users; a
web-UI master ends the current UI run (saved like a Stop), then quits; a worker tells its master
which signal it got (so a stopped stack reads as interrupted, not as lost workers), stops its users
and sends its last stats. A second signal is Locust's immediate shutdown (files are still written).

The handlers are Python signal handlers, installed at test start: by then Locust has installed its
own SIGTERM watcher (gevent's), which ours replaces for the rest of the process.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Any

import gevent
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from swarmbench.plugin.health import signal_name

logger = logging.getLogger("swarmbench")

HANDLED = (signal.SIGINT, signal.SIGTERM)

WORKER_QUIT_GRACE_S = 2.0
"""A signalled worker waits this long for its master's "quit" (the master usually got the same
signal) before it quits by itself: stopping its users twice at once makes Locust log errors."""

MESSAGE = "swarmbench_signal"
"""Worker -> master message: {"signal": N}, sent when a worker is told to stop by a signal."""


class Signals:
    """The first signal is handled gracefully by ON_SIGNAL (run in its own greenlet); the next one
    gets Locust's immediate shutdown (KeyboardInterrupt into the main greenlet)."""

    def __init__(self, on_signal: Callable[[int], Any]) -> None:
        self.on_signal = on_signal
        self.received: int | None = None
        self.installed = False

    def install(self) -> None:
        for signum in HANDLED:
            signal.signal(signum, self._handle)
        self.installed = True

    def _handle(self, signum: int, _frame: Any) -> None:
        # Runs in whatever greenlet was current, often gevent's hub: nothing that may block (not
        # even logging, whose lock another greenlet may hold) happens here, only in _respond.
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signum
        gevent.spawn(self._respond, signum)

    def _respond(self, signum: int) -> None:
        logger.warning("Got %s: ending the run cleanly (send it again to stop at once)", signal_name(signum))
        self.on_signal(signum)


def notify_master(environment: Environment, signum: int) -> None:
    """A worker's last word before it stops: which signal stopped it."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(MESSAGE, {"signal": int(signum)})


def listen_for_workers(runner: Any, on_worker_signal: Callable[[str, int], Any]) -> None:
    """On a master: ON_WORKER_SIGNAL(worker id, signum) for each worker's MESSAGE."""
    if isinstance(runner, MasterRunner):
        runner.register_message(
            MESSAGE, lambda environment, msg, **_kw: on_worker_signal(msg.node_id, int(msg.data["signal"]))
        )
