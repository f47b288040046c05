"""The plugin's one object: its state in this process, every Locust listener in a stated order, and
web-UI runs as runs.

Web-UI runs are runs: each Start -> Stop writes results/<run-id>/ like a headless run.

`docker compose up` starts a master with the web UI; a test there starts at Start (Locust's
test_start) and ends at Stop, at the UI's run time, at the end of a shape, or when the last worker
is lost (Locust's test_stop, fired on the master after every worker reported it stopped, so their
final stats are in). Each such test gets a NEW folder (a generated run id, never the last one's);
"Reset stats" in the middle of a test closes the current folder and opens the next one, so no
folder mixes numbers from before and after a reset. run.json says `started_from: "ui"`.

The plugin's one object: its state in this process, and every Locust listener in a stated order.

Locust calls the listeners of one event in registration order, and the order matters here:

    init_command_line_parser  options.add_options (one "Swarmbench options" group)
    init                      0. open model (openmodel.py): parse --arrival-rate (a bad value stops
                                 the run before a folder exists); generators install the pool
                              1. validate: wait time, thresholds, headers, mix/sweep/steps, the
                                 metrics port (bound and served from here on: metrics.py) -- a bad
                                 value stops the run before anything exists
                              2. headers on the load generators' user classes; their values
                                 redacted from every log handler
                              3. open the run (headless master or standalone only): pre-flight the
                                 host, create results/<run-id>/
                              4. record the experiment sections of run.json
                              5. (master) listen for workers' "stopped by a signal" messages;
                                 once every connected worker sent one, end the run (ending.py)
                              6. pacing (pacing.py) wraps each user class's wait_time -- after the
                                 open model installed its users
                              7. (master) quit() skips Locust's 0.5 s wait for final reports when
                                 no worker is connected (ending.py); (headless master) wait for
                                 --expect-workers every 50 ms, so the test starts as they are
                                 ready, not at Locust's next look a second later (lifecycle.py)
    test_start                open model: a new test offers again; web UI: open a new run folder
                              (below); start the run's clock, CSVs and samplers; host CPU
                              sampling; load generators restart their CPU clock and event-loop
                              lag probe (generator.py); every process: our SIGINT/SIGTERM handlers
                              (ending.py); --abort-on-fail's live thresholds (slo.py); exact
                              latency (latency.py) counts windows from the
                              run's start, which the master sends the workers; pacing counts from
                              zero; a headless run's live status for the host runner
                              (live.py), every 2 s until its folder is written (then removed)
    worker_connect            (master) a late worker gets the start's time too
    spawning_complete         open model: the pool is there, the schedule starts; event "users
                              spawned" (health.py); --reset-stats: exact latency drops what it
                              holds, as Locust drops its stats
    report_to_master          (worker) piggyback the open model's counts, this process's CPU
                              seconds, CPU limit and loop lag, the latency windows and the pacing
                              sums on the stats report
    worker_report             (master) collect them, in the same order
    reset_stats               web UI: close the run folder, open the next one
    test_stopping             open model: stop offering iterations (users being stopped are no
                              drops); the run's end began (workers leaving now is no longer a fault)
    test_stop                 (worker) flush the stats since the last report, be ready again at
                              once; web UI: write the run's folder once the workers' final reports
                              are in, in a greenlet a signal waits for (ending.Closer)
    quitting                  open model: the summed counts and run.json's open_model;
                              thresholds on the final stats and exact latency, then the run's
                              status and the exit code (health.py, core/exits.py)
    quit                      final CSVs, latency files, Locust's report, the run page and run.json;
                              any secret header value scrubbed from the folder (headers.py); the
                              thresholds' verdict and (unless complete) the run's status printed last"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

import gevent
from locust import events as locust_events
from locust.env import Environment
from locust.runners import STATE_STOPPED, STATE_STOPPING, MasterRunner, Runner, WorkerRunner

from swarmbench.core import bottleneck, exits, headers
from swarmbench.core.checks import Check
from swarmbench.core.loadspec import parse_wait_time
from swarmbench.core.manifest import HEADLESS, RUN_END, STATS_RESET, UI, USERS_SPAWNED, CpuLimit
from swarmbench.plugin import checks, ending, generator, lifecycle, openmodel, options, pacing
from swarmbench.plugin.latency import Latency
from swarmbench.plugin.lifecycle import Run
from swarmbench.plugin.live import Live
from swarmbench.plugin.metrics import Metrics
from swarmbench.plugin.options import die
from swarmbench.plugin.slo import LiveChecks

# --- web-UI runs are runs -------------------------------------------------------------------------

logger = logging.getLogger("swarmbench")


def applies(environment: Environment) -> bool:
    """This process runs the web UI's tests: a master or standalone runner that is not headless."""
    opts = environment.parsed_options
    return bool(opts) and not opts.headless and not isinstance(environment.runner, WorkerRunner)


def begin_ui_run(environment: Environment) -> Run:
    """Start was pressed: a new run folder and its first sections (lifecycle.start follows)."""
    assert environment.runner is not None
    run = lifecycle.open_ui_run(environment, environment.runner)
    lifecycle.record(run, environment.parsed_options, environment)
    return run


def end_ui_run(run: Run, plugin: Any, reason: str | None = None) -> None:
    """The UI test ended: thresholds, then the folder (CSVs, the reports, run.json). At the test's
    end the workers' final reports are in (ending.Closer waits for their goodbyes first)."""
    run.health.closing = True
    if reason:  # the test goes on: reports still in flight belong to the next folder
        run.health.record(STATS_RESET, reason)
    env = run.env
    if plugin.checks:
        # Recorded in this run's folder; the process's own exit code is not this run's business.
        keep = env.process_exit_code
        plugin.outcomes = checks.finish(run, plugin.checks, env, plugin.latency.totals())
        env.process_exit_code = keep
        checks.print_outcomes(plugin.outcomes)
    if plugin.headers:
        run.manifest.request_headers = sorted(plugin.headers)
    plugin.write_run(run, None)


# --- the plugin's object and its listeners --------------------------------------------------------


class Swarmbench:
    """Everything the plugin knows in this process: no module-level state anywhere else."""

    def __init__(self) -> None:
        self.run: Run | None = None
        self.checks: list[Check] = []
        self.outcomes: list[checks.Outcome] = []
        self.headers: dict[str, str] = {}
        self.worker_clock: generator.CpuClock | None = None
        self.cpu_limit: CpuLimit | None = None  # this process's own CPU limit (own_limit), read once
        self.lag_probe = generator.Probe()  # a load generator's event-loop lag (generator.py)
        self.pacing = pacing.Pacing()  # the waits users took (plugin/pacing.py)
        self.env: Environment | None = None
        self.signals = ending.Signals(self.on_signal)
        self.open_model = openmodel.ArrivalLoad(self)  # --arrival-rate's state (inactive without it)
        self.latency = Latency(self)  # every run's exact latency (plugin/latency.py)
        self.live = Live(self)  # a headless run's live status for the host runner (plugin/live.py)
        self.metrics = Metrics(self)  # /metrics for Prometheus (plugin/metrics.py)
        self.slo = LiveChecks(self)  # --abort-on-fail: thresholds checked live (plugin/slo.py)
        self.closer = ending.Closer()  # writes a web-UI run's folder, in its own greenlet
        self.leaving: set[str] = set()  # workers that said a signal is stopping them
        self.ending: gevent.Greenlet | None = None  # the master ending the run for leaving workers
        self.collecting = False  # the master is collecting its workers' goodbyes (collect_ui)

    def register(self, events: Any = locust_events) -> None:
        """Every listener of the plugin, event by event, in the order Locust calls them (the module
        docstring says why each comes where it does)."""
        om, pace, lat, live = self.open_model, self.pacing, self.latency, self.live
        order = (
            (events.init_command_line_parser, (options.add_options,)),
            (events.init, (om.on_init, self.on_init, pace.on_init, lat.on_init, self.on_init_done)),
            (
                events.test_start,
                (
                    om.on_test_start,
                    self.on_test_start,
                    lat.on_test_start,
                    pace.on_test_start,
                    live.on_test_start,
                    self.slo.on_test_start,
                ),
            ),
            (events.worker_connect, (lat.on_worker_connect,)),
            (
                events.spawning_complete,
                (om.on_spawning_complete, self.on_spawning_complete, lat.on_spawning_complete),
            ),
            (
                events.report_to_master,
                (
                    om.on_report_to_master,
                    self.on_report_to_master,
                    lat.on_report_to_master,
                    pace.on_report_to_master,
                ),
            ),
            (
                events.worker_report,
                (om.on_worker_report, self.on_worker_report, lat.on_worker_report, pace.on_worker_report),
            ),
            (events.reset_stats, (self.on_reset_stats, lat.on_reset_stats)),
            (events.test_stopping, (om.on_test_stopping, self.on_test_stopping)),
            (events.test_stop, (self.on_test_stop,)),
            (events.quitting, (om.on_quitting, self.on_quitting)),
            (events.quit, (self.on_quit,)),
        )
        for event, listeners in order:
            for listener in listeners:
                event.add_listener(listener)

    # --- init ---

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is None:
            return
        self.env = environment
        is_worker = isinstance(runner, WorkerRunner)
        # 1. validate everything before anything is created
        if not is_worker:
            try:
                parse_wait_time(opts.wait_time)
            except ValueError as e:
                die(f"--wait-time/LOCUST_WAIT_TIME: {e}")
            self.checks = checks.validate(opts)
            self.slo.validate(environment, runner, self.checks)
        self.headers = options.load(opts)
        headers.install_redaction(self.headers)  # their values never reach a log line (headers.py)
        lifecycle.validate(opts, environment)
        self.metrics.on_init(environment, runner)  # the port bound now: one in use stops the run here
        if isinstance(runner, MasterRunner):
            # Registered after Locust's own (made with the runner, before init): it runs once a
            # report is merged whole. The master's message loop reads a backlog of reports back to
            # back without yielding (a queued ZeroMQ message is read without waiting), so at 1,000
            # workers a /metrics scrape or a web-UI poll waited behind hundreds of them (186 ms
            # median, 2.2 s at worst); letting the other greenlets run after each costs a switch.
            environment.events.worker_report.add_listener(lambda **_kw: gevent.sleep(0))
        # 2. a master sends no requests; it only records the header names
        if self.headers and not isinstance(runner, MasterRunner):
            options.install_all(environment, self.headers)
        # 5. workers that a signal stops say so (a stopped stack is "interrupted", not "degraded")
        ending.listen_for_workers(runner, self.on_worker_signal)
        self.slo.listen(runner)  # (worker) --abort-on-fail: report at the pace the master says
        # 3. + 4. the run folder and its first sections (a web-UI run's: at each Start)
        if is_worker or not opts.headless:
            return
        self.run = lifecycle.open_run(environment, runner)
        lifecycle.record(self.run, opts, environment)

    def on_init_done(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        if isinstance(runner, MasterRunner):
            ending.quit_at_once_when_alone(runner)
        lifecycle.await_workers(environment, runner)  # last: every other init step is done

    # --- the test ---

    def on_test_start(self, environment: Environment, **_kw: Any) -> None:
        if not self.signals.installed:
            self.signals.install()
        if isinstance(environment.runner, WorkerRunner):
            # Workers measure CPU from their test start (the clock starts when the test does).
            self.worker_clock = generator.CpuClock()
            self.lag_probe.start()
            return
        if self.ending is not None and self.ending.ready():
            self.ending = None  # workers stopped earlier (`docker compose stop worker`) and came back
        if self.run is None and applies(environment):
            self.run = begin_ui_run(environment)
        if self.run is not None and lifecycle.start(self.run):
            lifecycle.start_host_cpu(self.run)
            if not isinstance(environment.runner, MasterRunner):  # a standalone runner generates load
                self.lag_probe.start()
                tracker = gevent.spawn(generator.track_local, self.lag_probe, self.run.lag, time.monotonic())
                self.run.greenlets.append(tracker)

    def on_spawning_complete(self, user_count: int, **_kw: Any) -> None:
        if self.run is not None and self.run.started_at is not None:
            self.run.health.record(USERS_SPAWNED, f"{user_count} users running")

    def on_report_to_master(self, client_id: str, data: dict, **_kw: Any) -> None:
        if self.worker_clock is None:
            self.worker_clock = generator.CpuClock()
        wall, used = self.worker_clock.read()
        self.cpu_limit = self.cpu_limit or generator.own_limit()
        runner = self.env.runner if self.env else None
        users = runner.user_count if runner is not None else 0  # Locust adds its own count after us
        limit = self.cpu_limit.to_json() if self.cpu_limit else None
        data[generator.CPU_REPORT_KEY] = {"wall_s": wall, "cpu_s": used, "users": users, "limit": limit}
        data[generator.LAG_REPORT_KEY] = self.lag_probe.report()

    def on_worker_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        report = data.get(generator.CPU_REPORT_KEY)
        if self.run is not None and self.run.started_at is not None and report:
            lifecycle.worker_cpu_report(self.run, client_id, report)
        if self.run is not None and self.run.started_at is not None and data.get(generator.LAG_REPORT_KEY):
            self.run.lag.record(client_id, data[generator.LAG_REPORT_KEY], self.run.health.elapsed())

    def on_reset_stats(self, **_kw: Any) -> None:
        run = self.run
        if run is None or run.started_from != UI or run.started_at is None or self.env is None:
            return
        end_ui_run(run, self, reason="stats reset from the web UI; the test goes on in a new folder")
        self.run = None
        # The next folder starts once Locust has reset its stats, right after this listener: its
        # start reads the target's counters over the network, and a worker's report taken during
        # that wait would land in the stats Locust is about to clear (lost from both folders).
        gevent.spawn(self.begin_after_reset, self.env)

    def begin_after_reset(self, env: Environment) -> None:
        """(web UI) The folder after a reset, opened as Locust's reset_stats returns (no report can
        come in between: nothing yields there)."""
        if self.run is not None or env.runner is None or env.runner.state in (STATE_STOPPED, STATE_STOPPING):
            return  # Stop (or another Start) came first
        self.run = begin_ui_run(env)
        if lifecycle.start(self.run):
            lifecycle.start_host_cpu(self.run)

    def on_test_stopping(self, **_kw: Any) -> None:
        run = self.run
        if run is not None and run.started_at is not None:
            run.health.closing = True
            run.ended_at = run.ended_at or datetime.now(UTC)

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
            # Told to STOP, a worker says "client_stopped" (the master drops it), then sleeps
            # --stop-timeout before "client_ready" -- although its users have stopped already (that
            # wait happened in stop()). Meanwhile its reports, every 3 s, reach a master that no
            # longer knows it ("Discarded report from unrecognized worker"). The timeout has done its
            # job: zero it, so the worker is back at once (the next spawn job sets it again).
            environment.stop_timeout = 0
            self.lag_probe.stop()
            return
        run = self.run
        if run is not None and run.started_from == UI and run.started_at is not None:
            self.run = None  # the next Start opens a new folder
            self.closer.start(runner, environment.stop_timeout, lambda: end_ui_run(run, self))
            # Written before Stop's request returns (the next Start clears the stats) -- unless this
            # is Locust's own message loop (the last worker quit): the folder waits for final
            # reports that loop delivers, and a signal's runner.quit() kills it (ending.py).
            if gevent.getcurrent() not in runner.greenlet and not self.collecting:
                self.closer.join()

    # --- signals ---

    def on_signal(self, signum: int) -> None:
        """The first SIGINT/SIGTERM (ending.py): record it, end this process like its normal end."""
        env = self.env
        if env is None or env.runner is None:
            return
        runner, run = env.runner, self.run
        if isinstance(runner, WorkerRunner):
            ending.notify_master(env, signum)
            # Ctrl-C in a terminal reaches the master too (--processes, a local sweep): then its
            # "quit" ends this worker, cleanly, within moments. Alone, the worker quits itself.
            gevent.sleep(ending.WORKER_QUIT_GRACE_S)
            runner.quit()
            return
        if run is not None and run.started_at is not None:
            run.health.signal(signum)
        if self.ending is not None:
            self.ending.join()  # the workers' signals came first: that end is under way
        if isinstance(runner, MasterRunner) and run is not None and not applies(env):
            lifecycle.collect_and_quit(run)
            return
        if isinstance(runner, MasterRunner):
            self.collect_ui(runner)
        else:
            runner.stop()  # a standalone runner: its web-UI run's folder, if one runs (test_stop)
        self.closer.join()
        runner.quit()
        if env.web_ui is not None:
            env.web_ui.stop()

    def on_worker_signal(self, worker: str, signum: int) -> None:
        if self.run is not None and self.run.started_at is not None:
            self.run.health.worker_signal(worker, signum)
        self.leaving.add(worker)
        runner = self.env.runner if self.env else None
        if self.ending is None and ending.all_workers_leaving(runner, self.leaving):
            # The stack is being stopped, workers first (compose): end the run now, so its record is
            # written before the master's own signal. Not in Locust's message loop (it waits for
            # messages that loop delivers).
            self.ending = gevent.spawn(self.end_for_leaving_workers)

    def end_for_leaving_workers(self) -> None:
        env, run = self.env, self.run
        assert env is not None and isinstance(env.runner, MasterRunner)
        logger.info("Every worker is being stopped: ending the run and saving it")
        if run is not None and run.started_from == "headless":
            lifecycle.collect_and_quit(run)
        elif run is not None and run.started_at is not None:
            self.collect_ui(env.runner)  # the web UI stays up

    def collect_ui(self, runner: MasterRunner) -> None:
        """End a web-UI run on a signal: stop it, collect every worker's goodbye (ending.collect);
        its folder is written by self.closer meanwhile -- not waited for inside test_stop, which
        fires before the workers are asked to quit."""
        self.collecting = True
        try:
            ending.collect(runner, runner.environment.stop_timeout)
        finally:
            self.collecting = False

    # --- the end ---

    def on_quitting(self, environment: Environment, **_kw: Any) -> None:
        run = self.run
        if run is None or run.started_from == UI:
            if self.signals.received is not None and not isinstance(environment.runner, WorkerRunner):
                environment.process_exit_code = exits.interrupted(self.signals.received)
            return
        if self.checks:
            self.outcomes = checks.finish(
                run, self.checks, environment, self.latency.totals(), self.slo.broken
            )
        if self.headers:
            run.manifest.request_headers = sorted(self.headers)  # names only, never values
        lifecycle.settle_exit_code(run, environment.parsed_options.allow_degraded)

    def on_quit(self, exit_code: int, **_kw: Any) -> None:
        self.closer.join()  # a web-UI run being written
        run = self.run
        headless = run is not None and run.started_from == HEADLESS
        if run is not None and (headless or run.started_at is not None):
            try:
                self.write_run(run, exit_code if headless else None)
            except OSError as e:
                # The results folder went read-only, away or full mid-run: one line, and a headless
                # run must not end 0 (CI would pass a run nobody saved). The runner writes the record
                # from what survived, as for a master that died (core/salvage.py).
                line = f"the run could not be saved in {run.run_dir}/: {e.strerror or e}"
                logger.error("%s", line)
                print(f"swarmbench: error: {line}", file=sys.stderr, flush=True)
                if headless:
                    raise SystemExit(exits.MASTER_LOST) from None
                return
        checks.print_outcomes(self.outcomes, exit_code if headless else exits.THRESHOLDS_BROKEN)
        if headless and run is not None and run.manifest.partial:
            ends = [e.detail for e in run.health.events if e.kind == RUN_END]
            line = ends[-1] if ends else run.manifest.status  # the status and why
            print(f"swarmbench: run {line} (exit code {exit_code})", flush=True)

    def write_run(self, run: Run, exit_code: int | None) -> None:
        """The run's folder, complete (a headless run at quit, a web-UI run at its stop)."""
        self.live.stop(run)  # the test is over: no more live status (nor a stale one left)
        run.manifest.pacing = self.pacing.manifest()  # before finish(): the verdict reads it
        if self.lag_probe.greenlet is not None and run.started_at is not None:  # a standalone runner
            run.lag.record("local", self.lag_probe.report(), run.health.elapsed())
            self.lag_probe.stop()
        self.latency.write(run)  # its files, and run.json's `latency` before run.json is written
        lifecycle.finish(run, exit_code)
        gen_lag = run.manifest.generator_lag
        if gen_lag and gen_lag.inflated and gen_lag.worst_p99_ms is not None:
            line = bottleneck.reason(gen_lag.worst_p99_ms, gen_lag.median_response_ms)
            logger.warning("Run %s: %s", run.manifest.run_id, line)
            print(f"swarmbench: {line}", flush=True)
        if run.run_dir and self.headers:
            headers.scrub_folder(run.run_dir, self.headers)  # nor a saved file
        self.metrics.refresh()  # /metrics: the run's final figures (a web-UI run's until the next)


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
