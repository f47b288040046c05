"""Helpers of the run-integrity tests (test_run_integrity*.py, test_run_endings.py): Locust processes
writing a log, a local master with its workers, waiting for what they print, the exact-count check,
the web UI's HTTP API."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import ROOT, Target, free_port, locust_cmd
from runs import manifest, reap, stats, total

FAST = ["--wait-time", "constant 0.05", "-u", "6", "-r", "6", "AlbumsFastHttpUser"]
SPAWNED = ("All users spawned", "Spawning is complete")
"""What a master logs once its users are spawned: Locust logs the second ("... and report waittime
is expired, but not all reports received from workers") when its workers' reports come late, on a
busy machine (seen in CI: a test waiting for the first alone waited out its timeout)."""


def logged(text: str | tuple[str, ...], log: str) -> bool:
    """Whether LOG holds TEXT (one of them, for a tuple such as SPAWNED)."""
    return any(t in log for t in ((text,) if isinstance(text, str) else text))


def spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        locust_cmd(*args), cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def wait_for(log: Path, text: str | tuple[str, ...], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not logged(text, log.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{text!r} never appeared in {log}:\n" + log.read_text()[-2000:]
        time.sleep(0.2)


def assert_exact(run_dir: Path, served: int) -> int:
    n = total(stats(run_dir))
    assert n > 50, n
    assert n == manifest(run_dir)["totals"]["requests"] == served, f"CSV {n} vs target {served}"
    return n


def post(url: str, form: dict | None = None) -> dict:
    data = urllib.parse.urlencode(form or {}).encode()
    with urllib.request.urlopen(url, data=data, timeout=10) as r:
        return json.loads(r.read())


def ui_rounds(base: str, workers: int, served, rounds: int = 2, reset: bool = False) -> list[int]:
    """Start -> ~4 s -> Stop, ROUNDS times through the UI's HTTP API; the target's count after each.
    RESET: the last round resets the stats half-way."""
    counts = []
    for i in range(rounds):
        deadline = time.monotonic() + 60
        while True:  # after a Stop, workers are back only after --stop-timeout
            with urllib.request.urlopen(base + "/stats/requests", timeout=5) as r:
                if json.loads(r.read()).get("worker_count") == workers:
                    break
            assert time.monotonic() < deadline, "the workers never came back to the UI"
            time.sleep(0.5)
        form = {"user_count": 4, "spawn_rate": 4, "user_classes": "AlbumsFastHttpUser"}
        assert post(base + "/swarm", form)["success"] is True
        if reset and i == rounds - 1:
            time.sleep(4)  # past a worker's first stats report (every 3 s)
            urllib.request.urlopen(base + "/stats/reset", data=b"", timeout=10).close()
        time.sleep(4)
        assert post(base + "/stop")["success"] is True
        counts.append(served())
    return counts


@contextmanager
def distributed(target: Target, results: Path, tmp: Path, workers: int, *extra: str) -> Iterator[dict]:
    """A headless master + WORKERS local workers; yields their processes; never leaves any behind."""
    port = str(free_port())
    master = spawn(
        ["--master", "--master-bind-port", port, "--expect-workers", str(workers), "--headless",
         "-H", target.url, "--results-dir", str(results), *FAST, *extra], tmp / "master.log",
    )  # fmt: skip
    procs = {"master": master}
    for i in range(workers):
        procs[f"w{i}"] = spawn(["--worker", "--master-port", port], tmp / f"w{i}.log")
    try:
        yield procs
    finally:
        reap(procs.values())
