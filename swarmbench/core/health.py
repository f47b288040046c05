"""Run health: what happened to a run while it ran, and the status run.json gives it.

The lifecycle's sampler feeds this once a second with the master's view of its load generators
(Locust's worker states) and the cumulative request counts; signal handlers and Locust events add
what they see. From that it keeps `events` (UTC time, seconds since the test started, a kind, a
detail), the connected-generator count over time, and decides the run's status:

    interrupted  a signal (Ctrl-C, SIGTERM) reached the master or runner before the run's end, or
                 every load generator was stopped by one (the stack stopped mid-run)
    failed       nothing or almost nothing was served (FAILED_RATIO)
    degraded     a load generator went missing or quit early, fewer than expected were connected
                 at some point, or the target stopped answering for TARGET_DOWN_S or more
    complete     none of the above

Locust-free on purpose (plain ids, states and counts in; the tests import it).
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from swarmbench.core.folder import utc_iso
from swarmbench.core.manifest import (
    ABORTED,
    COMPLETE,
    DEGRADED,
    FAILED,
    INTERRUPTED,
    SIGNAL,
    TARGET_BACK,
    TARGET_UNREACHABLE,
    WORKER_JOINED,
    WORKER_MISSING,
    WORKER_QUIT,
    WORKER_REJOINED,
    Event,
    WorkersPoint,
)

TARGET_DOWN_S = 5.0
"""No successful response for this long while requests kept failing: the target stopped answering.
Longer than a worker's stats report interval (3 s), so a gap between reports never looks like it."""

TARGET_HANG_S = 10.0
"""No response at all -- neither a success nor a failure -- for this long: requests hang (a target
that vanished makes connections time out after a minute, not fail at once). Three worker report
intervals and more, so a late report on a busy machine is not mistaken for it."""

HANG_EXPECTED_REQUESTS = 20
"""...and the run's own rate so far would have completed at least this many requests in that
time: a slow closed loop (one user thinking 10 s) is silent by design, and is not flagged."""

FAILED_RATIO = 0.99
"""A run where at least this share of requests failed (or none was made) served "almost nothing":
status failed. Below it the run still measured something (its failures are in the CSVs)."""

CONNECTED_STATES = frozenset({"ready", "spawning", "running"})
"""Locust's worker states that count as connected (its MasterRunner.worker_count); "missing" is a
worker whose heartbeats stopped."""

MISSING = "missing"


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass
class Health:
    """One run's events, worker count over time and status inputs."""

    expected: int | None = None  # load generators the run should have; None: a standalone runner
    started: float | None = None  # monotonic clock at test start
    closing: bool = False  # the run's end has begun: workers leaving now is the normal end
    signum: int | None = None  # the signal that interrupted the master or runner
    worker_signals: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # why the run is degraded
    aborted: str | None = None  # the live threshold that stopped the run, as one line (plugin/slo.py)
    events: list[Event] = field(default_factory=list)
    timeline: list[WorkersPoint] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)
    _last_ok_at: float | None = None
    _ok: int = 0
    _failures_at_ok: int = 0
    _target_down: bool = False
    _total: int = 0  # requests completed (successes and failures) at the last change
    _total_at: float | None = None  # when that count last changed

    # --- recording ---

    def elapsed(self, now: float | None = None) -> float:
        if self.started is None:
            return 0.0
        return round((time.monotonic() if now is None else now) - self.started, 1)

    def record(self, kind: str, detail: str, now: float | None = None) -> None:
        self.events.append(
            Event(at=utc_iso(datetime.now(UTC)), t_s=self.elapsed(now), kind=kind, detail=detail)
        )

    def start(self, clients: dict[str, str] | None, now: float | None = None) -> None:
        """The test started; CLIENTS: the master's workers (None for a standalone runner)."""
        self.started = time.monotonic() if now is None else now
        self._last_ok_at = self.started
        if clients is None:
            self.timeline.append(WorkersPoint(t_s=0.0, connected=1))
            return
        if self.expected is None:  # a UI run: the generators connected when Start was pressed
            self.expected = sum(s in CONNECTED_STATES for s in clients.values())
        self.workers(clients, self.started)

    def signal(self, signum: int, now: float | None = None) -> None:
        """The master or standalone runner got SIGNUM; before the end, that interrupts the run."""
        when = "after the run's end began" if self.closing else "the run is stopped early"
        self.record(SIGNAL, f"{signal_name(signum)} received; {when}", now)
        if not self.closing and self.signum is None:
            self.signum = signum

    def worker_signal(self, worker: str, signum: int, now: float | None = None) -> None:
        self.record(SIGNAL, f"{signal_name(signum)} received by worker {worker}", now)
        if not self.closing:
            self.worker_signals[worker] = signum

    # --- sampling ---

    def workers(self, clients: dict[str, str], now: float | None = None) -> None:
        """CLIENTS: worker id -> Locust state, as the master sees them now."""
        for worker, state in clients.items():
            before = self.states.get(worker)
            if before is None:
                self.record(WORKER_JOINED, f"worker {worker} connected", now)
            elif state == MISSING and before != MISSING:
                self.record(WORKER_MISSING, f"worker {worker} stopped sending heartbeats", now)
                self._problem(f"worker {worker} went missing")
            elif before == MISSING and state != MISSING:
                self.record(WORKER_REJOINED, f"worker {worker} sends heartbeats again", now)
        for worker in self.states.keys() - clients.keys():
            if self.closing and self.states[worker] != MISSING:
                continue  # it quit as told at the end of the run
            how = "was dropped after missing heartbeats" if self.states[worker] == MISSING else "quit"
            self.record(WORKER_QUIT, f"worker {worker} {how} before the run's end", now)
            self._problem(f"worker {worker} quit early")
        self.states = dict(clients)
        connected = sum(s in CONNECTED_STATES for s in clients.values())
        if not self.closing and (not self.timeline or self.timeline[-1].connected != connected):
            self.timeline.append(WorkersPoint(t_s=self.elapsed(now), connected=connected))
        if self.expected and connected < self.expected and not self.closing:
            self._problem(f"{connected} of {self.expected} load generators connected")

    def requests(self, total: int, failures: int, now: float | None = None, final: bool = False) -> None:
        """Cumulative counts: successes stopped while failures grew, or nothing completed at all for
        as long as the run's rate says many should have = the target stopped answering. FINAL: the
        last look, with the final counts as of the run's end (the stop phase is silent by design)."""
        now = time.monotonic() if now is None else now
        if final or not self.closing:
            self._hanging(total, now)
        ok = total - failures
        if ok > self._ok or self._last_ok_at is None:
            self._ok, self._last_ok_at, self._failures_at_ok = ok, now, failures
            if self._target_down:
                self._target_down = False
                self.record(TARGET_BACK, "successful responses again", now)
            return
        silent = now - self._last_ok_at
        if not self._target_down and silent >= TARGET_DOWN_S and failures > self._failures_at_ok:
            self._target_down = True
            n = failures - self._failures_at_ok
            self.record(
                TARGET_UNREACHABLE, f"no successful response for {silent:.0f} s; {n} requests failed", now
            )
            self._problem("the target stopped answering")

    def _hanging(self, total: int, now: float) -> None:
        """Requests that neither succeed nor fail: they hang (see TARGET_HANG_S)."""
        if self.started is None:
            return
        if total != self._total or self._total_at is None:
            self._total, self._total_at = total, now
            return
        silent, ran = now - self._total_at, self._total_at - self.started
        rate = self._total / ran if ran > 0 else 0.0
        if self._target_down or silent < TARGET_HANG_S or rate * silent < HANG_EXPECTED_REQUESTS:
            return
        self._target_down = True
        self.record(
            TARGET_UNREACHABLE,
            f"no response at all for {silent:.0f} s after {rate:.0f} requests/s: requests hang",
            now,
        )
        self._problem("the target stopped answering")

    def _problem(self, why: str) -> None:
        if why not in self.problems:
            self.problems.append(why)

    # --- the verdict on the run itself ---

    def status(self, total: int, failures: int) -> str:
        """run.json's status from what was seen (module docstring); TOTAL/FAILURES: final counts."""
        if self.signum is not None or (self.expected and len(self.worker_signals) >= self.expected):
            return INTERRUPTED
        if self.aborted is not None:
            return ABORTED
        if total == 0 or failures >= FAILED_RATIO * total:
            return FAILED
        if self.problems:
            return DEGRADED
        return COMPLETE

    def interrupting_signal(self) -> int | None:
        """The signal behind an interrupted status: the master's own, else the workers'."""
        if self.signum is not None:
            return self.signum
        return next(iter(self.worker_signals.values()), None)

    def summary(self, status: str, total: int, failures: int) -> str:
        """One line for the log and the final event: the status and why."""
        if status == INTERRUPTED:
            sig = self.interrupting_signal()
            return f"interrupted by {signal_name(sig) if sig else 'a signal'}"
        if status == ABORTED:
            return f"{ABORTED}: {self.aborted}"
        if status == FAILED:
            head = (
                f"{FAILED}: {failures} of {total} requests failed"
                if total
                else f"{FAILED}: no request was made"
            )
            # What was seen on the way says why: a worker that froze right after its spawn (no
            # heartbeat, no report) leaves "no request was made" and nothing else to go on.
            return head + (" (" + "; ".join(self.problems) + ")" if self.problems else "")
        if status == DEGRADED:
            return f"{DEGRADED}: " + "; ".join(self.problems)
        return COMPLETE
