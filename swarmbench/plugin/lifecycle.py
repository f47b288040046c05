"""The run this process records: its folder, its clock, what it records about itself, a clean end, its
CSVs and run.json.

Locust's CSV files for a run folder, written so they end with the run's final numbers.

Swarmbench writes Locust's CSVs itself (with Locust's own writer class, so the format is exactly
Locust's) instead of relying on `--csv`: Locust's CSV greenlet writes once a second and its last
write can predate the workers' final reports, leaving the last second out of `*_stats.csv`. Here the
files are rewritten once more after the last report, so they match the totals Locust prints.

The run this process records: its folder, its clock, a clean end, its CSVs and run.json.

Runs on every process but does its work where it belongs: workers report their CPU; the master
(or a standalone runner) owns the run folder, ends the run so that every worker's final stats
arrive, and writes run.json last. The listeners that call these functions, and their order, are in
wiring.py. A headless run is opened at init and written at quit; a web-UI run (wiring.py) is
opened at each Start and written at its Stop, with the same functions.

Experiment settings a run records about itself: sweep membership, the scenario's request mix,
the optional step-load shape, and the whole machine's CPU while the test ran.

`python -m swarmbench sweep` sets LOCUST_SWEEP_* for every point, so each run folder says which
sweep, repeat and point it belongs to (analysis groups and labels runs by it); a run outside a
sweep records nothing here. The names (mixes, modes, the step grammar) are swarmbench.core.loadspec's."""

from __future__ import annotations

import csv
import logging
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gevent
import locust
import psutil
from locust import stats as locust_stats
from locust.env import Environment
from locust.html import get_html_report
from locust.runners import LocalRunner, MasterRunner, Runner

from swarmbench.core import bottleneck, exits, folder, target
from swarmbench.core.atomic import atomic_file, write_atomic
from swarmbench.core.folder import CSV_PREFIX
from swarmbench.core.health import Health
from swarmbench.core.loadspec import MIXES, SWEEP_MODES, parse_step_users
from swarmbench.core.manifest import (
    COMPLETE,
    DISTRIBUTED,
    HEADLESS,
    LOCAL,
    PROCESSES,
    RUN_END,
    UI,
    CpuLimit,
    HostCpu,
    RunManifest,
    SweepMembership,
    Totals,
    git_branch,
    git_commit,
    locustfile_sha256,
    run_exit_code,
    this_testbed,
)
from swarmbench.page import run as run_page
from swarmbench.plugin import ending, generator
from swarmbench.plugin.options import die

# --- Locust's CSV files, final --------------------------------------------------------------------


class CsvFiles:
    """Locust's four CSV files for one run, kept live during the test and finalized at the end."""

    def __init__(self, environment: Environment, run_dir: Path) -> None:
        self.prefix = str(run_dir / CSV_PREFIX)
        self.writer = locust_stats.StatsCSVFileWriter(
            environment, locust_stats.PERCENTILES_TO_REPORT, self.prefix, full_history=True
        )
        self.greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        if self.greenlet is None:
            self.greenlet = gevent.spawn(self.writer.stats_writer)

    def finalize(self) -> None:
        """Stop the periodic writer and write the final numbers once more."""
        if self.greenlet is not None:
            self.greenlet.kill(block=True)
        self.writer.close_files()
        w = self.writer
        for suffix, write in (
            ("_stats.csv", w.requests_csv),
            ("_failures.csv", w.failures_csv),
            ("_exceptions.csv", w.exceptions_csv),
        ):
            with atomic_file(self.prefix + suffix, newline="") as f:
                write(csv.writer(f))
        history = w.stats_history_file_name()
        with open(history, "a", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            if f.tell() == 0:  # the test never started: the writer never wrote its header
                out.writerow(w.stats_history_csv_columns)
            # One last row: the history's final cumulative counts equal _stats.csv's.
            w._stats_history_data_rows(out, time.time())


# --- the run's life -------------------------------------------------------------------------------

logger = logging.getLogger("swarmbench")

HOST_CHECK_TIMEOUT_S = 5.0
"""How long the pre-flight request may take before the host counts as unreachable."""

SAMPLE_INTERVAL_S = 1.0
"""How often the master samples Locust's per-worker cpu_usage and the worker count."""


class Run:
    """State of the one headless run this process records (master or standalone runner).

    `manifest` is run.json as it fills up: settings at init, sections from the other modules
    (experiment, thresholds, headers) as they happen, the outcome at quit.
    """

    def __init__(
        self,
        environment: Environment,
        run_dir: Path | None,
        run_time: float | None,
        started_from: str = HEADLESS,
    ) -> None:
        self.env = environment
        self.run_dir = run_dir
        self.run_time = run_time
        self.csv = CsvFiles(environment, run_dir) if run_dir else None
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.target_before: target.TargetSnapshot | None = None
        self.cpu: dict[str, generator.CpuSeries] = {}
        self.local_clock = generator.CpuClock()
        self.workers_seen: set[str] = set()
        self.workers_loaded: set[str] = set()  # the workers that ran users (run.json's workers_connected)
        self.lag = generator.LagBook()  # each generator's event-loop lag reports
        self.manifest = RunManifest(run_id=run_dir.name if run_dir else None)
        self.greenlets: list[gevent.Greenlet] = []
        self.finished = False
        self.started_from = started_from
        expected = generator_count(environment.runner) if started_from == HEADLESS else None
        self.health = Health(expected=expected)

    @property
    def runner(self) -> Runner:
        assert self.env.runner is not None
        return self.env.runner

    def series(self, worker_id: str) -> generator.CpuSeries:
        series = self.cpu.get(worker_id)  # not setdefault: a CpuSeries made per report to be dropped
        if series is None:
            series = self.cpu[worker_id] = generator.CpuSeries()
        return series


# --- init: pre-flight, the run folder ------------------------------------------------------------


def check_host(host: str | None, skip: bool) -> None:
    """Fail before the test starts, not after 30 s of connection errors."""
    if not host:
        die("no host to test: set LOCUST_HOST (or --host, or `host` in locust.conf)")
    if not host.startswith(("http://", "https://")):
        die(f"host {host!r} is not an http:// or https:// URL (LOCUST_HOST/--host)")
    if skip:
        return
    try:
        with urllib.request.urlopen(host, timeout=HOST_CHECK_TIMEOUT_S):
            pass
    except urllib.error.HTTPError:
        pass  # it answered; a 404 on "/" is fine
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        die(f"host {host} is unreachable ({reason}); check LOCUST_HOST/--host")


def generator_count(runner: Runner) -> int | None:
    """Expected load generators: --expect-workers for a master, None for a standalone runner."""
    if isinstance(runner, MasterRunner):
        opts = runner.environment.parsed_options
        return int(opts.processes if opts.processes and opts.processes > 0 else opts.expect_workers)
    return None


def loaded_count(runner: Runner) -> int | None:
    """The folder name's worker count: the workers that get users. Locust gives users to at most one
    worker per user, so never more than the users (without a shape, whose count changes); a web-UI
    master counts the workers connected at Start, not --expect-workers (a headless option)."""
    n = generator_count(runner)
    if not isinstance(runner, MasterRunner):
        return n
    opts, shaped = runner.environment.parsed_options, runner.environment.shape_class is not None
    n = n if opts.headless else runner.worker_count
    users = opts.num_users if opts.headless else runner.target_user_count
    return min(n, users) if users and not shaped else n


def open_run(environment: Environment, runner: Runner) -> Run:
    """Pre-flight the host, create the run folder (unless --results-dir is empty), take over the
    end of a distributed run. Called for headless masters and standalone runners only."""
    opts = environment.parsed_options
    check_host(environment.host, skip=opts.skip_host_check)
    run_dir = open_run_dir(environment, runner) if opts.results_dir else None
    run_time = float(opts.run_time) if opts.run_time else None
    if isinstance(runner, MasterRunner) and run_time:
        # We end a distributed run ourselves (see end_distributed_run) so the workers' final
        # stats are in before anything is written; Locust's own timer would race with that.
        opts.run_time = None
    if run_dir:
        logger.info("Saving this run to %s/", run_dir)
    return Run(environment, run_dir, run_time)


WORKERS_POLL_S = 0.05
"""How often a headless master looks for its --expect-workers before the test starts."""


def await_workers(environment: Environment, runner: Runner) -> None:
    """(headless master, the last thing at init) Wait until --expect-workers workers are ready,
    looking every WORKERS_POLL_S, so that Locust's own wait finds them at its first look.

    Locust's wait looks once before any worker's message has been read (nothing has yielded since
    the runner was made), then sleeps a whole second between looks: a run started up to 1 s after
    its workers were ready (0.89 s in the median of 114 local runs). The time waited here comes off
    --expect-workers-max-wait, so a worker that never comes is given up on no later than before;
    the "Waiting for workers to be ready" line is logged as Locust logs it, once a second after 5 s.
    """
    opts = environment.parsed_options
    if not isinstance(runner, MasterRunner) or opts is None or not opts.headless:
        return
    want, limit = opts.expect_workers or 0, opts.expect_workers_max_wait or 0
    start = time.monotonic()
    said = 5.0
    while len(runner.clients.ready) < want:
        waited = time.monotonic() - start
        if limit and waited >= limit:
            break
        if waited >= said:
            ready = len(runner.clients.ready)
            logger.info("Waiting for workers to be ready, %s of %s connected", ready, want)
            said += 1.0
        gevent.sleep(WORKERS_POLL_S)
    if limit:
        # Locust's 0 means "no limit": what is left, never quite nothing.
        opts.expect_workers_max_wait = max(limit - (time.monotonic() - start), 0.001)


def open_ui_run(environment: Environment, runner: Runner) -> Run:
    """A run started by Start in the web UI: a new folder every time (never the last one's)."""
    opts = environment.parsed_options
    run_dir = None
    if opts.results_dir:
        # A folder the UI cannot create must not take the web UI down with it (a headless run
        # stops instead): the test runs, unsaved, and the log says why.
        try:
            run_dir = new_run_dir(environment, runner, explicit=False)
            logger.info("Saving this web UI run to %s/", run_dir)
        except OSError as e:
            logger.error(
                "This web UI run is not saved: cannot create a folder under %r (%s); make it writable "
                "by the containers' user (`make up` does, or set SWARMBENCH_UID)",
                opts.results_dir,
                e.strerror or e,
            )
    run_time = float(opts.run_time) if opts.run_time else None
    return Run(environment, run_dir, run_time, started_from=UI)


def new_run_dir(environment: Environment, runner: Runner, explicit: bool) -> Path:
    """Create the run's folder: named by --run-id when EXPLICIT (and given), else generated; OSError
    (FileExistsError for an explicit id that exists) when it cannot be created."""
    opts = environment.parsed_options
    classes = [c.__name__ for c in environment.user_classes]
    explicit = bool(opts.run_id) and explicit
    run_id = (opts.run_id if explicit else "") or folder.make_run_id(
        datetime.now(UTC), classes, loaded_count(runner)
    )
    if explicit and ("/" in run_id or run_id in (".", "..")):
        die(f"--run-id/LOCUST_RUN_ID {run_id!r} must be a folder name, not a path")
    return folder.create_run_dir(opts.results_dir, run_id, explicit)


def open_run_dir(environment: Environment, runner: Runner) -> Path:
    """A headless run's folder; a folder that cannot be created stops the run before it starts."""
    opts = environment.parsed_options
    run_id = opts.run_id or "?"
    try:
        return new_run_dir(environment, runner, explicit=True)
    except FileExistsError:
        die(f"run folder {Path(opts.results_dir) / run_id} already exists; choose another LOCUST_RUN_ID")
    except OSError as e:
        die(f"cannot create the run folder under {opts.results_dir!r}: {e.strerror or e}")


# --- test start: snapshots, CSV writer, samplers, distributed end -------------------------------


def start(run: Run) -> bool:
    """The test started: take the target's snapshot, start the CSV writer and samplers. False when
    it had already started (a shape or the UI can fire test_start again)."""
    if run.started_at is not None:
        return False
    run.started_at = datetime.now(UTC)
    run.health.start(worker_states(run.runner) if isinstance(run.runner, MasterRunner) else None)
    run.target_before = target.scrape(run.env.host or "")
    run.local_clock.start()
    if run.csv:
        run.csv.start()
    run.greenlets.append(gevent.spawn(sample, run))
    if isinstance(run.runner, MasterRunner) and run.run_time:
        run.greenlets.append(gevent.spawn(end_distributed_run, run))
    return True


def worker_states(runner: MasterRunner) -> dict[str, str]:
    return {client.id: str(client.state) for client in runner.clients.values()}


def sample(run: Run) -> None:
    """Per second: Locust's reported per-worker CPU, the workers' states, the request counts, our
    own CPU."""
    while True:
        runner = run.runner
        if isinstance(runner, MasterRunner):
            for client in runner.clients.values():
                run.workers_seen.add(client.id)
                if client.user_count > 0:
                    run.workers_loaded.add(client.id)
                run.series(client.id).locust_reported.append(float(client.cpu_usage))
            run.health.workers(worker_states(runner))
        elif isinstance(runner, LocalRunner):
            series = run.series("local")
            series.limit = series.limit or generator.own_limit()
            series.add(*run.local_clock.read())
            series.locust_reported.append(float(runner.current_cpu_usage))
        total = run.env.stats.total
        run.health.requests(total.num_requests, total.num_failures)
        gevent.sleep(SAMPLE_INTERVAL_S)


def end_distributed_run(run: Run) -> None:
    """End a distributed run at --run-time without losing the workers' last stats.

    Locust's own timer quits the master 0.5 s after telling workers to quit, and a worker's last
    report can arrive later than that: the CSVs then miss requests the target did serve. Instead:
    stop the test on the master, ask every worker to quit (a worker stops its users, honouring
    --stop-timeout, then sends a final report and says goodbye), and let the master quit by itself
    when the last worker is gone; quit it ourselves only if a worker never answers.
    """
    gevent.sleep(run.run_time)
    logger.info("--run-time limit reached, stopping the workers and collecting their final stats")
    collect_and_quit(run)


def collect_and_quit(run: Run) -> None:
    """Stop the test, quit every worker, quit when their final stats are in (the end of a
    distributed run, at --run-time or on a signal; ending.py)."""
    runner = run.runner
    assert isinstance(runner, MasterRunner)
    run.health.closing = True
    if run.ended_at is None:
        run.ended_at = datetime.now(UTC)
    ending.collect(runner, run.env.stop_timeout)
    runner.quit()


def worker_cpu_report(run: Run, client_id: str, report: dict) -> None:
    """A worker's CPU seconds, piggybacked on its stats report (see generator.py)."""
    run.workers_seen.add(client_id)
    if report.get("users"):
        run.workers_loaded.add(client_id)
    series = run.series(client_id)
    series.add(report["wall_s"], report["cpu_s"])
    limit = report.get("limit")  # the worker's wire format: CpuLimit's JSON (generator.own_limit)
    if limit and limit != series.limit_sent:  # type-checked once, not every report (every 3 s per worker)
        series.limit, series.limit_sent = CpuLimit.from_json(limit, f"worker {client_id}'s report"), limit


# --- the end: status, exit code, final CSVs, the reports and run.json -----------------------------


def conclude(run: Run) -> str:
    """Decide the run's status once, from its final counts (health.py's rules), and log it."""
    if run.manifest.status is None:
        run.health.closing = True
        total = run.env.stats.total
        if run.ended_at is not None:
            # One last look with the final counts, as of the run's end: requests that hung until the
            # stop (a vanished target can take a connection timeout to fail) are counted only now.
            end = time.monotonic() - (datetime.now(UTC) - run.ended_at).total_seconds()
            run.health.requests(total.num_requests, total.num_failures, now=end, final=True)
        status = run.health.status(total.num_requests, total.num_failures)
        line = run.health.summary(status, total.num_requests, total.num_failures)
        run.health.record(RUN_END, line)
        run.manifest.status = status
        (logger.info if status == COMPLETE else logger.warning)("Run status: %s", line)
    return run.manifest.status


def settle_exit_code(run: Run, allow_degraded: bool) -> None:
    """At quitting, before Locust reads it: the exit code for the run's status (core/exits.py's
    precedence). Left to Locust when the status adds nothing to what it decides itself."""
    env, runner = run.env, run.runner
    status = conclude(run)
    if env.process_exit_code is not None:
        base = env.process_exit_code
    elif runner.errors or runner.exceptions:
        base = env.parsed_options.exit_code_on_error
    else:
        base = exits.OK
    code = run_exit_code(status, run.health.interrupting_signal(), allow_degraded, base)
    if code != base:
        env.process_exit_code = code


def finish(run: Run, exit_code: int | None) -> None:
    """Stop the samplers, write the final CSVs, Locust's report and the run page, then run.json (last:
    its presence means the rest is there). EXIT_CODE: the process's, None for a web-UI run (the
    process goes on).

    The target's counters are read first: the only call here that waits on the network, so the
    only point where this greenlet yields and a worker's report can land in Locust's stats. After
    it, every file is written from one set of numbers (a web-UI reset goes on running: a report
    taken in between the CSVs and run.json's totals made them disagree)."""
    if run.finished:
        return
    run.finished = True
    after = target.scrape(run.env.host or "") if run.target_before and run.run_dir else None
    for g in run.greenlets:
        g.kill(block=False)
    if run.ended_at is None:
        run.ended_at = datetime.now(UTC)
    conclude(run)
    if isinstance(run.runner, LocalRunner):
        run.series("local").add(*run.local_clock.read())
    if run.csv:
        run.csv.finalize()
    if run.run_dir:
        write_report(run)
        fill_manifest(run, exit_code, after)
        write_page(run)
        folder.write_json_atomic(run.run_dir / folder.MANIFEST, run.manifest.to_json())
        logger.info("Results saved to %s/ (the run page: %s)", run.run_dir, run.run_dir / folder.REPORT_HTML)


def write_report(run: Run) -> None:
    """Locust's own HTML report, rendered from the final stats (after the workers' last reports), as
    locust_report.html: report.html is the run page."""
    assert run.run_dir is not None
    write_atomic(run.run_dir / folder.LOCUST_REPORT_HTML, get_html_report(run.env, show_download_link=False))


def write_page(run: Run) -> None:
    """The run page (report.html) from the folder as written so far and run.json's content, which is
    written right after it. A page that cannot be made is logged, never the end of the record: the
    folder and run.json are what a run must leave."""
    assert run.run_dir is not None
    try:
        run_page.write(run.run_dir, run.manifest)
    except Exception:  # noqa: BLE001 -- a bug in the page must not cost the run its run.json
        logger.exception("The run page %s could not be written", run.run_dir / folder.REPORT_HTML)


def fill_manifest(run: Run, exit_code: int | None, after: dict | None = None) -> RunManifest:
    """The settings and the outcome; the sections other modules set are already there. AFTER: the
    target's counters at the end (finish() reads them first)."""
    env, opts, runner, m = run.env, run.env.parsed_options, run.runner, run.manifest
    total = env.stats.total
    started, ended = run.started_at, run.ended_at
    is_master = isinstance(runner, MasterRunner)
    m.started_at, m.ended_at = folder.utc_iso(started), folder.utc_iso(ended)
    m.duration_s = round((ended - started).total_seconds(), 3) if started and ended else None
    m.host, m.locustfile = env.host, opts.locustfile
    m.locustfile_sha256 = locustfile_sha256(opts.locustfile)
    m.user_classes = tuple(c.__name__ for c in env.user_classes)
    if m.users is None:  # a step load records its peak users itself
        m.users = opts.num_users
    m.spawn_rate, m.run_time, m.wait_time = opts.spawn_rate, run.run_time, opts.wait_time
    m.stop_timeout, m.reset_stats = env.stop_timeout, bool(env.reset_stats)
    m.mode = (PROCESSES if opts.processes else DISTRIBUTED) if is_master else LOCAL
    m.workers_expected = (run.health.expected or 0) if is_master else 0
    m.workers_connected = len(run.workers_loaded or run.workers_seen) if is_master else 0
    m.locust_version = locust.__version__
    m.worker_cpu = generator.summarize(run.cpu)
    m.target = target.delta(run.target_before, after) if run.target_before and after else None
    if m.target:  # its CPU seconds as a share of what it may use (bottleneck.target_cpus)
        share = bottleneck.target_cpu_util(m.target, m.duration_s)
        m.target.cpu_share_of_limit = None if share is None else round(share, 3)
    m.git_commit = opts.git_commit or git_commit()
    m.git_branch = opts.git_branch or git_branch()
    m.testbed = opts.testbed or this_testbed()
    m.exit_code = exit_code
    m.started_from = run.started_from
    m.events, m.workers_timeline = run.health.events, run.health.timeline
    m.totals = Totals(requests=total.num_requests, failures=total.num_failures)
    m.generator_lag = run.lag.section(total.get_response_time_percentile(0.5) if total.num_requests else None)
    # What limited this run, from the numbers above (see core/bottleneck.py for the thresholds).
    m.bottleneck = bottleneck.judge_manifest(
        m, rps=total.total_rps if total.num_requests else None, avg_ms=total.avg_response_time or None
    )
    if m.open_model:  # open-model load: was the offered rate held, and what limited it
        m.open_model.capacity = bottleneck.judge_open(m)
    return m


# --- what a run records about itself --------------------------------------------------------------

HOST_CPU_INTERVAL_S = 1.0
"""How often the master samples the whole machine's CPU (psutil.cpu_percent)."""

STEP_SHAPE = "StepLoadShape"
"""locustfiles/step_load.py's shape class: inert unless --step-users is set."""


def validate(opts: Any, environment: Environment) -> None:
    """Reject a bad mix, sweep mode or step spec before anything is created."""
    if opts.albums_mix not in MIXES:
        die(f"--albums-mix/LOCUST_ALBUMS_MIX {opts.albums_mix!r}: expected one of {', '.join(MIXES)}")
    if opts.sweep_mode and opts.sweep_mode not in SWEEP_MODES:
        die(f"--sweep-mode/LOCUST_SWEEP_MODE {opts.sweep_mode!r}: expected {' or '.join(SWEEP_MODES)}")
    if opts.step_users:
        try:
            parse_step_users(opts.step_users)
        except ValueError as e:
            die(f"--step-users/LOCUST_STEP_USERS {e}")
    elif environment.shape_class is not None and type(environment.shape_class).__name__ == STEP_SHAPE:
        # step_load.py was loaded but no steps asked for: behave exactly like a normal run.
        environment.shape_class = None


def sweep_section(opts: Any) -> SweepMembership | None:
    if not getattr(opts, "sweep_id", ""):
        return None
    repeat = opts.sweep_repeat
    return SweepMembership(
        id=opts.sweep_id,
        mode=opts.sweep_mode or None,
        repeat=int(repeat) if str(repeat).isdigit() else None,
        point=opts.sweep_point or None,
    )


def record(run: Run, opts: Any, environment: Environment) -> None:
    """run.json's sweep, albums_mix and load_shape sections."""
    m = run.manifest
    m.sweep = sweep_section(opts)
    m.albums_mix = opts.albums_mix
    if opts.step_users and environment.shape_class is not None:
        steps = parse_step_users(opts.step_users)
        # run.json's "users" is otherwise locust.conf's, which a step load ignores: the most users
        # the steps reach (lifecycle keeps it: it fills `users` only where nothing set it).
        m.users = int(steps.max)
        m.load_shape = steps.load_shape()


def start_host_cpu(run: Run) -> None:
    """Sample the machine's CPU, all processes together, while the test runs (master or standalone).

    Workers measure only themselves: on a shared machine (4 workers on 2 cores, the target next to
    them) no worker reaches 90 % of a core, yet they are starved. The machine's total shows it. In
    a container this is still the host's figure (/proc/stat is not namespaced), which is the point.
    """
    if run.manifest.host_cpu is not None:
        return
    samples: list[float] = []
    section = HostCpu(cpus=psutil.cpu_count())
    run.manifest.host_cpu = section
    psutil.cpu_percent(None)  # primes the counter: the first call has no interval to measure

    def sample() -> None:
        while True:
            gevent.sleep(HOST_CPU_INTERVAL_S)
            samples.append(psutil.cpu_percent(None))
            section.mean_percent = round(sum(samples) / len(samples), 1)
            section.max_percent = max(samples)
            section.samples = len(samples)

    run.greenlets.append(gevent.spawn(sample))
