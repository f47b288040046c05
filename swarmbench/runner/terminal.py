"""What a headless run shows in the terminal: one progress line while it goes, the containers' logs
kept in a file (and shown with --verbose), their last lines when the run fails, and the run's
summary as the last thing printed.

    progress   the stack starting, then the master's live status (core/live.py: the plugin writes
               it into the run folder every 2 s; this runner reads it through the bind-mounted
               results folder): elapsed/total, users, workers, req/s, failures, the exact p95 so
               far. On a terminal one line, rewritten in place every POLL_S; otherwise (a CI log,
               a pipe) a plain line when the phase changes and every PLAIN_EVERY_S.
    logs       `docker compose up`'s and the containers' output go to a file in results/.logs/
               while the run goes, then into the run folder as swarmbench.log (core/folder.py
               RUNNER_LOG); with --verbose (SWARMBENCH_VERBOSE=1) they are printed as well, above
               the progress line. A run without a folder keeps its log in results/.logs/.
    failure    an exit code that is not a measurement (core/exits.py MEASURED) or no run folder:
               the log's last TAIL_LINES lines, and where the whole log is.
    summary    core/answer.py's reading of the run folder, the same one the run page opens with:
               exact p50/p95/p99/max and requests/failures per name, the status and exit code, the
               verdict, the thresholds, the warnings, the run page's path. Last, so a CI log ends
               with the answer.

Standard library only (the runner's rule). Output goes to stdout; stderr keeps the runner's errors
and warnings.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from swarmbench.core import exits, salvage
from swarmbench.core.answer import read_answer, summary_text
from swarmbench.core.folder import LIVE_JSON, LOGS_DIR, MANIFEST, REPORT_HTML, RUNNER_LOG
from swarmbench.core.live import LiveStatus, read_live
from swarmbench.runner.settings import display, flag

VERBOSE_ENV = "SWARMBENCH_VERBOSE"
"""Set to 1 for --verbose (what `make headless SWARMBENCH_VERBOSE=1` passes)."""

POLL_S = 1.0
"""How often the progress line reads the live status and is redrawn on a terminal."""

PLAIN_EVERY_S = 10.0
"""Without a terminal (CI logs, a pipe): a progress line this often while the test runs, so a 30 s run
logs 3 of them, not 30."""

TAIL_LINES = 40
"""Log lines printed when a run fails: enough for Locust's error and the traceback above it."""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""Terminal control sequences (compose writes some even with --no-color): kept in the log file,
left out of the lines printed from it."""

LIVE_SLACK_S = 5.0
"""A live status older than the runner's start by this much belongs to another (earlier) run."""


def verbose(flag_value: bool | None, env: Mapping[str, str]) -> bool:
    """--verbose, else SWARMBENCH_VERBOSE (1, true, yes: on)."""
    return bool(flag_value) or flag(env, VERBOSE_ENV)


class Console:
    """The terminal of one headless run: use as a context manager around the run, then finish()."""

    def __init__(self, results: Path, verbose: bool = False, out: IO[str] | None = None) -> None:
        self.out = out or sys.stdout
        self.tty = self.out.isatty()
        self.results, self.verbose = results, verbose
        self.started = time.time()
        self.before = run_folders(results)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.log_path = results / LOGS_DIR / f"headless-{stamp}-{os.getpid()}.log"
        self.live_path: Path | None = None  # the run's live status, once found
        self.seen_live = False
        self._log: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._shown = ""  # the progress line on screen now (a terminal), "" none
        self._phase, self._phase_t0 = "starting", time.monotonic()
        self._plain_at = 0.0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ticker: threading.Thread | None = None

    # --- the run's life ------------------------------------------------------------------------

    def __enter__(self) -> Console:
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 -- closed in __exit__
        except OSError:  # a results folder the runner cannot write: the log goes to a temporary one
            self.log_path = Path(tempfile.mkdtemp(prefix="swarmbench-")) / self.log_path.name
            self._log = open(self.log_path, "ab")  # noqa: SIM115
        self._ticker = threading.Thread(target=self._tick, name="swarmbench-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for t in (self._ticker, *self._threads):
            if t is not None:
                t.join(timeout=5)
        with self._lock:
            self._clear()
            self._shown = ""
            if self._log is not None:
                self._log.close()
                self._log = None

    def phase(self, text: str) -> None:
        """What the run is doing before (or after) its test: `building images and starting the stack`."""
        with self._lock:
            self._phase, self._phase_t0 = text, time.monotonic()
            if not self.tty:
                self._write(f"swarmbench: {text}")

    def say(self, text: str, err: bool = False) -> None:
        """One line of the runner's own (stderr with ERR), above the progress line."""
        with self._lock:
            self._clear()
            print(text, file=sys.stderr if err else self.out, flush=True)
            self._draw()

    # --- commands whose output is the log ------------------------------------------------------

    def start(self, cmd: Sequence[str], env: Mapping[str, str], **kw: Any) -> subprocess.Popen:
        """CMD started with its stdout and stderr into the log (and shown with --verbose)."""
        proc = subprocess.Popen(
            list(cmd), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw
        )
        assert proc.stdout is not None
        pump = threading.Thread(target=self._pump, args=(proc.stdout,), name="swarmbench-log", daemon=True)
        pump.start()
        self._threads.append(pump)
        return proc

    def run(self, cmd: Sequence[str], env: Mapping[str, str]) -> int:
        """CMD run to its end, its output into the log; its exit code."""
        proc = self.start(cmd, env)
        code = proc.wait()
        self._threads[-1].join(timeout=5)
        return code

    @contextlib.contextmanager
    def sink(self) -> Iterator[IO[bytes]]:
        """A file to give processes as their stdout and stderr (local processes: the target, a
        master, its workers); what they write goes where a started command's output goes. Ours is
        closed on leaving, so the log ends when the last of them exits."""
        read_fd, write_fd = os.pipe()
        reader = os.fdopen(read_fd, "rb")
        pump = threading.Thread(target=self._pump, args=(reader,), name="swarmbench-log", daemon=True)
        pump.start()
        self._threads.append(pump)
        with os.fdopen(write_fd, "wb") as writer:
            yield writer

    def _pump(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            with self._lock:
                if self._log is not None:
                    self._log.write(raw)
                    self._log.flush()
                if self.verbose:
                    self._clear()
                    self._write(raw.decode("utf-8", "replace").rstrip("\r\n"))
                    self._draw()
        stream.close()

    # --- the progress line ---------------------------------------------------------------------

    def live(self) -> LiveStatus | None:
        """The run's live status now: found among the results folder's run folders (a new folder's
        file, written since this run started), then read from that one."""
        if self.live_path is None:
            found = [
                p for p in self.results.glob(f"*/{LIVE_JSON}") if _mtime(p) >= self.started - LIVE_SLACK_S
            ]
            if not found:
                return None
            self.live_path = max(found, key=_mtime)
        status = read_live(self.live_path)
        self.seen_live = self.seen_live or status is not None
        return status

    def progress(self, status: LiveStatus | None) -> str:
        if status is not None:
            return status.line()
        if self.seen_live:
            return "the test is over: saving the run and taking the stack down"
        return f"{self._phase} ({time.monotonic() - self._phase_t0:.0f} s)"

    def _tick(self) -> None:
        while not self._stop.wait(POLL_S):
            status = self.live()
            with self._lock:
                text = self.progress(status)
                if self.tty:
                    self._clear()
                    self._shown = text
                    self._draw()
                elif status is not None and time.monotonic() - self._plain_at >= PLAIN_EVERY_S:
                    self._plain_at = time.monotonic()
                    self._write(f"swarmbench: {text}")

    def _draw(self) -> None:
        if self.tty and self._shown:
            self.out.write(fit(self._shown, self.out))
            self.out.flush()

    def _clear(self) -> None:
        if self.tty and self._shown:
            self.out.write("\r\x1b[K")
            self.out.flush()

    def _write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    # --- the end -------------------------------------------------------------------------------

    def run_dirs(self) -> list[Path]:
        """The run folders this run made: each new run.json's, else the folder whose live status
        was seen (a run that died before writing run.json)."""
        made = sorted(p.parent for p in run_folders(self.results) - self.before)
        if not made and self.live_path is not None and self.live_path.parent.is_dir():
            made = [self.live_path.parent]
        return made

    def salvage(self, code: int, ended_at: float | None = None, oom_killed: bool = False) -> int:
        """After the master ended with CODE: a run folder it left without run.json (its live status
        there, no record: it died mid-run) gets its record from what survived (core/salvage.py),
        and the run's code becomes MASTER_LOST; CODE otherwise. ENDED_AT: when the master was seen
        ended (epoch seconds); OOM_KILLED: Docker said so."""
        if self.live_path is None:
            self.live()  # one last look: a master that died within the first poll
        run_dir = self.live_path.parent if self.live_path is not None else None
        if run_dir is None or not salvage.lost(run_dir):
            return code
        m = salvage.salvage(run_dir, code, ended_at=ended_at, oom_killed=oom_killed)
        if m is None or m.master_lost is None:
            return code
        self.say(
            f"swarmbench: {m.master_lost.reason}; the runner wrote the run's record from what survived "
            f"(status interrupted, exit code {exits.MASTER_LOST})",
            err=True,
        )
        return exits.MASTER_LOST

    def finish(self, code: int) -> None:
        """After the stack is down: the log's tail when the run failed, the log into the run folder,
        the folder's path, then the summary, last."""
        made = self.run_dirs()
        log = self._keep_log(made[-1] if made else None)
        if code not in exits.MEASURED or not made:
            self.tail(log, code, made)
        for run_dir in made:
            print(f"swarmbench: results in {display(run_dir)}/", file=self.out, flush=True)
        if made:
            run_dir = made[-1]
            text = summary_text(read_answer(run_dir), display(run_dir) / REPORT_HTML, exit_code=code)
            print("\n" + text, file=self.out, flush=True)

    def _keep_log(self, run_dir: Path | None) -> Path:
        """The log into RUN_DIR as swarmbench.log (same owner as the folder), else where it is."""
        if run_dir is None or not self.log_path.is_file():
            return self.log_path
        target = run_dir / RUNNER_LOG
        try:
            shutil.move(self.log_path, target)
        except OSError:
            return self.log_path
        with contextlib.suppress(OSError):
            self.log_path.parent.rmdir()  # results/.logs/ when nothing else is in it
        with contextlib.suppress(OSError):
            st = run_dir.stat()
            os.chown(target, st.st_uid, st.st_gid)
        return target

    def tail(self, log: Path, code: int, made: list[Path]) -> None:
        """The log's last lines, and where the rest is."""
        try:
            text = ANSI.sub("", log.read_bytes().decode("utf-8", "replace"))
            lines = text.splitlines()[-TAIL_LINES:]
        except OSError:
            lines = []
        why = f"exit code {code}" + ("" if made else ", no run folder written")
        if lines and not self.verbose:  # --verbose showed them already
            print(f"swarmbench: the run failed ({why}); the last lines of its log:", file=self.out)
            print("\n".join(f"  {line}" for line in lines), file=self.out)
            print(f"swarmbench: the whole log: {display(log)}", file=self.out, flush=True)
        else:
            print(f"swarmbench: the run failed ({why}); its log: {display(log)}", file=self.out, flush=True)


def run_folders(results: Path) -> set[Path]:
    """The run.json of every run folder under RESULTS (none when it is not there yet): the ones a run
    made are those not there before it."""
    return set(results.rglob(MANIFEST)) if results.exists() else set()


def fit(line: str, stream: IO[str] | None = None) -> str:
    """LINE cut to the width of STREAM's terminal (stderr's by default): a line that wraps cannot be
    rewritten in place."""
    try:
        columns = os.get_terminal_size((stream or sys.stderr).fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    return line[: columns - 1] if columns > 1 else line


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
