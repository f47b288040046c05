"""Live thresholds: --abort-on-fail (LOCUST_ABORT_ON_FAIL) checks the run's thresholds (--check /
LOCUST_CHECKS) while it goes, on the master's merged exact figures of each sealed 1 s window, and
stops the whole run at the first window that breaks one (k6's abortOnFail, but on every worker's
requests together: k6 evaluates each instance on its own).

    which windows   sealed ones only (the master seals a window when every worker has reported
                    past it, plugin/latency.py seal_covered, else SEAL_AFTER windows behind the
                    newest, latency/windows.py: when no piece of it can still come): a window's
                    p95 is then the merged exact figure locust_latency_windows.csv will hold,
                    never a part of it.
                    Windows starting in the first --abort-grace (default 10 s, k6's delayAbortEval)
                    are not checked: the ramp-up. A window without a request of the name is no
                    breach (no data proves nothing either way; the final check says so).
    the figure      p50 .. p99.9 and max: the window's row of that name (a name under several
                    request types: the worst of them); fail_ratio: the window's failures / requests;
                    rps: its requests / WINDOW_S
    the stop        a headless master ends the run as at --run-time (every worker stops, their final
                    reports are collected: lifecycle.collect_and_quit); a standalone runner quits.
                    The folder is written whole; run.json says status `aborted` and `aborted` (the
                    threshold, the window, the figure); checks[] and junit.xml hold it as a failed
                    check; the terminal's last line says it; exit code 3.

The delay from a breach to the stop: the window is sealed when the last worker's report past its end
comes, then checked within CHECK_INTERVAL_S. With --abort-on-fail each worker reports every
LIVE_REPORT_S (1 s; up to 300 workers, LIVE_REPORTS_PER_S) instead of Locust's 3 s, so a window is
checked at most ~1.25 s after it ends (bench/bench_abort.py: 0.0-1.0 s; with 3 s reports 1-3 s): a
breach from the first window on is found by grace + 2 windows. Web-UI runs are not stopped
(thresholds are a headless run's verdict)."""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import Any

import gevent
from locust import runners
from locust.env import Environment
from locust.runners import MasterRunner, Runner, WorkerRunner

from swarmbench.core.checks import EXACT, Check, Outcome, breach
from swarmbench.core.loadspec import parse_duration
from swarmbench.core.manifest import CHECK_BROKEN, HEADLESS, Abort
from swarmbench.latency.windows import WINDOW_S, Windows
from swarmbench.plugin import lifecycle
from swarmbench.plugin.lifecycle import Run
from swarmbench.plugin.metrics import sealed_rows, sealed_windows
from swarmbench.plugin.options import die

logger = logging.getLogger("swarmbench")

CHECK_INTERVAL_S = 0.25
"""How often the master looks for newly sealed windows: a quarter of a window, so a window is checked
at most that long after the report that seals it (a look with nothing new sealed is a dict lookup
per worker, at most every latency.SWEEP_S, and a comparison)."""

LIVE_REPORT_S = 1.0
"""With --abort-on-fail, how often each worker sends its report (Locust's runners.WORKER_REPORT_INTERVAL,
3 s by default; the master tells its workers at the test's start, MESSAGE): a window is sealed when
the last worker has reported past it, so this is most of the delay from a breach to the stop. Never
more reports a second than LIVE_REPORTS_PER_S: with more workers each reports less often
(report_every)."""

LIVE_REPORTS_PER_S = 300.0
"""The master's budget of worker reports a second with --abort-on-fail: 300 workers report every
second, 1,000 every 3.3 s (Locust's own 3 s is ~333 a second at 1,000 workers). Each report costs the
master a merge: 1,000 simulated workers x 10 names reporting every second took the master from 66 %
to 107 % of a core (bench/bench_master_scale.py --report-every 1), more than it has."""

LOCUST_REPORT_S = runners.WORKER_REPORT_INTERVAL
"""Locust's own report interval, what a worker keeps without --abort-on-fail."""

MESSAGE = "swarmbench_report_every"
"""master -> workers at a test's start with --abort-on-fail: {"every": seconds between reports}."""


def report_every(workers: int) -> float:
    """A worker's report interval with --abort-on-fail, WORKERS connected: LIVE_REPORT_S, longer when
    that would send the master more than LIVE_REPORTS_PER_S reports a second, never past Locust's."""
    return min(max(LIVE_REPORT_S, workers / LIVE_REPORTS_PER_S), LOCUST_REPORT_S)


class LiveChecks:
    """The master's (or a standalone runner's) live thresholds: off unless --abort-on-fail."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin  # the Swarmbench object: its checks, run and latency
        self.enabled = False
        self.grace_s = 10.0
        self.greenlet: gevent.Greenlet | None = None
        self.broken: Outcome | None = None  # the live outcome that stopped the run

    def validate(self, environment: Environment, runner: Runner, checks: list[Check]) -> None:
        """--abort-on-fail and --abort-grace: without thresholds, or with a malformed grace, one
        line and nothing started."""
        opts = environment.parsed_options
        if opts is None or isinstance(runner, WorkerRunner) or not getattr(opts, "abort_on_fail", False):
            return
        if not checks:
            die("--abort-on-fail/LOCUST_ABORT_ON_FAIL needs thresholds to check: set --check/LOCUST_CHECKS")
        try:
            self.grace_s = parse_duration(str(opts.abort_grace))
        except ValueError as e:
            die(f"--abort-grace/LOCUST_ABORT_GRACE: {e}")
        if self.grace_s < 0:
            die(f"--abort-grace/LOCUST_ABORT_GRACE: {opts.abort_grace!r} is negative")
        if not opts.headless:
            logger.warning("--abort-on-fail stops headless runs only: this web-UI run is not checked live")
            return
        self.enabled = True

    def on_test_start(self, **_kw: Any) -> None:
        run = self.plugin.run
        if not self.enabled or run is None:
            return
        if isinstance(run.runner, MasterRunner) and run.runner.clients:
            # Before Locust's spawn messages, so every worker reports at the new pace from its start.
            run.runner.send_message(MESSAGE, {"every": report_every(len(run.runner.clients))})
        if self.greenlet is None and run.started_from == HEADLESS:
            self.greenlet = gevent.spawn(self._loop, run)
            run.greenlets.append(self.greenlet)

    def listen(self, runner: Runner) -> None:
        """(worker) Take the pace of its reports from the master (on_test_start, MESSAGE)."""
        if isinstance(runner, WorkerRunner):
            runner.register_message(MESSAGE, self.on_message)

    @staticmethod
    def on_message(msg: Any, **_kw: Any) -> None:
        """(worker) The master's report interval. Locust's stats_reporter reads the module's
        interval at each sleep: the next report and every later one come at this pace."""
        every = (msg.data or {}).get("every")
        if isinstance(every, int | float) and every > 0:
            runners.WORKER_REPORT_INTERVAL = float(every)

    def _loop(self, run: Run) -> None:
        """Every CHECK_INTERVAL_S: the windows sealed since the last look, oldest first."""
        checked: tuple[int, int] = (0, -1)  # (the Windows object's id, the newest window checked)
        while True:
            gevent.sleep(CHECK_INTERVAL_S)
            latency = self.plugin.latency
            latency.live_totals()  # a standalone runner's own samples filed (its collector seals)
            latency.seal_covered()  # (master) what every worker has reported past
            windows: Windows = latency.windows
            last = checked[1] if checked[0] == id(windows) else -1  # --reset-stats: windows anew
            for window in sealed_windows(windows):
                if window <= last:
                    continue
                last = window
                if window < self.grace_s:
                    continue
                found = breach(sealed_rows(windows, window), self.plugin.checks, WINDOW_S)
                if found is not None:
                    self.abort(run, window, *found)
                    return
            checked = (id(windows), last)

    def abort(self, run: Run, window: int, check: Check, measured: float) -> None:
        """Record the breach (run.json, the events, the checks) and end the run."""
        source = EXACT if check.unit == "ms" else ""
        outcome = Outcome(check, measured, False, source=source)
        line = f"{check.expr} broken in the window at {window} s: {outcome.failure_message()}"
        live = dataclasses.replace(check, expr=f"{check.expr} (live, window {window} s)")
        self.broken = Outcome(live, measured, False, source=source)
        run.health.aborted = line
        run.health.record(CHECK_BROKEN, line)
        run.manifest.aborted = Abort(
            expr=check.expr, name=check.name, metric=check.metric, limit=check.limit,
            window_s=window, measured=measured, line=line,
        )  # fmt: skip
        logger.warning("Live threshold broken: %s; stopping the run", line)
        sys.stdout.write(f"swarmbench: live check broken: {line}; stopping the run\n")
        sys.stdout.flush()
        runner = run.runner
        if isinstance(runner, MasterRunner):
            gevent.spawn(lifecycle.collect_and_quit, run)
        else:
            gevent.spawn(runner.quit)
