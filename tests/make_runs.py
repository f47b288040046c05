"""Running the real stacks from tests: `make` targets, a compose project and results folder of the
test's own (always torn down), the swarm the engine is in, and reading the target's own counts from
inside a stack's network."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

from harness import ROOT, swarmbench

METRICS_SCRIPT = (
    "import urllib.request as u; print(u.urlopen('http://target:8080/metrics', timeout=5).read().decode())"
)
"""Python for a container on the stack's network (the Locust image has it): the target's /metrics."""

SWARM_LOAD = {
    "LOCUST_USERS": "8",
    "LOCUST_SPAWN_RATE": "8",
    "LOCUST_WAIT_TIME": "constant 0.05",
    "LOCUST_USER_CLASSES": "AlbumsFastHttpUser",
}
"""A light, paced load for the swarm tests: the counts, not the throughput, are what they check."""

_OURS: set[str] = set()
"""Compose projects compose_env named: the only ones torn_down takes down."""


def compose_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A short headless run: 1 worker, 10 users, 6 s; nothing inherited from the caller's LOCUST_*,
    SWARMBENCH_* or COMPOSE_* settings, so other engineers' stacks and settings never interfere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "SWARMBENCH_", "COMPOSE_"))}
    project = f"sbh5-{uuid.uuid4().hex[:8]}"
    _OURS.add(project)
    env.update(
        COMPOSE_PROJECT_NAME=project,
        SWARMBENCH_RESULTS=str(tmp_path / "results"),
        WORKERS="1",
        LOCUST_USERS="10",
        LOCUST_SPAWN_RATE="10",
        LOCUST_RUN_TIME="6s",
        LOCUST_WAIT_TIME="constant 0.05",
    )
    env.update(extra)
    return env


def compose_down(project: str, timeout_s: int = 5) -> None:
    """Take compose project PROJECT down (containers, network), whatever state it is in. Without a
    `docker` there is no stack to take down (the tests that stop before Docker run without one)."""
    if shutil.which("docker") is None:
        return
    subprocess.run(
        ["docker", "compose", "-p", project, "down", "--remove-orphans", "-t", str(timeout_s)],
        capture_output=True,
        timeout=120,
    )


@contextlib.contextmanager
def torn_down(env: dict[str, str] | None) -> Iterator[None]:
    """The compose project ENV names taken down after the block, whatever happened (a command killed
    by its timeout leaves its stack up). Only a project compose_env named: a name inherited from the
    caller's environment may be someone's own stack."""
    try:
        yield
    finally:
        if (project := (env or {}).get("COMPOSE_PROJECT_NAME")) in _OURS:
            compose_down(project)


def make(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    """`make ARGS` in the checkout, bounded in time, its compose project torn down after (torn_down).
    ENV, when given, is the command's whole environment: compose_env's, or `{**os.environ, ...}` for a
    command that sees the test run's own."""
    with torn_down(env):
        return subprocess.run(
            ["make", "--no-print-directory", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def run_on_stack(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    """`python -m swarmbench ARGS` on the stack of compose_env's ENV: the runner itself, not make
    (make turns every failure into its own exit code 2); the project torn down after (torn_down)."""
    with torn_down(env):
        return swarmbench(*args, env=env, timeout=timeout)


def swarm_state() -> str:
    """The engine's swarm state (`inactive` when it is in none)."""
    out = subprocess.run(
        ["docker", "info", "--format", "{{.Swarm.LocalNodeState}}"], capture_output=True, text=True
    )
    return out.stdout.strip()


def stacks() -> list[str]:
    """The stacks deployed on the engine's swarm."""
    return subprocess.run(
        ["docker", "stack", "ls", "--format", "{{.Name}}"], capture_output=True, text=True
    ).stdout.split()
