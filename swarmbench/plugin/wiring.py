"""The plugin's one object: its state in this process, and every Locust listener in a stated order.

Locust calls the listeners of one event in registration order, and the order matters here:

    init_command_line_parser  options.add_options (one "Swarmbench options" group)
    init                      1. validate: wait time, thresholds, headers, mix/sweep/steps -- a bad
                                 value stops the run before anything exists
                              2. headers on the load generators' user classes
                              3. open the run (headless master or standalone only): pre-flight the
                                 host, create results/<run-id>/
                              4. record the experiment sections of run.json
    test_start                start the run's clock, CSVs and samplers; host CPU sampling;
                              workers restart their CPU clock
    report_to_master          (worker) piggyback this process's CPU seconds on the stats report
    worker_report             (master) collect them
    test_stop                 (worker) flush the stats since the last report
    quitting                  thresholds on the final stats (they set the exit code)
    quit                      final CSVs and run.json; the thresholds' verdict printed last
"""

from __future__ import annotations

from typing import Any

from locust import events as locust_events
from locust.env import Environment
from locust.runners import MasterRunner, Runner, WorkerRunner

from swarmbench.core.checks import Check
from swarmbench.core.wait import parse_wait_time

from . import checks, cpu, experiment, headers, lifecycle, options
from .errors import die
from .lifecycle import Run


class Swarmbench:
    """Everything the plugin knows in this process: no module-level state anywhere else."""

    def __init__(self) -> None:
        self.run: Run | None = None
        self.checks: list[Check] = []
        self.outcomes: list[checks.Outcome] = []
        self.headers: dict[str, str] = {}
        self.worker_clock: cpu.CpuClock | None = None

    def register(self, events: Any = locust_events) -> None:
        events.init_command_line_parser.add_listener(options.add_options)
        events.init.add_listener(self.on_init)
        events.test_start.add_listener(self.on_test_start)
        events.report_to_master.add_listener(self.on_report_to_master)
        events.worker_report.add_listener(self.on_worker_report)
        events.test_stop.add_listener(self.on_test_stop)
        events.quitting.add_listener(self.on_quitting)
        events.quit.add_listener(self.on_quit)

    # --- init ---

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is None:
            return
        is_worker = isinstance(runner, WorkerRunner)
        # 1. validate everything before anything is created
        if not is_worker:
            try:
                parse_wait_time(opts.wait_time)
            except ValueError as e:
                die(f"--wait-time/LOCUST_WAIT_TIME: {e}")
            self.checks = checks.validate(opts)
        self.headers = headers.load(opts)
        experiment.validate(opts, environment)
        # 2. a master sends no requests; it only records the header names
        if self.headers and not isinstance(runner, MasterRunner):
            headers.install_all(environment, self.headers)
        # 3. + 4. the run folder and its first sections
        if is_worker or not opts.headless:
            return
        self.run = lifecycle.open_run(environment, runner)
        experiment.record(self.run, opts, environment)

    # --- the test ---

    def on_test_start(self, environment: Environment, **_kw: Any) -> None:
        if isinstance(environment.runner, WorkerRunner):
            # Workers measure CPU from their test start (the clock starts when the test does).
            self.worker_clock = cpu.CpuClock()
            return
        if self.run is not None and lifecycle.start(self.run):
            experiment.start_host_cpu(self.run)

    def on_report_to_master(self, client_id: str, data: dict, **_kw: Any) -> None:
        if self.worker_clock is None:
            self.worker_clock = cpu.CpuClock()
        wall, used = self.worker_clock.read()
        users = sum((data.get("user_classes_count") or {}).values())
        data[cpu.REPORT_KEY] = {"wall_s": wall, "cpu_s": used, "users": users}

    def on_worker_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        report = data.get(cpu.REPORT_KEY)
        if self.run is not None and self.run.started_at is not None and report:
            lifecycle.worker_cpu_report(self.run, client_id, report)

    def on_test_stop(self, environment: Environment, **_kw: Any) -> None:
        """A worker told to STOP (a LoadTestShape ending, the UI's stop button) reports only
        "client_stopped"; the stats since its last periodic report (every 3 s) then reach the
        master only if that next periodic report arrives before the master quits. Send them now
        (test_stop fires after the users stopped, before "client_stopped"), so the end of a shaped
        run does not depend on that timing. On QUIT Locust sends a final report itself; an extra
        one is harmless (reports carry deltas)."""
        runner = environment.runner
        if isinstance(runner, WorkerRunner):
            runner._send_stats()  # Locust's own reporting call; there is no public one

    # --- the end ---

    def on_quitting(self, environment: Environment, **_kw: Any) -> None:
        run = self.run
        if run is None:
            return
        if self.checks:
            self.outcomes = checks.finish(run, self.checks, environment)
        if self.headers:
            run.manifest.request_headers = sorted(self.headers)  # names only, never values

    def on_quit(self, exit_code: int, **_kw: Any) -> None:
        if self.run is not None:
            lifecycle.finish(self.run, exit_code)
        checks.print_outcomes(self.outcomes)


_plugin: Swarmbench | None = None


def install() -> Swarmbench:
    """Register the plugin once per process (a locustfile and the plugin entry may both call it)."""
    global _plugin
    if _plugin is None:
        _plugin = Swarmbench()
        _plugin.register()
    return _plugin


def current_run() -> Run | None:
    """The run being recorded in this process (None on workers, in UI mode, before init)."""
    return _plugin.run if _plugin else None
