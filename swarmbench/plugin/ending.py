"""How a run ends without losing its record: at --run-time, at Stop, on Ctrl-C or SIGTERM, or when the
workers leave.

Ctrl-C and SIGTERM: record them, then end the process the way its normal end does.

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

How a distributed run ends without losing its record: at --run-time, at Stop, on a signal, or when
every worker is being stopped -- in whatever order the master and its workers get their signals.

The record is exact only if every worker's final report is in before the folder is written, and it
exists only if the master writes it before it is killed. So, on every end:

1. The master stops the test itself (no rebalancing users onto workers that are leaving) and asks
   every worker to quit. A worker stops its users (finishing requests in flight, --stop-timeout),
   sends its final report and says goodbye; Locust then drops it from `runner.clients`. Messages
   from one worker arrive in order, so its goodbye means its final report is merged.
2. The master waits for those goodbyes (`await_goodbyes`), and no longer: a worker whose heartbeats
   stopped is gone and owes nothing; a worker that never answers is given up at the deadline
   (--stop-timeout + FINAL_STATS_GRACE_S, and never past the container's stop grace period,
   SWARMBENCH_STOP_GRACE, less the time the write needs).
3. The folder is written in its own greenlet (`Closer`), never inside Locust's message loop, which
   `runner.quit()` kills: a signal arriving while a web-UI run is being written waits for the
   write instead of cutting it off. Then the process quits.

`docker compose stop/down` and Ctrl-C on `docker compose up` stop the workers first (they depend on
the master), then the master: when every connected worker has said it got a signal, the master ends
the run right away (`all_workers_leaving`), so the record is written before its own signal comes."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import gevent
from locust.env import Environment
from locust.rpc import Message
from locust.runners import STATE_MISSING, STATE_RUNNING, STATE_SPAWNING, MasterRunner, WorkerRunner

from swarmbench.core.health import signal_name

# --- Ctrl-C and SIGTERM ---------------------------------------------------------------------------

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


# --- a distributed run's end ----------------------------------------------------------------------

FINAL_STATS_GRACE_S = 5.0
"""After --stop-timeout, how long the master waits for workers' final reports before giving up on
them (a worker that died without a word is usually seen missing sooner, by its heartbeats)."""

WRITE_RESERVE_S = 8.0
"""Of the container's stop grace period, the part kept for writing the folder (Locust's report renders
every stats row, the run page reads the latency files) after the waiting ends."""

STOP_GRACE_ENV = "SWARMBENCH_STOP_GRACE"
"""Seconds the container gets between its stop signal and SIGKILL (compose's stop_grace_period,
Kubernetes' terminationGracePeriodSeconds): set by docker-compose.yml and k8s/ for the master."""

POLL_S = 0.1


def deadline(stop_timeout: float | None) -> float:
    """When the master stops waiting for goodbyes (a monotonic time)."""
    wait = float(stop_timeout or 0) + FINAL_STATS_GRACE_S
    grace = os.environ.get(STOP_GRACE_ENV, "")
    if grace.isdigit():
        wait = max(1.0, min(wait, int(grace) - WRITE_RESERVE_S))
    return time.monotonic() + wait


def owed(runner: MasterRunner) -> dict[str, Any]:
    """The workers that owe a final report now -- those running users: {id: its node}. A node is
    Locust's object for one connection: a worker that said goodbye and came back as ready (its
    `client_ready` after a Stop) is a new node, with nothing to report."""
    return {
        cid: node
        for cid, node in runner.clients.items()
        if node.state in (STATE_SPAWNING, STATE_RUNNING) or node.user_count > 0
    }


def await_goodbyes(runner: MasterRunner, nodes: dict[str, Any], until: float) -> bool:
    """Until every worker in NODES said goodbye (left runner.clients) or went missing; False when
    UNTIL came first."""
    while any(runner.clients.get(cid) is node and node.state != STATE_MISSING for cid, node in nodes.items()):
        if time.monotonic() >= until:
            return False
        gevent.sleep(POLL_S)
    return True


def ask_to_quit(runner: MasterRunner, nodes: dict[str, Any]) -> None:
    for cid in nodes:
        runner.server.send_to_client(Message("quit", None, cid))


def collect(runner: MasterRunner, stop_timeout: float | None) -> None:
    """Stop the test here, ask every worker to quit, wait for their goodbyes (steps 1 and 2)."""
    nodes = owed(runner)
    runner.stop(send_stop_to_client=False)  # test_stop: a web-UI run's Closer starts waiting too
    ask_to_quit(runner, nodes)
    if not await_goodbyes(runner, nodes, deadline(stop_timeout)):
        late = sorted(cid for cid, node in nodes.items() if runner.clients.get(cid) is node)
        logger.warning("No final stats from %s in time; the run is saved without them", ", ".join(late))


def quit_at_once_when_alone(runner: MasterRunner) -> None:
    """Make the master's quit() skip Locust's wait for workers' final reports when none is connected.

    Locust's MasterRunner.quit() tells every connected worker to quit, then sleeps 0.5 s for their
    final reports. At a run's end it is called up to three times (the last worker's goodbye,
    collect_and_quit, Locust's shutdown), each after every worker has already said goodbye (step 2
    above): their final reports are merged and `runner.clients` is empty, so each sleep waits for
    nobody. It cost every distributed run ~1 s between its last report and its folder (measured:
    1.0 s from the last goodbye to the run's status). With a worker connected (a web-UI master
    quitting with idle workers), quit() is Locust's own.
    """
    locust_quit = runner.quit

    def quit() -> None:
        if len(runner.clients):
            locust_quit()
            return
        runner.stop(send_stop_to_client=False)
        runner.greenlet.kill(block=True)

    runner.quit = quit  # type: ignore[method-assign]


def all_workers_leaving(runner: Any, signalled: set[str]) -> bool:
    """Every worker still connected told the master it got a signal: the stack is being stopped."""
    if not isinstance(runner, MasterRunner):
        return False
    connected = {cid for cid, node in runner.clients.items() if node.state != STATE_MISSING}
    return bool(connected) and connected <= signalled


class Closer:
    """Writes a web-UI run's folder in a greenlet of its own, after the workers' final reports."""

    def __init__(self) -> None:
        self.greenlets: list[gevent.Greenlet] = []

    def start(self, runner: Any, stop_timeout: float | None, write: Callable[[], Any]) -> None:
        nodes = owed(runner) if isinstance(runner, MasterRunner) else {}

        def close() -> None:
            if nodes:
                await_goodbyes(runner, nodes, deadline(stop_timeout))
            write()

        self.greenlets = [g for g in self.greenlets if not g.ready()] + [gevent.spawn(close)]

    def join(self) -> None:
        """Wait for every write in progress (a signal, the process's end must not cut one off)."""
        gevent.joinall(self.greenlets)
