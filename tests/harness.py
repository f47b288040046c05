"""What every test needs to drive the real parts: the checkout's paths, free ports, the real Go target
on 127.0.0.1, Locust and `python -m swarmbench` in processes of their own, Ctrl-C as a terminal sends
it, `python -m analysis` in the pytest process, and the rule that what CI must have is never skipped
there.

Helpers only: pytest's fixtures and hooks are in conftest.py, which builds its fixtures from these.
Nothing here is mocked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from swarmbench.runner.points import free_port
from swarmbench.runner.points import wait_http_or_raise as wait_http

# free_port and wait_http are the runner's own (swarmbench.runner.points), handed on as they are.
__all__ = [
    "FIXTURES",
    "IN_CI",
    "ROOT",
    "CliResult",
    "DockerShim",
    "Target",
    "analysis_in_process",
    "assert_one_line_error",
    "error_lines",
    "free_port",
    "interrupt_when",
    "interruptible",
    "locust_cmd",
    "missing",
    "one_error_line",
    "run_locust",
    "run_against",
    "run_module",
    "swarmbench",
    "wait_http",
]

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: commands run from here, so locust.conf and the Makefile apply."""
FIXTURES = ROOT / "tests" / "fixtures"

IN_CI = bool(os.environ.get("CI"))


def missing(reason: str) -> NoReturn:
    """What a test needs is not on this machine: a skip here, a failure in CI (CI must have it, and a
    skipped test there would pass on nothing)."""
    if IN_CI:
        pytest.fail(f"CI is set but {reason}")
    pytest.skip(reason)


# --- the target ---------------------------------------------------------------------------------------


class Target:
    """The albums service (BINARY, built by conftest's albums_binary) on a free loopback port (or
    PORT: runs of one host, as the history compares them), with ENV over this process's environment
    (ALBUMS_DELAY=..., ALBUMS_STORE=...); up when constructed."""

    def __init__(self, binary: Path, port: int | None = None, **env: str) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [str(binary)],
            env={**os.environ, "PORT": str(self.port), **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_http(self.url + "/healthz")

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
            return r.read().decode()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


# --- commands in processes of their own -------------------------------------------------------------


def locust_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "locust", *args]


def run_module(
    module: str, *args: str | Path, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 120
) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` (swarmbench, analysis) from the repo root, bounded in time. ENV, when
    given, is the whole environment of the command."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def swarmbench(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """`python -m swarmbench ARGS` from the repo root, bounded in time; ENV, when given, is the whole
    environment of the command (a test's own settings go over `os.environ` or compose_env)."""
    return run_module("swarmbench", *args, env=env, timeout=timeout)


def run_locust(
    *args: str, timeout: float = 90, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run Locust from the repo root (so locust.conf applies), bounded in time; ENV goes over this
    process's environment."""
    return subprocess.run(
        locust_cmd(*args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def run_against(
    binary: Path, folder: Path, run_id: str, load: list[str], port: int | None = None, **target_env: str
) -> Path:
    """One headless Locust run with LOAD (its options and user class) against a fresh target (a
    Target of BINARY on PORT with TARGET_ENV, stopped after), saved as FOLDER/RUN_ID: returned."""
    target = Target(binary, port=port, **target_env)
    try:
        res = run_locust(
            "--headless", "-H", target.url, *load, "--results-dir", str(folder), "--run-id", run_id
        )
    finally:
        target.stop()
    assert res.returncode == 0, res.stderr[-2000:]
    return folder / run_id


def interruptible(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    """CMD started (in the checkout, stderr piped) as from a terminal: SIGINT back at its default
    first. A suite started in the background of a non-interactive shell (nohup ... &, some CI
    runners) ignores SIGINT, every child inherits that, and Python then never raises
    KeyboardInterrupt: a Ctrl-C drill would test nothing."""
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def interrupt_when(proc: subprocess.Popen, ready: Callable[[], bool], what: str, timeout: float = 90) -> str:
    """Ctrl-C (SIGINT) to PROC a second after READY() holds (polled), as a person at the terminal
    would; its stderr once it exits. Fails the test naming WHAT when READY never holds or PROC
    exits first; PROC is killed if it outlives the wait."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"{what} never started")
            time.sleep(0.2)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=timeout)[1]
    finally:
        if proc.poll() is None:
            proc.kill()


# --- one-line errors ---------------------------------------------------------------------------------


def error_lines(text: str, prog: str) -> list[str]:
    """The `PROG: error: ...` lines of TEXT (what a command printed); a traceback in it fails the test."""
    assert "Traceback" not in text, text[-3000:]
    return [line for line in text.splitlines() if line.startswith(f"{prog}: error: ")]


def one_error_line(stderr: str, prog: str = "swarmbench") -> str:
    """The one `PROG: error:` line of STDERR, among what else was printed (make's own lines)."""
    lines = error_lines(stderr, prog)
    assert len(lines) == 1, stderr[-2000:]
    return lines[0]


def assert_one_line_error(
    result: CliResult | subprocess.CompletedProcess, *needles: str, prog: str = "analysis"
) -> str:
    """RESULT stopped on bad input as every command does: exit code 2 and one line on stderr, the
    `PROG: error:` line, with each of NEEDLES in it. Returns the line."""
    assert result.returncode == 2, result.stderr
    line = one_error_line(result.stderr, prog)
    assert result.stderr.strip().splitlines() == [line], result.stderr
    for needle in needles:
        assert needle in line, line
    return line


# --- Docker, or a stand-in that proves it was never asked ------------------------------------------


class DockerShim:
    """A `docker` first on PATH that only records each call (its arguments, one line) and fails:
    proof that a command stopped before any Docker work, without a clock."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.log = folder / "calls"
        script = folder / "docker"
        script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{self.log}'\nexit 1\n")
        script.chmod(0o755)
        self.path = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
        """PATH for a command run under the shim."""

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


# --- `python -m analysis` in this process -------------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    """What `python -m analysis ARGS` would have reported: exit code, stdout, stderr."""

    returncode: int
    stdout: str
    stderr: str


# Python's default warning filters hide these outside __main__: a subprocess would print none.
_HIDDEN_BY_DEFAULT = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def analysis_in_process(capsys: pytest.CaptureFixture[str], *args: str | Path) -> CliResult:
    """`python -m analysis ARGS` in the pytest process (conftest's analysis_cli fixture):
    swarmbench.cli.analysis_main (the function analysis/__main__.py calls), its exit code (returned,
    or SystemExit's) and what it printed. A warning from any other code that a subprocess would print
    goes to its stderr too, so "exactly one line on stderr" means the same as in a subprocess. An
    exception main lets escape fails the test, as a traceback would."""
    from swarmbench.cli import analysis_main as main  # the analysis layer: pandas, loaded when used

    capsys.readouterr()  # only what this command prints
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code
    out, err = capsys.readouterr()
    for w in caught:
        if not issubclass(w.category, _HIDDEN_BY_DEFAULT):
            err += warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
    assert isinstance(code, int), f"exit code {code!r}"
    return CliResult(code, out, err)
