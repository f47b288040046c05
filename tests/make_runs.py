"""Running the real compose stack from tests: `make` targets under a project name and results
folder of the test's own, always torn down."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

from conftest import ROOT


def compose_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A short headless run: 1 worker, 10 users, 6 s; nothing inherited from the caller's LOCUST_*,
    SWARMBENCH_* or COMPOSE_* settings, so other engineers' stacks and settings never interfere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "SWARMBENCH_", "COMPOSE_"))}
    env.update(
        COMPOSE_PROJECT_NAME=f"sbh5-{uuid.uuid4().hex[:8]}",
        SWARMBENCH_RESULTS=str(tmp_path / "results"),
        WORKERS="1",
        LOCUST_USERS="10",
        LOCUST_SPAWN_RATE="10",
        LOCUST_RUN_TIME="6s",
        LOCUST_WAIT_TIME="constant 0.05",
    )
    env.update(extra)
    return env


def make(target: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["make", "--no-print-directory", target],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        # `make` tears the stack down itself; this is for a run killed by the timeout.
        subprocess.run(
            ["docker", "compose", "-p", env["COMPOSE_PROJECT_NAME"], "down", "--remove-orphans", "-t", "5"],
            capture_output=True,
            timeout=60,
        )
