"""The stack's watchdog: a compose run whose runner is gone is stopped, saved and taken down, never
left running unattended.

`swarmbench headless` starts the stack detached (`docker compose up --detach`) and follows it. A
runner killed outright (SIGKILL: the OOM killer, `kill -9`, a CI job cancelled hard) runs none of
its cleanup, so the master, its workers and the target would run on with nobody watching (forever
without a run time), and the next run of the same checkout would `up` into them. So, right after
`up`, the runner starts this watchdog in a session of its own, holding the write end of a pipe
whose read end is the watchdog's stdin:

- the runner ends normally (whatever the run's outcome): it has taken the stack down itself, writes
  one byte and closes the pipe; the watchdog exits at once and touches nothing (so it can never
  stop a later run's stack);
- the runner dies: the kernel closes the pipe, the watchdog reads end-of-file without a byte,
  stops the master as Ctrl-C does (SIGTERM: it collects its workers' final stats and saves the
  run as `interrupted`, compose.MASTER_STOP_TIMEOUT_S before Docker kills it), then takes the
  stack down.

A pipe, not polling the runner's pid: no pid reuse, no delay. Standard library only (the runner's
rule); what it does goes to the results' .logs folder, the runner's own log being gone with it.

    python -m swarmbench.runner.watchdog STOP_TIMEOUT_S LOG -- docker compose ... (the stack's
    compose command, without a subcommand; its environment names the project)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

DISMISS = b"x"
"""What a runner that ended normally writes to its watchdog: the stack is down, nothing to do."""


def start(compose: Sequence[str], env: Mapping[str, str], stop_timeout_s: int, log: Path) -> subprocess.Popen:
    """The watchdog of the stack COMPOSE (the command up to its subcommand) started in ENV, in a
    session of its own (a Ctrl-C or a kill of the runner's process group does not reach it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "swarmbench.runner.watchdog", str(stop_timeout_s), str(log), "--", *compose],
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def dismiss(watchdog: subprocess.Popen) -> None:
    """The runner ended normally and took the stack down: the watchdog exits without a thing."""
    stdin = watchdog.stdin
    assert stdin is not None
    try:
        stdin.write(DISMISS)
        stdin.close()
    except OSError:  # it is gone already
        pass
    try:
        watchdog.wait(timeout=5)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


def watch(stdin: IO[bytes], compose: Sequence[str], stop_timeout_s: int, log_path: Path) -> bool:
    """Block until the runner dismisses us (False: nothing done, nothing written) or dies (True: the
    master stopped and the stack taken down, each step appended to LOG_PATH)."""
    if stdin.read(1) == DISMISS:
        return False
    began = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a") as log:
        _stop_and_down(compose, stop_timeout_s, log, began)
    return True


def _stop_and_down(compose: Sequence[str], stop_timeout_s: int, log: IO[str], began: float) -> None:

    def step(*args: str) -> None:
        code = subprocess.run([*compose, *args], stdout=log, stderr=log).returncode
        log.write(f"swarmbench watchdog: {' '.join(args)}: exit {code} ({time.monotonic() - began:.1f} s)\n")
        log.flush()

    log.write("swarmbench watchdog: the runner is gone; stopping the master (it saves the run) "
              "and taking the stack down\n")  # fmt: skip
    log.flush()
    step("stop", "--timeout", str(stop_timeout_s), "master")
    step("down", "--remove-orphans", "--timeout", "10")


def main(argv: Sequence[str]) -> int:
    stop_timeout_s, log_path, sep, *compose = argv
    if sep != "--" or not compose:
        print("usage: python -m swarmbench.runner.watchdog STOP_TIMEOUT_S LOG -- COMPOSE...", file=sys.stderr)
        return 2
    watch(sys.stdin.buffer, compose, int(stop_timeout_s), Path(log_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
