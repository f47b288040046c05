"""pytest's fixtures and hooks, and the Hypothesis profiles: the real Go target on 127.0.0.1, Docker
availability, a `docker` that proves it was never asked, `python -m analysis` in this process.

Nothing here is mocked: tests drive the real albums service, real Locust runs and (for the
`docker` tests) the real compose stack. The helpers these fixtures are built from, and every other
helper a test imports, live in modules beside the tests (harness.py, runs.py, make_runs.py, ...):
a test never imports from conftest.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from harness import IN_CI, ROOT, CliResult, DockerShim, Target, analysis_in_process, missing
from hypothesis import settings
from pgserver import PgServer, PostgresMissing, pg_server

# The property tests (@given) draw their inputs. In CI the draws are derandomized, so a run is
# reproducible from the commit alone (a failure there fails the same way on a developer's machine),
# and no example database is kept (CI starts from a fresh clone). Elsewhere Hypothesis explores
# afresh on every run and replays the failures it saved under .hypothesis/ first. No deadline on an
# example: the suite runs the property tests at idle CPU priority (`background`, tests/suite), where
# one example may wait seconds for a core, and a test's speed is a bench's question, not a test's.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if IN_CI else "dev")


@pytest.fixture(scope="session")
def albums_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The target built from source once per session (CI has Go; the target is part of the repo)."""
    out = tmp_path_factory.mktemp("bin") / "albums"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=ROOT / "target", check=True)
    return out


@pytest.fixture
def two_hosts(albums_binary: Path) -> Iterator[tuple[Target, Target]]:
    """Two albums services standing in for two deploys: a fast one (2 ms) and a slow one (12 ms)."""
    fast, slow = Target(albums_binary, ALBUMS_DELAY="2ms"), Target(albums_binary, ALBUMS_DELAY="12ms")
    yield fast, slow
    fast.stop()
    slow.stop()


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
    if not ok:
        missing(
            "no Docker engine with compose is available (run ../shared/offline-docker/setup; "
            "these tests are mandatory in CI)"
        )


@pytest.fixture
def staging_net(docker_compose):
    """A Docker network for 'staging hosts' the test starts on it (tests/staging_hosts.py)."""
    from staging_hosts import staging_network

    yield from staging_network()


@pytest.fixture
def docker_shim(tmp_path: Path) -> DockerShim:
    shim = DockerShim(tmp_path / "docker-shim")
    env = {**os.environ, "PATH": shim.path}
    probe = subprocess.run(["docker", "version"], env=env, capture_output=True, timeout=10)
    assert probe.returncode == 1 and shim.calls() == ["version"], "the shim is not the docker on PATH"
    shim.log.unlink()
    return shim


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer]:
    """A real PostgreSQL server for the session (tests/pgserver.py), stopped at its end; no server
    binaries: skipped here, a failure in CI (.ci/run installs Debian's postgresql)."""
    with ExitStack() as stack:
        try:
            server = stack.enter_context(pg_server())
        except PostgresMissing as e:
            missing(f"the PostgreSQL history store cannot be tested: {e}")
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def history_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty history store of each engine: a SQLite path (not yet created) or the URL of a
    new database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "results" / "history.sqlite")
    server: PgServer = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture
def analysis_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """`python -m analysis ARGS` in the pytest process (harness.analysis_in_process)."""
    return functools.partial(analysis_in_process, capsys)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: tests/suite runs `-m docker` on its own
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the Docker engine is a `docker` test, marked or not; an `alone` test is a
    `quiet` one (tests/suite runs it after the other quiet tests)."""
    for item in items:
        if "docker_compose" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.docker)
        if item.get_closest_marker("alone") and not item.get_closest_marker("quiet"):
            item.add_marker(pytest.mark.quiet)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Locust must never be imported into the pytest process: its gevent monkey-patching breaks
    subprocess for every later test, far from the import that did it. Tests import swarmbench.core
    (stdlib only) and the plugin's Locust-free modules, and run Locust in subprocesses."""
    if "locust" in sys.modules:
        raise pytest.UsageError(
            "a test module imported locust into the pytest process; import swarmbench.core instead"
        )
