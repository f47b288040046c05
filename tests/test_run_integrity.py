"""Fault injection: runs that go wrong are saved, marked and exit with the code CI needs.

Real processes only: the Go target, Locust masters/workers in subprocesses, and (marked `docker`)
the real compose stack driven by `python -m swarmbench headless` / `docker compose up`. Each case
asserts run.json's status, the exit code, a complete folder, and exact counts where the target
stayed up (the CSV total == the target's own count).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ROOT, Target, free_port, locust_cmd, wait_http
from make_runs import compose_env
from runs import assert_complete_folder, manifest, only_run, stats, target_album_requests, total

from swarmbench.core import exits
from swarmbench.core.manifest import RunManifest
from swarmbench.plugin.health import FAILED_RATIO, TARGET_DOWN_S, TARGET_HANG_S, Health

FAST = ["--wait-time", "constant 0.05", "-u", "6", "-r", "6", "AlbumsFastHttpUser"]
SPAWNED = "All users spawned"


# --- the rules, on their own (pure) ---------------------------------------------------------------


def test_health_status_rules():
    h = Health(expected=2)
    h.start({"a": "ready", "b": "ready"}, now=0.0)
    assert h.status(100, 0) == "complete"
    assert h.status(0, 0) == "failed" and h.status(100, int(100 * FAILED_RATIO)) == "failed"
    h.workers({"a": "running", "b": "missing"}, now=5.0)
    assert h.status(100, 0) == "degraded"
    assert [e["kind"] for e in h.events] == ["worker_joined", "worker_joined", "worker_missing"]
    assert h.timeline == [[0.0, 2], [5.0, 1]]
    h.signal(signal.SIGTERM, now=6.0)
    assert h.status(100, 0) == "interrupted" and h.interrupting_signal() == signal.SIGTERM


def test_requests_that_hang_are_a_target_that_stopped_answering():
    """A vanished target makes connections time out, not fail: nothing completes at all."""
    busy = Health()
    busy.start(None, now=0.0)
    busy.requests(300, 0, now=3.0)  # 100 requests/s
    busy.requests(300, 0, now=3.0 + TARGET_HANG_S - 1)
    assert not busy.problems, "a shorter silence is a late report, not an outage"
    busy.closing = True
    busy.requests(300, 0, now=3.0 + TARGET_HANG_S + 5)
    assert not busy.problems, "the stop phase is silent by design"
    busy.requests(300, 0, now=3.0 + TARGET_HANG_S, final=True)  # the final counts, as of the end
    assert busy.status(300, 0) == "degraded"
    assert "requests hang" in busy.events[-1]["detail"]
    slow = Health()  # one user thinking 10 s: silent by design, never flagged
    slow.start(None, now=0.0)
    slow.requests(3, 0, now=30.0)
    slow.requests(3, 0, now=30.0 + 4 * TARGET_HANG_S, final=True)
    assert slow.status(3, 0) == "complete"


def test_leaving_at_the_end_is_normal_but_quitting_early_is_not():
    h = Health(expected=2)
    h.start({"a": "running", "b": "running"}, now=0.0)
    h.workers({"a": "running"}, now=3.0)  # b quit mid-run
    h.closing = True
    h.workers({}, now=9.0)  # a quit as told at the end
    assert h.problems == ["worker b quit early", "1 of 2 load generators connected"]
    quits = [e["detail"] for e in h.events if e["kind"] == "worker_quit"]
    assert quits == ["worker b quit before the run's end"]
    assert h.timeline == [[0.0, 2], [3.0, 1]], "the normal end is not a drop in load generators"


def test_target_that_stops_answering_is_seen_and_its_return_too():
    h = Health()
    h.start(None, now=0.0)
    h.requests(100, 0, now=1.0)
    h.requests(140, 40, now=1.0 + TARGET_DOWN_S - 0.5)  # (total, failures): no success since 1.0
    assert not h.problems, "a shorter gap is not an outage"
    h.requests(180, 80, now=1.0 + TARGET_DOWN_S)
    h.requests(230, 80, now=1.0 + TARGET_DOWN_S + 2)
    assert [e["kind"] for e in h.events] == ["target_unreachable", "target_answering"]
    assert h.status(230, 80) == "degraded"


def test_a_stopped_stack_is_interrupted_not_degraded():
    h = Health(expected=2)
    h.start({"a": "running", "b": "running"}, now=0.0)
    h.worker_signal("a", signal.SIGTERM)
    assert h.status(10, 0) != "interrupted", "one worker stopped by hand: the run lost a generator"
    h.worker_signal("b", signal.SIGTERM)
    assert h.status(10, 0) == "interrupted" and h.interrupting_signal() == signal.SIGTERM


@pytest.mark.parametrize(
    ("status", "signum", "allow", "base", "code"),
    [
        ("interrupted", signal.SIGINT, False, 3, 130),
        ("interrupted", signal.SIGTERM, False, 0, 143),
        ("failed", None, False, 1, exits.RUN_FAILED),
        ("degraded", None, False, 3, exits.DEGRADED),
        ("degraded", None, True, 3, 3),
        ("degraded", None, True, 1, 1),
        ("complete", None, False, 1, 1),
    ],
)
def test_exit_code_precedence(status, signum, allow, base, code):
    assert exits.for_run(status, signum, allow, base) == code


def test_run_json_rejects_an_unknown_status(tmp_path):
    from swarmbench.core.errors import InputError

    with pytest.raises(InputError, match='"status" should be one of complete, interrupted'):
        RunManifest.from_json({"status": "fine"})


# --- real local processes -------------------------------------------------------------------------


def spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        locust_cmd(*args), cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def wait_for(log: Path, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{text!r} never appeared in {log}:\n" + log.read_text()[-2000:]
        time.sleep(0.2)


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
        for p in procs.values():
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def assert_exact(run_dir: Path, served: int) -> int:
    n = total(stats(run_dir))
    assert n > 50, n
    assert n == manifest(run_dir)["totals"]["requests"] == served, f"CSV {n} vs target {served}"
    return n


def test_worker_killed_mid_run_is_degraded_exit_4(albums_target, tmp_path):
    results = tmp_path / "results"
    with distributed(albums_target, results, tmp_path, 2, "-t", "12s") as procs:
        wait_for(tmp_path / "master.log", SPAWNED)
        time.sleep(2)
        procs["w0"].kill()
        code = procs["master"].wait(timeout=90)
    m = assert_complete_folder(only_run(results))
    assert (code, m["status"], m["exit_code"]) == (exits.DEGRADED, "degraded", exits.DEGRADED)
    joined = [e["detail"].split()[1] for e in m["events"] if e["kind"] == "worker_joined"]
    missing = [e for e in m["events"] if e["kind"] == "worker_missing"]
    assert len(joined) == 2 and len(missing) == 1 and missing[0]["detail"].split()[1] in joined
    assert m["workers_timeline"][0] == [0.0, 2] and m["workers_timeline"][-1][1] == 1
    # The killed worker's unreported requests are lost (never more counted than served).
    assert total(stats(only_run(results))) <= target_album_requests(albums_target.metrics())


def test_master_sigterm_is_interrupted_143_with_exact_counts(albums_target, tmp_path):
    results = tmp_path / "results"
    with distributed(albums_target, results, tmp_path, 2, "-t", "60s") as procs:
        wait_for(tmp_path / "master.log", SPAWNED)
        time.sleep(3)
        procs["master"].send_signal(signal.SIGTERM)
        code = procs["master"].wait(timeout=60)
    run_dir = only_run(results)
    m = assert_complete_folder(run_dir)
    assert (code, m["status"], m["exit_code"]) == (143, "interrupted", 143)
    assert any(e["kind"] == "signal_received" and "SIGTERM" in e["detail"] for e in m["events"])
    assert m["duration_s"] < 30, "the run ended at the signal, not at --run-time"
    assert_exact(run_dir, target_album_requests(albums_target.metrics()))


def test_standalone_ctrl_c_is_interrupted_130_with_exact_counts(albums_target, tmp_path):
    log = tmp_path / "locust.log"
    proc = spawn(
        ["--headless", "-H", albums_target.url, "-t", "60s", "--results-dir", str(tmp_path), *FAST], log
    )
    wait_for(log, SPAWNED)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    run_dir = only_run(tmp_path)
    m = assert_complete_folder(run_dir)
    assert (code, m["status"], m["exit_code"]) == (130, "interrupted", 130), log.read_text()[-2000:]
    assert_exact(run_dir, target_album_requests(albums_target.metrics()))


def test_target_stopped_mid_run_is_degraded_and_allow_degraded_keeps_locusts_code(albums_binary, tmp_path):
    target = Target(albums_binary)
    log = tmp_path / "locust.log"
    proc = spawn(
        ["--headless", "-H", target.url, "-t", "14s", "--results-dir", str(tmp_path), *FAST], log,
        env={"LOCUST_ALLOW_DEGRADED": "true"},
    )  # fmt: skip
    try:
        wait_for(log, SPAWNED)
        time.sleep(2)
        target.stop()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    m = assert_complete_folder(only_run(tmp_path))
    assert (m["status"], code, m["exit_code"]) == ("degraded", exits.REQUESTS_FAILED, exits.REQUESTS_FAILED)
    assert [e["kind"] for e in m["events"] if e["kind"].startswith("target")] == ["target_unreachable"]
    assert 0 < m["totals"]["failures"] < m["totals"]["requests"]


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


def check_ui_folders(runs: list[Path], counts: list[int]) -> None:
    assert len(runs) == len(counts), f"one folder per Start->Stop, got {runs}"
    previous = 0
    for run_dir, served in zip(runs, counts, strict=True):
        m = assert_complete_folder(run_dir)
        assert (m["started_from"], m["status"], m["users"]) == ("ui", "complete", 4)
        assert_exact(run_dir, served - previous)
        previous = served


def test_web_ui_start_stop_and_reset_write_new_exact_folders(albums_target, tmp_path):
    port, web = str(free_port()), free_port()
    results = tmp_path / "results"
    master = spawn(
        ["--master", "--master-bind-port", port, "--web-host", "127.0.0.1", "--web-port", str(web),
         "--class-picker", "-H", albums_target.url, "--wait-time", "constant 0.05", "--stop-timeout", "1",
         "--results-dir", str(results)], tmp_path / "master.log",
    )  # fmt: skip
    worker = spawn(["--worker", "--master-port", port], tmp_path / "w.log")
    try:
        wait_http(f"http://127.0.0.1:{web}/", timeout=60)
        served = lambda: target_album_requests(albums_target.metrics())  # noqa: E731
        counts = ui_rounds(f"http://127.0.0.1:{web}", 1, served, reset=True)
        master.send_signal(signal.SIGTERM)
        assert master.wait(timeout=60) == 143
    finally:
        for p in (master, worker):
            if p.poll() is None:
                p.kill()
            p.wait()
    runs = sorted(p.parent for p in results.rglob("run.json"))
    assert len(runs) == 3, f"one folder per Start->Stop and one more after the reset, got {runs}"
    check_ui_folders(runs[:1], counts[:1])
    # A reset splits the second test in two folders: nothing lost, nothing counted twice.
    before, after = (assert_complete_folder(r) for r in runs[1:])
    assert [e["kind"] for e in before["events"]][-2:] == ["stats_reset", "run_end"]
    assert (after["started_from"], after["status"]) == ("ui", "complete")
    parts = before["totals"]["requests"], after["totals"]["requests"]
    assert min(parts) > 0 and sum(parts) == counts[1] - counts[0], "the reset lost or doubled requests"


def test_web_ui_keeps_running_when_its_run_folder_cannot_be_created(albums_target, tmp_path):
    """`docker compose up` with a results/ the containers cannot write: Start still runs the test
    (the UI must not die with it), the log says the run is not saved and why."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    web = free_port()
    proc = spawn(
        ["--web-host", "127.0.0.1", "--web-port", str(web), "--class-picker", "-H", albums_target.url,
         "--wait-time", "constant 0.05", "--results-dir", str(blocker / "results")], tmp_path / "locust.log",
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{web}/", timeout=60)
        form = {"user_count": 3, "spawn_rate": 3, "run_time": "2s", "user_classes": "AlbumsFastHttpUser"}
        assert post(f"http://127.0.0.1:{web}/swarm", form)["success"] is True
        time.sleep(4)
        assert proc.poll() is None, "the web UI died with its run folder"
        with urllib.request.urlopen(f"http://127.0.0.1:{web}/stats/requests", timeout=10) as r:
            assert json.load(r)["stats"][-1]["num_requests"] > 0, "the test did not run"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    log = (tmp_path / "locust.log").read_text()
    assert "This web UI run is not saved: cannot create a folder under" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_web_ui_run_time_ends_a_standalone_run_and_saves_it(albums_target, tmp_path):
    """The UI's own run time (no Stop) ends the test; a standalone runner's UI saves it the same way."""
    web = free_port()
    proc = spawn(
        ["--web-host", "127.0.0.1", "--web-port", str(web), "--class-picker", "-H", albums_target.url,
         "--wait-time", "constant 0.05", "--results-dir", str(tmp_path)], tmp_path / "locust.log",
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{web}/", timeout=60)
        form = {"user_count": 3, "spawn_rate": 3, "run_time": "3s", "user_classes": "AlbumsFastHttpUser"}
        assert post(f"http://127.0.0.1:{web}/swarm", form)["success"] is True
        deadline = time.monotonic() + 30
        while not list(tmp_path.rglob("run.json")):
            assert time.monotonic() < deadline, "the UI run's time ran out but nothing was saved"
            time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    run_dir = only_run(tmp_path)
    m = assert_complete_folder(run_dir)
    assert (m["started_from"], m["mode"], m["status"], m["run_time"], m["users"]) == (
        "ui",
        "local",
        "complete",
        3,
        3,
    )
    assert_exact(run_dir, target_album_requests(albums_target.metrics()))


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


def wait_for_master(project: str, text: str = SPAWNED, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while True:
        ids = containers(project, "master")
        if ids:
            logs = subprocess.run(["docker", "logs", ids[0]], capture_output=True, text=True)
            if text in logs.stdout + logs.stderr:
                return
        assert time.monotonic() < deadline, f"the master never logged {text!r}"
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
        subprocess.run(["docker", "compose", "-p", env["COMPOSE_PROJECT_NAME"], "down", "--remove-orphans",
                        "--timeout", "2"], capture_output=True, timeout=120)  # fmt: skip


def headless_with_fault(env: dict[str, str], log: Path, fault: Callable[[str], None]) -> int:
    """A 20 s headless stack; 3 s after its users spawned, FAULT(project); the runner's exit code."""
    with headless(env, log) as proc:
        wait_for_master(env["COMPOSE_PROJECT_NAME"])
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
    assert m["workers_timeline"][-1][1] == 1


@pytest.mark.docker
def test_stack_ctrl_c_of_swarmbench_headless_exits_130_with_an_exact_interrupted_run(
    docker_compose, tmp_path
):
    env = stack_env(tmp_path, LOCUST_RUN_TIME="60s")
    started = time.monotonic()
    with headless(env, tmp_path / "run.log") as proc:
        wait_for_master(env["COMPOSE_PROJECT_NAME"])
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
    env = stack_env(tmp_path, LOCUST_WEB_PORT=str(web), LOCUST_STOP_TIMEOUT="1")
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
        subprocess.run(["docker", "compose", "-p", env["COMPOSE_PROJECT_NAME"], "down", "--remove-orphans",
                        "--timeout", "2"], capture_output=True, timeout=120)  # fmt: skip
    run_dir = only_run(results)
    m = assert_complete_folder(run_dir)
    assert (m["started_from"], m["status"], m["mode"], m["users"]) == ("ui", "complete", "distributed", 4)
    assert m["exit_code"] is None and m["workers_connected"] == 2
    assert_exact(run_dir, m["target"]["album_requests"])
