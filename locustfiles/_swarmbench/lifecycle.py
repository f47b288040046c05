"""Wiring: what Swarmbench does at each Locust event of a run.

Runs on every process but does its work where it belongs: workers report their CPU; the master
(or a standalone runner) checks the configuration, owns the run folder, ends the run so that every
worker's final stats arrive, and writes run.json last.
"""

from __future__ import annotations

import logging
import subprocess
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import gevent
import locust
from locust import events
from locust.env import Environment
from locust.rpc import Message
from locust.runners import LocalRunner, MasterRunner, Runner, WorkerRunner

from . import cpu, folder, results, target, verdict
from .errors import die
from .options import add_options
from .wait import parse_wait_time

logger = logging.getLogger("swarmbench")

HOST_CHECK_TIMEOUT_S = 5.0
"""How long the pre-flight request may take before the host counts as unreachable."""

FINAL_STATS_GRACE_S = 15.0
"""After --stop-timeout, how long the master waits for workers' final reports before quitting."""

SAMPLE_INTERVAL_S = 1.0
"""How often the master samples Locust's per-worker cpu_usage and the worker count."""


class Run:
    """State of the one headless run this process records (master or standalone runner)."""

    def __init__(self, environment: Environment, run_dir: Path | None, run_time: float | None) -> None:
        self.env = environment
        self.run_dir = run_dir
        self.run_time = run_time
        self.csv = results.CsvFiles(environment, run_dir) if run_dir else None
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.target_before: target.TargetSnapshot | None = None
        self.cpu: dict[str, cpu.CpuSeries] = {}
        self.local_clock = cpu.CpuClock()
        self.workers_seen: set[str] = set()
        self.extra: dict[str, object] = {}  # other modules' sections of run.json (e.g. thresholds)
        self.greenlets: list[gevent.Greenlet] = []
        self.finished = False

    @property
    def runner(self) -> Runner:
        assert self.env.runner is not None
        return self.env.runner

    def series(self, worker_id: str) -> cpu.CpuSeries:
        return self.cpu.setdefault(worker_id, cpu.CpuSeries())


_run: Run | None = None


def current_run() -> Run | None:
    """The run being recorded in this process, for other modules (thresholds, shapes)."""
    return _run


def register() -> None:
    events.init_command_line_parser.add_listener(add_options)
    events.init.add_listener(on_init)
    events.test_start.add_listener(on_test_start)
    events.report_to_master.add_listener(on_report_to_master)
    events.worker_report.add_listener(on_worker_report)
    events.test_start.add_listener(reset_worker_clock)
    events.test_stop.add_listener(flush_worker_stats)
    events.quit.add_listener(on_quit)


# --- init: validate, pre-flight, create the run folder ------------------------------------------


def on_init(environment: Environment, runner: Runner, **_kw) -> None:
    global _run
    opts = environment.parsed_options
    if opts is None or isinstance(runner, WorkerRunner):
        return
    try:
        parse_wait_time(opts.wait_time)
    except ValueError as e:
        die(f"--wait-time/LOCUST_WAIT_TIME: {e}")
    if not opts.headless:
        return
    check_host(environment.host, skip=opts.skip_host_check)

    run_dir = None
    if opts.results_dir:
        run_dir = open_run_dir(environment, runner)
        opts.html_file = str(run_dir / folder.REPORT_HTML)
    run_time = float(opts.run_time) if opts.run_time else None
    if isinstance(runner, MasterRunner) and run_time:
        # We end a distributed run ourselves (see end_distributed_run) so the workers' final
        # stats are in before anything is written; Locust's own timer would race with that.
        opts.run_time = None
    _run = Run(environment, run_dir, run_time)
    if run_dir:
        logger.info("Saving this run to %s/", run_dir)


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


def open_run_dir(environment: Environment, runner: Runner) -> Path:
    opts = environment.parsed_options
    classes = [c.__name__ for c in environment.user_classes]
    explicit = bool(opts.run_id)
    run_id = opts.run_id or folder.make_run_id(datetime.now(UTC), classes, generator_count(runner))
    if explicit and ("/" in run_id or run_id in (".", "..")):
        die(f"--run-id/LOCUST_RUN_ID {run_id!r} must be a folder name, not a path")
    try:
        return folder.create_run_dir(opts.results_dir, run_id, explicit)
    except FileExistsError:
        die(f"run folder {Path(opts.results_dir) / run_id} already exists; choose another LOCUST_RUN_ID")
    except OSError as e:
        die(f"cannot create the run folder under {opts.results_dir!r}: {e.strerror or e}")


# --- test start: snapshots, CSV writer, samplers, distributed end -------------------------------


def on_test_start(environment: Environment, **_kw) -> None:
    run = _run
    if run is None or run.started_at is not None or isinstance(environment.runner, WorkerRunner):
        return
    run.started_at = datetime.now(UTC)
    run.target_before = target.scrape(environment.host or "")
    run.local_clock.start()
    if run.csv:
        run.csv.start()
    run.greenlets.append(gevent.spawn(sample, run))
    if isinstance(environment.runner, MasterRunner) and run.run_time:
        run.greenlets.append(gevent.spawn(end_distributed_run, run))


def sample(run: Run) -> None:
    """Per second: Locust's reported per-worker CPU, the worker count, our own CPU."""
    while True:
        runner = run.runner
        if isinstance(runner, MasterRunner):
            for client in runner.clients.values():
                run.workers_seen.add(client.id)
                run.series(client.id).locust_reported.append(float(client.cpu_usage))
        elif isinstance(runner, LocalRunner):
            series = run.series("local")
            series.add(*run.local_clock.read())
            series.locust_reported.append(float(runner.current_cpu_usage))
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
    runner = run.runner
    assert isinstance(runner, MasterRunner)
    logger.info("--run-time limit reached, stopping the workers and collecting their final stats")
    run.ended_at = datetime.now(UTC)
    runner.stop(send_stop_to_client=False)
    for client in list(runner.clients.values()):
        runner.server.send_to_client(Message("quit", None, client.id))
    gevent.sleep(float(run.env.stop_timeout or 0) + FINAL_STATS_GRACE_S)
    logger.warning("Some workers did not send their final stats in time; quitting without them")
    runner.quit()


# --- CPU reports from workers -------------------------------------------------------------------

_worker_clock: cpu.CpuClock | None = None


def on_report_to_master(client_id: str, data: dict, **_kw) -> None:
    global _worker_clock
    if _worker_clock is None:
        _worker_clock = cpu.CpuClock()
    wall, used = _worker_clock.read()
    data[cpu.REPORT_KEY] = {"wall_s": wall, "cpu_s": used, "users": _users(data)}


def _users(data: dict) -> int:
    return sum((data.get("user_classes_count") or {}).values())


def on_worker_report(client_id: str, data: dict, **_kw) -> None:
    run = _run
    report = data.get(cpu.REPORT_KEY)
    if run is None or run.started_at is None or not report:
        return
    run.workers_seen.add(client_id)
    run.series(client_id).add(report["wall_s"], report["cpu_s"])


def flush_worker_stats(environment: Environment, **_kw) -> None:
    """A worker told to STOP (a LoadTestShape ending, the UI's stop button) reports only
    "client_stopped"; the stats since its last periodic report (every 3 s) then reach the master
    only if that next periodic report arrives before the master quits. Send them now instead
    (test_stop fires after the users stopped, before "client_stopped"), so the end of a shaped run
    does not depend on that timing. On QUIT Locust sends a final report itself; an extra one is
    harmless (reports carry deltas)."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner._send_stats()  # Locust's own reporting call; there is no public one


def reset_worker_clock(**_kw) -> None:
    """Workers measure CPU from their test start (the clock starts when the test does)."""
    global _worker_clock
    _worker_clock = cpu.CpuClock()


# --- quit: final CSVs and run.json --------------------------------------------------------------


def on_quit(exit_code: int, **_kw) -> None:
    run = _run
    if run is None or run.finished:
        return
    run.finished = True
    for g in run.greenlets:
        g.kill(block=False)
    if run.ended_at is None:
        run.ended_at = datetime.now(UTC)
    if isinstance(run.runner, LocalRunner):
        run.series("local").add(*run.local_clock.read())
    if run.csv:
        run.csv.finalize()
    if run.run_dir:
        folder.write_json_atomic(run.run_dir / folder.MANIFEST, manifest(run, exit_code))
        logger.info("Results saved to %s/", run.run_dir)


def manifest(run: Run, exit_code: int) -> dict:
    env, opts = run.env, run.env.parsed_options
    runner = run.runner
    after = target.scrape(env.host or "") if run.target_before else None
    total = env.stats.total
    started, ended = run.started_at, run.ended_at
    is_master = isinstance(runner, MasterRunner)
    mode = ("processes" if opts.processes else "distributed") if is_master else "local"
    data = {
        "schema_version": 1,
        "run_id": run.run_dir.name if run.run_dir else None,
        "started_at": iso(started),
        "ended_at": iso(ended),
        "duration_s": round((ended - started).total_seconds(), 3) if started and ended else None,
        "host": env.host,
        "locustfile": opts.locustfile,
        "user_classes": [c.__name__ for c in env.user_classes],
        "users": opts.num_users,
        "spawn_rate": opts.spawn_rate,
        "run_time": run.run_time,
        "wait_time": opts.wait_time,
        "stop_timeout": env.stop_timeout,
        "mode": mode,
        "workers_expected": generator_count(runner) if is_master else 0,
        "workers_connected": len(run.workers_seen) if is_master else 0,
        "locust_version": locust.__version__,
        "worker_cpu": cpu.summarize(run.cpu),
        "target": target.delta(run.target_before, after) if run.target_before and after else None,
        "git_commit": opts.git_commit or git_commit(),
        "exit_code": exit_code,
        "totals": {"requests": total.num_requests, "failures": total.num_failures},
        **run.extra,
    }
    # What limited this run, from the numbers above (see verdict.py for the thresholds).
    data["bottleneck"] = verdict.judge_manifest(
        data, rps=total.total_rps if total.num_requests else None, avg_ms=total.avg_response_time or None
    )
    return data


def iso(t: datetime | None) -> str | None:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z") if t else None


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None
