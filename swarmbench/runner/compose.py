"""Drive `docker compose` for one headless run: up, wait for the master, always tear down."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from swarmbench.core import exits
from swarmbench.core.exits import UsageError
from swarmbench.core.folder import LOGS_DIR
from swarmbench.core.manifest import git_branch, git_commit
from swarmbench.runner import watchdog
from swarmbench.runner.settings import Headless, checkout, results_dir
from swarmbench.runner.terminal import Console

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
"""The image's own non-root user; the containers run as it when the caller is root."""
ALLOW_ROOT = "SWARMBENCH_ALLOW_ROOT"
"""Set to 1 to let SWARMBENCH_UID=0 (or SWARMBENCH_GID=0) run the containers as root: never by
default (a process that runs a locustfile should not own the host's root-owned bind mounts)."""
MASTER_STOP_TIMEOUT_S = 30
"""On Ctrl-C/SIGTERM: how long the master may take to collect its workers' final stats and write
the run folder before Docker kills it."""
WATCHDOG_LOG = "watchdog.log"
"""Under the results' LOGS_DIR: what a watchdog did for a runner that was killed (runner/watchdog.py)."""


class Interrupted(Exception):
    """Ctrl-C (SIGINT) or SIGTERM reached the runner; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, _frame: object) -> None:
    # Later signals are ignored: the stack must still be stopped and taken down.
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted (once) instead of killing the runner mid-way, so the
    master is stopped cleanly and the stack always comes down; the old handlers come back after."""
    old = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def compose_cmd(*args: str, files: tuple[str, ...] = COMPOSE_FILES) -> list[str]:
    root = checkout()  # the compose files are the checkout's (cli checked it names one)
    cmd = ["docker", "compose", "--project-directory", str(root)]
    for f in files:
        cmd += ["-f", str(root / f)]
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


def container_user(env: dict[str, str]) -> tuple[int, int]:
    """The containers' uid and gid: SWARMBENCH_UID/GID, else the caller's, else (a root caller)
    the image's own user. Root only with SWARMBENCH_ALLOW_ROOT=1, and then with a warning."""
    root_caller = os.getuid() == 0
    uid = _id(env, "SWARMBENCH_UID", CONTAINER_UID if root_caller else os.getuid())
    gid = _id(env, "SWARMBENCH_GID", CONTAINER_UID if root_caller else os.getgid())
    if 0 in (uid, gid):
        which = "SWARMBENCH_UID=0" if uid == 0 else "SWARMBENCH_GID=0"
        if env.get(ALLOW_ROOT) != "1":
            raise UsageError(
                f"{which} would run the containers as root; set {ALLOW_ROOT}=1 to allow it, or leave "
                f"it unset (the containers then run as {'uid 1000' if root_caller else 'you'})"
            )
        print(f"swarmbench: warning: {which} and {ALLOW_ROOT}=1: the containers run as root", file=sys.stderr)
    return uid, gid


def _id(env: dict[str, str], name: str, default: int) -> int:
    value = env.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise UsageError(f"{name}={value!r} is not a numeric user/group id")
    return int(value)


def prepare_results(env: dict[str, str], results: Path) -> None:
    """Make RESULTS writable by the containers' user, and by no one else.

    A root caller's containers run as uid 1000, which cannot write a root-owned folder: RESULTS
    (the folder itself, not what is in it) is given to that uid. Not chmod 0777, which let every
    local user plant or replace results. A results/ left world-writable by an older Swarmbench
    loses that bit. A non-root caller's containers run as the caller, who owns it already."""
    uid, gid = container_user(env)
    results.mkdir(parents=True, exist_ok=True)
    st = results.stat()
    try:
        if os.getuid() == 0 and uid != 0 and (st.st_uid, st.st_gid) != (uid, gid):
            os.chown(results, uid, gid)
        if st.st_mode & stat.S_IWOTH:
            results.chmod(stat.S_IMODE(st.st_mode) & ~stat.S_IWOTH)
    except OSError as e:
        raise UsageError(
            f"cannot make {results} writable by the containers' user (uid {uid}) only: {e.strerror or e}"
        ) from None
    env["SWARMBENCH_UID"], env["SWARMBENCH_GID"] = str(uid), str(gid)


def stack_env(settings: Headless, environ: dict[str, str] | None = None) -> tuple[dict[str, str], Path]:
    """The environment every engine's stack gets (compose, swarm): the results folder prepared
    for the containers' user, the headers file checked readable by it, the commit recorded."""
    env = dict(settings.environ if environ is None else environ)
    results = results_dir(env)
    env["SWARMBENCH_RESULTS"] = str(results)
    prepare_results(env, results)
    if settings.headers_file:
        check_headers_readable(settings.headers_file, env)
    root = checkout()
    env.setdefault("LOCUST_GIT_COMMIT", git_commit(root) or "")
    env.setdefault("LOCUST_GIT_BRANCH", git_branch(root) or "")
    return env, results


def run_up(settings: Headless) -> int:
    """`docker compose up --build --scale worker=N` in the foreground: the web UI on 127.0.0.1 until
    Ctrl-C (compose stops the stack on it). Validated settings only reach compose."""
    check_docker()
    env, _ = stack_env(settings)
    # The base file (the UI, not the headless override) and the optional overrides asked for.
    files = COMPOSE_FILES[:1] + tuple(f for f in compose_files(settings) if f not in COMPOSE_FILES)
    try:
        return _compose(env, files, "up", "--build", "--scale", f"worker={settings.workers}")
    except KeyboardInterrupt:
        return exits.INTERRUPTED_SIGINT


def run_headless(settings: Headless, verbose: bool = False) -> int:
    """One headless run; returns Locust's exit code (the master's). The terminal shows a progress
    line and, last, the run's summary; the containers' logs go to the run folder (runner/terminal.py),
    and to the terminal too when VERBOSE."""
    check_docker()
    env, results = stack_env(settings)
    files = compose_files(settings)
    refuse_a_running_master(env, files)
    console = Console(results, verbose)
    with interruptible(), console:
        # Before `up`: a runner killed while the stack starts leaves nothing running either.
        keeper = watchdog.start(
            compose_cmd(files=files), env, MASTER_STOP_TIMEOUT_S, results / LOGS_DIR / WATCHDOG_LOG
        )
        oom, ended_at = False, None
        try:
            code = _up_and_wait(settings.workers, env, files, console)
            ended_at = time.time()  # the test's clock when the master ended, for a lost master's record
            oom = code not in KNOWN_CODES and master_oom_killed(env, files)
        except Interrupted as e:  # before the master ran (building, starting): nothing to save
            code = exits.interrupted(e.signum)
        finally:
            for s in (signal.SIGINT, signal.SIGTERM):
                signal.signal(s, signal.SIG_IGN)  # the stack comes down whatever happens next
            console.phase("taking the stack down")
            _compose(env, files, "down", "--remove-orphans", "--timeout", "10", quiet=True)
            watchdog.dismiss(keeper)
    # a master that died left no record: the runner writes it from what survived
    code = console.salvage(code, ended_at=ended_at, oom_killed=oom)
    console.finish(code)
    return code


def refuse_a_running_master(env: dict[str, str], files: tuple[str, ...]) -> None:
    """UsageError, before anything starts, when this project's master is running: another run of
    this checkout (or of the same COMPOSE_PROJECT_NAME) is in progress, or one whose runner was
    killed is being saved by its watchdog. Its stack is never `up`-ed into, nor taken down."""
    running = subprocess.run(
        compose_cmd("ps", "--status", "running", "--quiet", "master", files=files),
        env=env, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    if running:
        project = env.get("COMPOSE_PROJECT_NAME") or checkout().name
        raise UsageError(
            f"a run of compose project {project!r} is still going (its master is running: another "
            f"run, or one whose runner was killed, being saved); wait for it, or stop it: "
            f"docker compose -p {project} down"
        )


KNOWN_CODES = frozenset(
    {exits.OK, exits.REQUESTS_FAILED, exits.CONFIG_ERROR, exits.THRESHOLDS_BROKEN, exits.DEGRADED}
    | {exits.RUN_FAILED, exits.INTERRUPTED_SIGINT, exits.INTERRUPTED_SIGTERM}
)
"""The master's own exit codes: any other (137: SIGKILL) is a master that died, asked of Docker."""


def master_oom_killed(env: dict[str, str], files: tuple[str, ...]) -> bool:
    """Docker's State.OOMKilled of the master's container (False when it cannot say): read before
    the stack comes down, which removes the container."""
    ids = subprocess.run(
        compose_cmd("ps", "--all", "-q", "master", files=files), env=env, capture_output=True, text=True
    ).stdout.split()
    if not ids:
        return False
    out = subprocess.run(
        ["docker", "inspect", "--format", "{{.State.OOMKilled}}", ids[0]], capture_output=True, text=True
    )
    return out.stdout.strip() == "true"


def _up_and_wait(workers: int, env: dict[str, str], files: tuple[str, ...], console: Console) -> int:
    """Start detached, follow the master's and workers' logs (into CONSOLE's log), return the
    master's exit code.

    Not `up --exit-code-from master`: that stops every container as soon as ANY exits, and the
    workers exit first by design (they quit, then the master writes the results), so the master
    would be killed while writing them.
    """
    console.phase("building the images (first run: minutes) and starting the stack")
    up = console.run(
        compose_cmd("up", "--build", "--detach", "--quiet-pull", "--scale", f"worker={workers}", files=files),
        env,
    )
    if up != 0:
        return up
    console.phase(f"waiting for the master and its {workers} worker{'s' if workers != 1 else ''}")
    logs = console.start(compose_cmd("logs", "--follow", "--no-color", "master", "worker", files=files), env)
    try:
        code = _master_exit_code(env, files)
    except Interrupted as e:
        # SIGTERM the master: it collects its workers' final stats, saves the run as
        # "interrupted", and exits; then we exit 130 (Ctrl-C) or 143 (SIGTERM) ourselves.
        console.say("swarmbench: interrupted; stopping the run and saving it", err=True)
        _compose(env, files, "stop", "--timeout", str(MASTER_STOP_TIMEOUT_S), "master", quiet=True)
        code = exits.interrupted(e.signum)
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
