"""Fault injection on the real compose stack (marked `docker`): a worker killed, Ctrl-C of
`python -m swarmbench headless`, the target stopped, a web-UI Start->Stop; each run saved, marked,
exact where the target stayed up, and exiting with the code CI needs.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from harness import ROOT, free_port, wait_http
from integrity import SPAWNED, assert_exact, logged, ui_rounds
from make_runs import compose_down, compose_env
from runs import assert_complete_folder, only_run

from swarmbench.core import exits

# --- the real compose stack (docker; run under the shared lock) ----------------------------------


def stack_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A short headless stack of our own (make_runs.compose_env: its own project name and results
    folder, nothing inherited), with 2 workers and 8 FastHttpUser users."""
    return compose_env(
        tmp_path,
        WORKERS="2",
        LOCUST_USERS="8",
        LOCUST_SPAWN_RATE="8",
        LOCUST_USER_CLASSES="AlbumsFastHttpUser",
        **extra,
    )


def containers(project: str, service: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter", f"label=com.docker.compose.project={project}",
         "--filter", f"label=com.docker.compose.service={service}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.split()


def wait_for_master(
    project: str,
    proc: subprocess.Popen,
    log: Path,
    text: str | tuple[str, ...] = SPAWNED,
    timeout: float = 240,
) -> None:
    """Until the master's container logs TEXT. Fails at once, with the runner's own output, when
    `swarmbench headless` has already exited (a stack that never came up is not a slow one), and
    with the runner's output and the stack's containers when TEXT never comes."""
    deadline = time.monotonic() + timeout
    while True:
        ids = containers(project, "master")
        if ids:
            logs = subprocess.run(["docker", "logs", ids[0]], capture_output=True, text=True)
            if logged(text, logs.stdout + logs.stderr):
                return
        if proc.poll() is not None:
            pytest.fail(f"swarmbench headless exited {proc.returncode} before the master logged {text!r}:\n"
                        + log.read_text()[-3000:])  # fmt: skip
        if time.monotonic() >= deadline:
            ps = subprocess.run(
                ["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={project}",
                 "--format", "{{.Names}} {{.Status}}"], capture_output=True, text=True,
            ).stdout  # fmt: skip
            pytest.fail(f"the master never logged {text!r} in {timeout:.0f} s; containers:\n{ps}\n"
                        f"swarmbench headless so far:\n{log.read_text()[-3000:]}")  # fmt: skip
        time.sleep(0.5)


@contextmanager
def headless(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """`python -m swarmbench headless` in the background; the stack always comes down."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "swarmbench", "headless"], cwd=ROOT, env=env,
        stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        compose_down(env["COMPOSE_PROJECT_NAME"], timeout_s=2)


def headless_with_fault(env: dict[str, str], log: Path, fault: Callable[[str], None]) -> int:
    """A 20 s headless stack; 3 s after its users spawned, FAULT(project); the runner's exit code."""
    with headless(env, log) as proc:
        wait_for_master(env["COMPOSE_PROJECT_NAME"], proc, log)
        time.sleep(3)
        fault(env["COMPOSE_PROJECT_NAME"])
        return proc.wait(timeout=180)


@pytest.mark.docker
def test_stack_worker_killed_is_degraded_exit_4_naming_it(docker_compose, tmp_path):
    env = stack_env(tmp_path, LOCUST_RUN_TIME="20s")
    victim = ""

    def kill_a_worker(project: str) -> None:
        nonlocal victim
        victim = containers(project, "worker")[0]
        subprocess.run(["docker", "kill", victim], check=True, capture_output=True)

    code = headless_with_fault(env, tmp_path / "run.log", kill_a_worker)
    m = assert_complete_folder(only_run(tmp_path / "results"))
    assert (code, m["status"], m["exit_code"]) == (exits.DEGRADED, "degraded", exits.DEGRADED)
    # A worker's Locust id starts with its hostname: the container's short id.
    missing = [e["detail"] for e in m["events"] if e["kind"] == "worker_missing"]
    assert len(missing) == 1 and victim[:12] in missing[0], (victim, m["events"])
    assert m["workers_timeline"][-1]["connected"] == 1


@pytest.mark.docker
def test_stack_master_killed_leaves_the_runners_record_exit_6(docker_compose, tmp_path):
    """`docker kill` of the master (an OOM kill, a node lost): the runner writes the record from what
    survived (core/salvage.py), status interrupted with the reason, exit MASTER_LOST, never "older
    than run status". Written with the LOCAL=1 test (test_master_lost.py); not run there (docker)."""
    import json

    from swarmbench.core import folder

    env = stack_env(tmp_path, LOCUST_RUN_TIME="40s")
    log = tmp_path / "run.log"

    def kill_the_master(project: str) -> None:
        time.sleep(8)  # windows sealed: some exact counts to keep
        subprocess.run(["docker", "kill", containers(project, "master")[0]], check=True, capture_output=True)

    code = headless_with_fault(env, log, kill_the_master)
    [run_dir] = [p.parent for p in (tmp_path / "results").glob(f"*/{folder.MANIFEST}")]
    m = json.loads((run_dir / folder.MANIFEST).read_text())
    assert (code, m["status"], m["exit_code"]) == (exits.MASTER_LOST, "interrupted", exits.MASTER_LOST)
    assert m["master_lost"]["reason"].startswith("the master exited with 137 at ")
    assert m["master_lost"]["oom_killed"] is False and m["master_lost"]["sealed_windows"] > 0
    assert (run_dir / folder.REPORT_HTML).is_file() and (run_dir / folder.STATS_CSV).is_file()
    assert "older than run status" not in log.read_text()


@pytest.mark.docker
def test_stack_ctrl_c_of_swarmbench_headless_exits_130_with_an_exact_interrupted_run(
    docker_compose, tmp_path
):
    env = stack_env(tmp_path, LOCUST_RUN_TIME="60s")
    started = time.monotonic()
    with headless(env, tmp_path / "run.log") as proc:
        wait_for_master(env["COMPOSE_PROJECT_NAME"], proc, tmp_path / "run.log")
        time.sleep(4)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
    out = (tmp_path / "run.log").read_text()
    assert code == exits.INTERRUPTED_SIGINT, out[-3000:]
    run_dir = only_run(tmp_path / "results")
    m = assert_complete_folder(run_dir)
    assert (m["status"], m["exit_code"]) == (
        "interrupted",
        exits.INTERRUPTED_SIGTERM,
    )  # the master got SIGTERM
    assert "swarmbench: results in" in out and "interrupted; stopping the run" in out
    # The target stayed up: the master read its count when it wrote the folder.
    assert_exact(run_dir, m["target"]["album_requests"])
    assert time.monotonic() - started < 150 and m["duration_s"] < 40
    assert not containers(env["COMPOSE_PROJECT_NAME"], "master"), "the stack was left running"


@pytest.mark.docker
def test_stack_target_stopped_mid_run_is_degraded_exit_4(docker_compose, tmp_path):
    env = stack_env(tmp_path, LOCUST_RUN_TIME="20s")

    def stop_the_target(project: str) -> None:
        subprocess.run(
            ["docker", "stop", "-t", "1", *containers(project, "target")], check=True, capture_output=True
        )

    code = headless_with_fault(env, tmp_path / "run.log", stop_the_target)
    m = assert_complete_folder(only_run(tmp_path / "results"))
    assert (code, m["status"], m["exit_code"]) == (exits.DEGRADED, "degraded", exits.DEGRADED)
    down = [e["detail"] for e in m["events"] if e["kind"] == "target_unreachable"]
    assert down, m["events"]
    # Its requests either failed (connection refused, name unknown) or hung until the stop (a
    # vanished address times out): both are the target not answering.
    assert m["totals"]["failures"] > 0 or "requests hang" in down[0], (m["totals"], down)


@pytest.mark.docker
def test_stack_web_ui_start_stop_is_a_saved_exact_run(docker_compose, tmp_path):
    web = free_port()
    env = stack_env(
        tmp_path, LOCUST_WEB_PORT=str(web), SWARMBENCH_METRICS_PORT=str(free_port()), LOCUST_STOP_TIMEOUT="1"
    )
    results = tmp_path / "results"
    results.mkdir()
    from swarmbench.runner.compose import compose_cmd, prepare_results

    prepare_results(env, results)
    base = ["up", "--build", "--detach", "--quiet-pull", "--scale", "worker=2"]
    try:
        subprocess.run(compose_cmd(*base, files=("docker-compose.yml",)), env=env, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
        wait_http(f"http://127.0.0.1:{web}/", timeout=90)
        ui_rounds(f"http://127.0.0.1:{web}", 2, lambda: 0, rounds=1)
        # Stopping the stack stops the master (SIGTERM): it writes nothing more.
        subprocess.run(compose_cmd("stop", "--timeout", "30", files=("docker-compose.yml",)), env=env,
                       capture_output=True, timeout=120)  # fmt: skip
    finally:
        compose_down(env["COMPOSE_PROJECT_NAME"], timeout_s=2)
    run_dir = only_run(results)
    m = assert_complete_folder(run_dir)
    assert (m["started_from"], m["status"], m["mode"], m["users"]) == ("ui", "complete", "distributed", 4)
    assert m["exit_code"] is None and m["workers_connected"] == 2
    assert_exact(run_dir, m["target"]["album_requests"])


@pytest.mark.docker
def test_stack_runner_killed_is_saved_and_taken_down_by_its_watchdog_and_never_run_into(
    docker_compose, tmp_path
):
    """`swarmbench headless` killed outright (SIGKILL: no cleanup of its own runs): its watchdog
    (runner/watchdog.py) stops the master, which saves the run as interrupted, and takes the stack
    down; while that run went, a second run of the same compose project was refused, one line, and
    started nothing."""
    env = stack_env(tmp_path, LOCUST_RUN_TIME="120s")
    project, log = env["COMPOSE_PROJECT_NAME"], tmp_path / "run.log"
    with headless(env, log) as proc:
        wait_for_master(project, proc, log)
        second = subprocess.run(
            [sys.executable, "-m", "swarmbench", "headless"], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        lines = (second.stdout + second.stderr).strip().splitlines()
        assert second.returncode == 2 and len(lines) == 1, second.stdout + second.stderr
        assert project in lines[0] and "still going" in lines[0] and "Traceback" not in lines[0]
        assert containers(project, "master"), "the refused run touched the running one"
        time.sleep(2)
        killed = time.monotonic()
        proc.kill()
        proc.wait()
        while containers(project, "master") or containers(project, "target"):
            assert time.monotonic() - killed < 90, "the stack kept running after its runner was killed"
            time.sleep(1)
    m = assert_complete_folder(only_run(tmp_path / "results"))
    assert m["status"] == "interrupted" and m["duration_s"] < 60, (m["status"], m["duration_s"])
    watched = (tmp_path / "results" / ".logs" / "watchdog.log").read_text()
    assert "the runner is gone" in watched and "down --remove-orphans" in watched, watched


@pytest.mark.docker
def test_stack_worker_cut_off_for_10_s_and_back_is_degraded_exit_4_with_both_events(docker_compose, tmp_path):
    """A worker cut off from the master (and the target) for 10 s, then back (`docker network
    disconnect`/`connect`: a flaky link, a node partitioned): the run is saved degraded (exit 4),
    run.json says when the worker went missing and when it came back, and the requests it had in
    flight during the cut are in the record with their real (long) times, not dropped."""
    env = stack_env(tmp_path, LOCUST_RUN_TIME="25s")
    cut: dict[str, float] = {}

    def cut_a_worker_off(project: str) -> None:
        worker = containers(project, "worker")[0]
        network = f"{project}_default"
        subprocess.run(["docker", "network", "disconnect", network, worker], check=True, capture_output=True)
        time.sleep(10)
        subprocess.run(["docker", "network", "connect", network, worker], check=True, capture_output=True)
        cut["worker"] = worker

    code = headless_with_fault(env, tmp_path / "run.log", cut_a_worker_off)
    m = assert_complete_folder(only_run(tmp_path / "results"))
    assert (code, m["status"], m["exit_code"]) == (exits.DEGRADED, "degraded", exits.DEGRADED)
    kinds = [(e["kind"], e["detail"]) for e in m["events"]]
    short = cut["worker"][:12]
    assert any(k == "worker_missing" and short in d for k, d in kinds), kinds
    assert any(k == "worker_rejoined" and short in d for k, d in kinds), kinds
    assert [t["connected"] for t in m["workers_timeline"]][-2:] == [1, 2], m["workers_timeline"]
