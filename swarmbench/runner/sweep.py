"""`swarmbench sweep`: the scaling experiment in one command (what `make sweep` runs), with its
progress line.

The sweep's progress line: `[3/8] w2 AlbumsFastHttpUser rep 1 · ETA 2m10s` on stderr.

`python -m swarmbench sweep`: the scaling experiment in one command (what `make sweep` runs).

Workers x user classes (x target stores x request mixes) x repeats, every point one normal headless
run under results/<sweep-id>/<point-id>/, then `python -m analysis report` on the whole sweep.

- Order: the points of each repeat run in a shuffled order (seeded by the sweep id, so a resumed
  sweep keeps its plan), so slow drift of a shared machine does not masquerade as scaling.
- sweep.json (in the sweep folder) records the settings and every point's status: pending, done,
  failed (with its reason) or interrupted. It is rewritten atomically after every point.
- Resume: rerunning with the same sweep id runs only what is not done; a point folder left by an
  interrupted or failed attempt is moved aside to .aborted/<point-id>-<n>/ first (hidden, so the
  analysis never mixes it in; never deleted, never overwritten). Other settings under an existing
  sweep id are an error.
- Ctrl-C stops the current point cleanly (Locust writes what it has, the stack goes down), keeps
  every finished point and exits 130.

The plan and each point's processes are points.py's; the progress line is below.
Standard library only: `--local` needs Locust (the venv) and Go."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from swarmbench.core import bottleneck, cmdline, exits
from swarmbench.core.exits import UsageError
from swarmbench.core.folder import ABORTED_DIR, LIVE_JSON, LOGS_DIR, REPORT_DIR, create_run_dir, utc_iso
from swarmbench.core.live import read_live
from swarmbench.core.loadspec import holds, parse_arrival_rate
from swarmbench.runner import settings as S
from swarmbench.runner.compose import prepare_results
from swarmbench.runner.points import (
    Point,
    PointRunner,
    SweepSettings,
    _PointError,
    check_engine,
    classify,
    load_state,
    plan,
    point_runner,
    point_verdict,
    save_state,
)
from swarmbench.runner.settings import find_checkout, record_runs, results_dir
from swarmbench.runner.terminal import fit

# --- the progress line ----------------------------------------------------------------------------

POINT_OVERHEAD_S = 20.0
"""First ETA guess of a point's cost beyond its run time (stack start, spawn, stop, teardown);
replaced by the measured mean once a point has finished."""


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    m, s = divmod(seconds, 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """`[3/8] w2 AlbumsFastHttpUser rep 1 · ETA 2m10s` on stderr, with a per-second countdown on a
    terminal, followed there by the point's live status (its master's: users, req/s, failures, the
    exact p95 so far; core/live.py); one line per point otherwise, e.g. in CI logs."""

    def __init__(self, total: int, run_s: float) -> None:
        self.total, self.run_s = total, run_s
        self.durations: list[float] = []
        self.tty = sys.stderr.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def per_point(self) -> float:
        if self.durations:
            return sum(self.durations) / len(self.durations)
        return self.run_s + POINT_OVERHEAD_S

    def start(self, index: int, point: Point, remaining_after: int, live: Path | None = None) -> None:
        """LIVE: where the point's master writes its live status (its run folder's LIVE_JSON)."""
        t0 = time.monotonic()

        def line() -> str:
            left = max(0.0, self.per_point() - (time.monotonic() - t0)) + remaining_after * self.per_point()
            status = read_live(live) if live is not None and self.tty else None
            now = f" · {status.line()}" if status is not None else ""
            return f"[{index}/{self.total}] {point.label} · ETA {fmt_duration(left)}{now}"

        if not self.tty:
            print(f"swarmbench: {line()}", file=sys.stderr, flush=True)
            return
        self._stop.clear()

        def tick() -> None:
            while not self._stop.wait(1.0):
                print(f"\r\x1b[K{fit(line())}", end="", file=sys.stderr, flush=True)

        print(f"\r\x1b[K{fit(line())}", end="", file=sys.stderr, flush=True)
        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()

    def finish(self, point: Point, elapsed: float) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._thread = None
        self.durations.append(elapsed)
        end = "\r\x1b[K" if self.tty else ""
        note = f" ({point.reason})" if point.reason and point.status != "done" else ""
        verdict = f", {point.verdict}" if point.verdict else ""
        print(
            f"{end}swarmbench: {point.id}: {point.status}{verdict} in {fmt_duration(elapsed)}{note}",
            file=sys.stderr,
            flush=True,
        )


# --- the sweep ------------------------------------------------------------------------------------

POINT_GRACE_S = 180.0
"""A point may take this long beyond its run time before it is killed and recorded as failed
(image builds on a first compose run take most of it)."""
STOP_WAIT_S = 60.0
"""After Ctrl-C, how long the current point may take to stop cleanly before it is killed."""


def _now() -> str | None:
    return utc_iso(datetime.now(UTC), "seconds")


def move_aside(sweep_dir: Path, pid: str) -> Path | None:
    """A point folder from an attempt that did not finish: keep it, out of the analysis' way."""
    folder = sweep_dir / pid
    if not folder.exists():
        return None
    aside = sweep_dir / ABORTED_DIR
    aside.mkdir(exist_ok=True)
    n = 1
    while (aside / f"{pid}-{n}").exists():
        n += 1
    folder.rename(aside / f"{pid}-{n}")
    return aside / f"{pid}-{n}"


def describe_schedule(spec: str) -> str:
    """The dry run's line about an open-model sweep: what every point offers, and its steps."""
    schedule = parse_arrival_rate(spec)
    steps = ", ".join(
        f"{h.rate:g}/s " + (f"for {h.t1 - h.t0:g} s" if math.isfinite(h.t1) else "to the end")
        for h in holds(schedule)
    )
    return (
        f"open model: every point offers {schedule} iterations/s (users = the pool); "
        f"steps judged: {steps or 'none (no constant rate)'}"
    )


def run_sweep(
    s: SweepSettings,
    environ: Mapping[str, str],
    report: bool = True,
    dry_run: bool = False,
    record: str | None = None,
    named: bool = True,
) -> int:
    """Run (or resume) the sweep. 0 all points done, 1 some failed, 130 interrupted. NAMED: the
    sweep id was given (SWEEP_ID, --sweep-id: resumed when it exists); else it is the default
    sweep-<UTC second>, taken exclusively as run folders are: a second sweep started in the same
    second gets sweep-...Z-2, never the first one's folder (which it would resume).

    (Long on purpose: setup, the point loop and its one `finally` that records the sweep's state
    must stay together, so an interruption anywhere still writes sweep.json.)"""
    env = dict(environ)
    bound = knee_bound(env) if s.arrival_rate else None  # a bad KNEE_P99_MS fails now, not at the report
    root = results_dir(env)
    if not named and not dry_run:
        check_engine(env)  # bad input leaves nothing behind: checked before the folder is taken
        s = replace(s, sweep_id=create_run_dir(root, s.sweep_id, explicit=False).name)
    sweep_dir = root / s.sweep_id
    points = load_state(sweep_dir, s) if sweep_dir.exists() else plan(s)
    todo = [p for p in points if p.status != "done"]
    if dry_run:
        if s.arrival_rate:
            print(describe_schedule(s.arrival_rate))
        for i, p in enumerate(points, 1):
            print(f"{i:3d} {p.id} users={p.users} [{p.status}]")
        return 0
    if not todo:
        print(f"swarmbench: sweep {s.sweep_id}: all {len(points)} points already done; nothing to run")
        if report and not (sweep_dir / REPORT_DIR / "report.html").exists():
            return 0 if make_report(sweep_dir, knee_p99_ms=bound) == 0 else 1
        return 0
    runner: PointRunner = point_runner(s, sweep_dir, env)
    engine = env.get("ENGINE") or "compose"
    runner.setup()
    prepare_results(env, sweep_dir)
    runner.env = env
    logs = sweep_dir / LOGS_DIR
    logs.mkdir(exist_ok=True)
    print(
        f"swarmbench: sweep {s.sweep_id}: {len(todo)} of {len(points)} points to run "
        f"({'local processes' if s.local else 'docker ' + (env.get('ENGINE') or 'compose')}) -> {sweep_dir}/",
        file=sys.stderr,
    )
    save_state(sweep_dir, s, points, "running", engine)
    progress = Progress(len(todo), S.timespan_seconds("RUN_TIME", s.run_time))
    interrupted = False
    try:
        for i, p in enumerate(todo, 1):
            if run_point(runner, s, sweep_dir, p, logs, progress, i, len(todo) - i):
                interrupted = True
                break
            if record is not None and p.status == "done":
                record_runs([sweep_dir / p.id], record)  # RECORD: the history store, as each point ends
            save_state(sweep_dir, s, points, "running", engine)
    except KeyboardInterrupt:  # between two points: nothing is running
        interrupted = True
    finally:
        state = (
            "interrupted"
            if interrupted
            else ("complete" if all(p.status == "done" for p in points) else "incomplete")
        )
        save_state(sweep_dir, s, points, state, engine)
        runner.cleanup()
    done = sum(p.status == "done" for p in points)
    failed = [p for p in points if p.status == "failed"]
    if interrupted:
        print(
            f"swarmbench: interrupted; {done} of {len(points)} points kept. Resume with the same settings "
            f"and SWEEP_ID={s.sweep_id}",
            file=sys.stderr,
        )
        return exits.INTERRUPTED_SIGINT
    for p in failed:
        print(f"swarmbench: point {p.id} failed: {p.reason}", file=sys.stderr)
    if report and done and make_report(sweep_dir, knee_p99_ms=bound) != 0:
        return 1
    return 1 if failed else 0


def run_point(
    runner: PointRunner,
    s: SweepSettings,
    sweep_dir: Path,
    p: Point,
    logs: Path,
    progress: Progress,
    index: int,
    remaining_after: int,
) -> bool:
    """Run one point and record its status; True when the user interrupted it."""
    moved = move_aside(sweep_dir, p.id)
    if moved:
        print(f"swarmbench: kept the folder of an earlier attempt at {moved}", file=sys.stderr)
    p.attempts += 1
    p.started_at, p.ended_at, p.reason, p.exit_code, p.verdict = _now(), None, None, None, None
    limit = S.timespan_seconds("RUN_TIME", s.run_time) + POINT_GRACE_S
    log_path = point_log(logs, p.id)
    t0 = time.monotonic()
    progress.start(index, p, remaining_after, live=sweep_dir / p.id / LIVE_JSON)
    interrupted = False
    with open(log_path, "ab") as log:
        try:
            try:
                runner.start(p, runner.point_env(p), log)
                code = None
                while code is None:
                    code = runner.wait(0.5)
                    if code is None and time.monotonic() - t0 > limit:
                        runner.kill()
                        raise _PointError(f"did not finish within {fmt_duration(limit)}; killed")
                p.exit_code = code
                p.status, p.reason = classify(sweep_dir, p, code, log_path)
            except KeyboardInterrupt:
                interrupted = True
                _stop_cleanly(runner)
                p.status, p.reason = "interrupted", "stopped by Ctrl-C"
        except _PointError as e:
            runner.kill()
            p.status, p.reason = "failed", str(e)
    runner.kill()  # nothing of this point may outlive it (a no-op after a clean end)
    p.ended_at = _now()
    p.duration_s = round(time.monotonic() - t0, 1)
    if p.status == "done":
        p.verdict = point_verdict(sweep_dir, p)
    else:
        move_aside(sweep_dir, p.id)  # never leave a partial folder where the analysis looks
    progress.finish(p, time.monotonic() - t0)
    return interrupted


def point_log(logs: Path, point_id: str) -> Path:
    """Where a point's processes write (its failure's reason is a line of it)."""
    return logs / f"{point_id}.log"


def _stop_cleanly(runner: PointRunner) -> None:
    """Ctrl-C during a point: ask it to stop, wait for it (a second Ctrl-C kills it)."""
    try:
        runner.stop()
        deadline = time.monotonic() + STOP_WAIT_S
        while runner.wait(0.5) is None:
            if time.monotonic() > deadline:
                runner.kill()
                break
    except KeyboardInterrupt:
        runner.kill()
    except (ProcessLookupError, IndexError):
        pass


def knee_bound(env: Mapping[str, str]) -> float:
    """The open-model knee's intended-start p99 bound in ms: KNEE_P99_MS, else core's default.
    The analysis reads no environment: the runner passes it on as --knee-p99-ms."""
    try:
        return bottleneck.knee_p99_ms(env.get("KNEE_P99_MS", ""))
    except ValueError as e:
        raise UsageError(f"KNEE_P99_MS: {e}") from None


def report_command(
    folder: Path, out: Path | None = None, title: str | None = None, knee_p99_ms: float | None = None
) -> list[str]:
    """`swarmbench report FOLDER -o OUT` (default: the sweep's report/ folder), with
    `--knee-p99-ms` for open-model runs (None: the analysis' default)."""
    out = out or folder / REPORT_DIR
    title = title or f"Swarmbench sweep {folder.name}"
    return [*cmdline.PROGRAM, *cmdline.report([folder], out, title=title, knee_p99_ms=knee_p99_ms)]


def make_report(
    folder: Path, out: Path | None = None, title: str | None = None, knee_p99_ms: float | None = None
) -> int:
    """Run report_command(...); 0 when the report was written."""
    cmd = report_command(folder, out, title, knee_p99_ms)
    print(f"swarmbench: swarmbench {' '.join(cmd[3:])}", file=sys.stderr, flush=True)
    code = subprocess.run(cmd, cwd=find_checkout()).returncode
    if code != 0:
        print(f"swarmbench: the report failed (exit {code}); rerun: {' '.join(cmd)}", file=sys.stderr)
    return code
