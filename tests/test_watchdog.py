"""runner/watchdog.py with real processes: a "runner" (a Python process that starts the watchdog)
killed with SIGKILL makes the watchdog stop the master and take the stack down; one that dismisses
it leaves it nothing to do. The stack's compose command is a shell that records its arguments (the
real stack: tests/test_run_integrity_stack.py, marked docker)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import ROOT

RUNNER = """
import sys, time
from pathlib import Path
from swarmbench.runner import watchdog
rec, log, end = sys.argv[1:]
keeper = watchdog.start(["sh", "-c", 'echo "$@" >> ' + rec, "sh"], {{"PATH": "/usr/bin:/bin",
    "PYTHONPATH": {root!r}}}, 7, Path(log))
print(keeper.pid, flush=True)
if end == "dismiss":
    watchdog.dismiss(keeper)
    sys.exit(0)
time.sleep(60)
"""


def runner(tmp_path: Path, end: str) -> tuple[subprocess.Popen, int]:
    code = RUNNER.format(root=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "rec"), str(tmp_path / "log"), end],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def gone(pid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie of ours is not there: the watchdog is in its own session, reaped by init.
        time.sleep(0.1)
    return False


def test_a_killed_runner_gets_its_master_stopped_and_its_stack_taken_down(tmp_path):
    proc, watchdog_pid = runner(tmp_path, "stay")
    assert not (tmp_path / "rec").exists()  # nothing while the runner lives
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert gone(watchdog_pid), "the watchdog outlived its work"
    assert (tmp_path / "rec").read_text().splitlines() == [
        "stop --timeout 7 master",
        "down --remove-orphans --timeout 10",
    ]
    log = (tmp_path / "log").read_text()
    assert "the runner is gone" in log and "stop --timeout 7 master: exit 0" in log


def test_a_runner_that_ends_normally_leaves_its_watchdog_nothing_to_do(tmp_path):
    proc, watchdog_pid = runner(tmp_path, "dismiss")
    assert proc.wait(timeout=20) == 0
    assert gone(watchdog_pid)
    assert not (tmp_path / "rec").exists() and not (tmp_path / "log").exists()
