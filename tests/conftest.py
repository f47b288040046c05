"""Shared fixtures: the real Go target on 127.0.0.1, real Locust processes, Docker availability.

Nothing here is mocked: tests drive the real albums service, real Locust runs and (for the
`docker` tests) the real compose stack.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmbench.runner.points import free_port
from swarmbench.runner.points import wait_http_or_raise as wait_http

ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILES = ROOT / "locustfiles"

IN_CI = bool(os.environ.get("CI"))

__all__ = ["free_port", "wait_http"]  # re-exported for the test modules


@pytest.fixture(scope="session")
def albums_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The target built from source once per session (CI has Go; the target is part of the repo)."""
    out = tmp_path_factory.mktemp("bin") / "albums"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=ROOT / "target", check=True)
    return out


class Target:
    def __init__(self, binary: Path, **env: str) -> None:
        self.port = free_port()
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


@pytest.fixture
def albums_target(albums_binary: Path) -> Iterator[Target]:
    """A fresh albums service on a free loopback port (fresh counters for every test)."""
    t = Target(albums_binary)
    yield t
    t.stop()


@pytest.fixture(scope="session")
def docker_compose() -> None:
    """Docker end-to-end tests run wherever an engine is up, and MUST run in CI (never skip)."""
    ok = shutil.which("docker") is not None and (
        subprocess.run(["docker", "info"], capture_output=True).returncode == 0
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    )
    if ok:
        return
    if IN_CI:
        pytest.fail(
            "CI is set but no Docker engine with compose is available (run ../shared/offline-docker/setup)"
        )
    pytest.skip("no Docker engine (these tests are mandatory in CI)")


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


@pytest.fixture
def staging_net(docker_compose):
    """A Docker network for 'staging hosts' the test starts on it (tests/_staging.py)."""
    from _staging import staging_network

    yield from staging_network()


@pytest.fixture
def docker_shim(tmp_path: Path) -> DockerShim:
    shim = DockerShim(tmp_path / "docker-shim")
    env = {**os.environ, "PATH": shim.path}
    probe = subprocess.run(["docker", "version"], env=env, capture_output=True, timeout=10)
    assert probe.returncode == 1 and shim.calls() == ["version"], "the shim is not the docker on PATH"
    shim.log.unlink()
    return shim


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


def run_locust(
    *args: str, timeout: float = 90, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run Locust from the repo root (so locust.conf applies), bounded in time."""
    return subprocess.run(
        locust_cmd(*args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


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


@dataclass(frozen=True)
class CliResult:
    """What `python -m analysis ARGS` would have reported: exit code, stdout, stderr."""

    returncode: int
    stdout: str
    stderr: str


# Python's default warning filters hide these outside __main__: a subprocess would print none.
_HIDDEN_BY_DEFAULT = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


@pytest.fixture
def analysis_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """`python -m analysis ARGS` in the pytest process: swarmbench.cli.analysis_main (the function
    analysis/__main__.py calls), its exit code (returned, or SystemExit's) and what it printed. A
    warning from any other code that a subprocess would print goes to its stderr too, so "exactly
    one line on stderr" means the same as in a subprocess. An exception main lets escape fails the
    test, as a traceback would."""
    from swarmbench.cli import analysis_main as main

    def run(*args: str | Path) -> CliResult:
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

    return run


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: tests/suite runs `-m docker` on its own
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the Docker engine is a `docker` test, marked or not."""
    for item in items:
        if "docker_compose" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.docker)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Locust must never be imported into the pytest process: its gevent monkey-patching breaks
    subprocess for every later test, far from the import that did it. Tests import swarmbench.core
    (stdlib only) and the plugin's Locust-free modules, and run Locust in subprocesses."""
    if "locust" in sys.modules:
        raise pytest.UsageError(
            "a test module imported locust into the pytest process; import swarmbench.core instead"
        )
