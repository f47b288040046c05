"""Drive `docker compose` for one headless run: up, wait for the master, always tear down."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from swarmbench.core import exits
from swarmbench.core.errors import UsageError
from swarmbench.core.folder import MANIFEST
from swarmbench.core.gitinfo import git_commit

from .paths import ROOT, display, results_dir
from .settings import Headless

COMPOSE_FILES = ("docker-compose.yml", "compose/headless.yml")
STAGING_FILE = "compose/staging.yml"
"""Leaves the bundled target out and requires LOCUST_HOST (`make staging`)."""
HEADERS_FILE = "compose/headers.yml"
"""Mounts SWARMBENCH_HEADERS_FILE read-only into master and workers (only when it is set)."""
NETWORK_FILE = "compose/network.yml"
"""Joins master and workers to SWARMBENCH_NETWORK (only when it is set)."""
LOG_DRAIN_S = 3.0
"""After the master exits, how long its last log lines may take to arrive before we stop following."""
CONTAINER_UID = 1000
"""The image's own non-root user; used when the caller is root (the container never runs as 0)."""


def compose_cmd(*args: str, files: tuple[str, ...] = COMPOSE_FILES) -> list[str]:
    cmd = ["docker", "compose", "--project-directory", str(ROOT)]
    for f in files:
        cmd += ["-f", str(ROOT / f)]
    return [*cmd, *args]


def compose_files(settings: Headless) -> tuple[str, ...]:
    """The base and headless files, plus each optional override the settings ask for."""
    files = COMPOSE_FILES
    if settings.staging:
        files += (STAGING_FILE,)
    if settings.headers_file:
        files += (HEADERS_FILE,)
    if settings.network:
        files += (NETWORK_FILE,)
    return files


def check_headers_readable(path: str, env: dict[str, str]) -> None:
    """The containers read the headers file as SWARMBENCH_UID: fail now, not inside Locust."""
    st = os.stat(path)
    uid, gid = int(env["SWARMBENCH_UID"]), int(env["SWARMBENCH_GID"])
    if st.st_uid == uid:
        ok = st.st_mode & stat.S_IRUSR
    elif st.st_gid == gid:
        ok = st.st_mode & stat.S_IRGRP
    else:
        ok = st.st_mode & stat.S_IROTH
    if not ok:
        raise UsageError(
            f"SWARMBENCH_HEADERS_FILE {path} is not readable by the containers' user (uid {uid}); "
            f"make it theirs and private: chown {uid} {path} && chmod 600 {path}"
        )


def check_docker() -> None:
    if shutil.which("docker") is None:
        raise UsageError("docker is not installed (headless runs need Docker with the compose plugin)")
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise UsageError("`docker compose` is not available: install Docker's compose v2 plugin")


def prepare_results(env: dict[str, str], results: Path) -> None:
    """Make results/ writable by the container's user and run the containers as the caller."""
    results.mkdir(parents=True, exist_ok=True)
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        # Root on the host: containers stay non-root (uid 1000), so let it write here.
        uid, gid = CONTAINER_UID, CONTAINER_UID
        results.chmod(0o777)
    env.setdefault("SWARMBENCH_UID", str(uid))
    env.setdefault("SWARMBENCH_GID", str(gid))


def run_folders(results: Path) -> set[Path]:
    return set(results.rglob(MANIFEST)) if results.exists() else set()


def run_up(settings: Headless) -> int:
    """`docker compose up --build --scale worker=N` in the foreground: the web UI on 127.0.0.1 until
    Ctrl-C (compose stops the stack on it). Validated settings only reach compose."""
    check_docker()
    env = dict(settings.environ)
    results = results_dir(env)
    env["SWARMBENCH_RESULTS"] = str(results)
    prepare_results(env, results)
    env.setdefault("LOCUST_GIT_COMMIT", git_commit(ROOT) or "")
    # The base file (the UI, not the headless override) and the optional overrides asked for.
    files = COMPOSE_FILES[:1] + tuple(f for f in compose_files(settings) if f not in COMPOSE_FILES)
    try:
        return _compose(env, files, "up", "--build", "--scale", f"worker={settings.workers}")
    except KeyboardInterrupt:
        return exits.INTERRUPTED_SIGINT


def run_headless(settings: Headless) -> int:
    """One headless run; returns Locust's exit code (the master's)."""
    check_docker()
    env = dict(settings.environ)
    results = results_dir(env)
    env["SWARMBENCH_RESULTS"] = str(results)
    prepare_results(env, results)
    if settings.headers_file:
        check_headers_readable(settings.headers_file, env)
    env.setdefault("LOCUST_GIT_COMMIT", git_commit(ROOT) or "")
    files = compose_files(settings)
    before = run_folders(results)
    try:
        code = _up_and_wait(settings.workers, env, files)
    finally:
        _compose(env, files, "down", "--remove-orphans", "--timeout", "10", quiet=True)
    for manifest in sorted(run_folders(results) - before):
        print(f"swarmbench: results in {display(manifest.parent)}/", flush=True)
    return code


def _up_and_wait(workers: int, env: dict[str, str], files: tuple[str, ...]) -> int:
    """Start detached, follow the master's and workers' logs, return the master's exit code.

    Not `up --exit-code-from master`: that stops every container as soon as ANY exits, and the
    workers exit first by design (they quit, then the master writes the results), so the master
    would be killed while writing them.
    """
    up = _compose(env, files, "up", "--build", "--detach", "--quiet-pull", "--scale", f"worker={workers}")
    if up != 0:
        return up
    logs = subprocess.Popen(
        compose_cmd("logs", "--follow", "--no-color", "master", "worker", files=files), env=env
    )
    try:
        code = _master_exit_code(env, files)
    except KeyboardInterrupt:
        # Ctrl-C: SIGTERM the master; Locust shuts down cleanly and saves what it has.
        print("swarmbench: interrupted; stopping the run", file=sys.stderr, flush=True)
        _compose(env, files, "stop", "--timeout", "30", "master", quiet=True)
        code = exits.INTERRUPTED_SIGINT
    # Workers normally quit before the master; after a master that failed to start they keep
    # retrying, so stop following once the master's last lines (the final stats) are out.
    try:
        logs.wait(timeout=LOG_DRAIN_S)
    except subprocess.TimeoutExpired:
        logs.terminate()
        logs.wait()
    return code


def _master_exit_code(env: dict[str, str], files: tuple[str, ...]) -> int:
    """Block until the master has stopped, then read its exit code."""
    subprocess.run(compose_cmd("wait", "master", files=files), env=env, capture_output=True)
    out = subprocess.run(
        compose_cmd("ps", "--all", "--format", "{{.ExitCode}}", "master", files=files),
        env=env,
        capture_output=True,
        text=True,
    )
    code = out.stdout.strip().splitlines()[:1]
    return int(code[0]) if code and code[0].isdigit() else 1


def _compose(env: dict[str, str], files: tuple[str, ...], *args: str, quiet: bool = False) -> int:
    out = subprocess.DEVNULL if quiet else None
    return subprocess.run(compose_cmd(*args, files=files), env=env, stdout=out, stderr=out).returncode
