"""End-to-end tests of the real compose stack: images built from this repo, real containers.

Marked `docker`: they run wherever an engine is up and fail (never skip) in CI without one.
Each test uses its own compose project name and a temporary results folder, and tears down.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import free_port, swarmbench, wait_http
from make_runs import METRICS_SCRIPT, compose_down, make
from runs import assert_complete_folder, assert_exact_journey, assert_summary_last, manifest, only_run

from swarmbench.core import folder
from swarmbench.runner.compose import COMPOSE_FILES, compose_cmd, prepare_results
from swarmbench.runner.terminal import VERBOSE_ENV

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_compose")]


class Stack:
    """One compose project: `compose(...)` runs a compose command with this project's env."""

    def __init__(self, name: str, results: Path, files: tuple[str, ...] = COMPOSE_FILES, **env: str) -> None:
        self.files = files
        self.env = {**os.environ, "COMPOSE_PROJECT_NAME": name, **env}
        prepare_results(self.env, results)
        self.env["SWARMBENCH_RESULTS"] = str(results)

    def compose(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            compose_cmd(*args, files=self.files), env=self.env, capture_output=True, text=True,
            timeout=timeout, check=check,
        )  # fmt: skip

    def down(self) -> None:
        self.compose("down", "--remove-orphans", "--volumes", "--timeout", "5", check=False)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    d = tmp_path / "results"
    d.mkdir()
    return d


@pytest.fixture
def stack_name(request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"sbtest-{request.node.name.lower().replace('_', '-')[:30]}-{os.getpid()}"
    yield name
    compose_down(name, timeout_s=2)  # whatever happened (a timeout included), no containers left behind


def test_headless_stack_two_workers_is_complete_and_exact(results, stack_name):
    """The issue's acceptance run: 2 workers, <= 30 s, counts checked against the target itself."""
    stack = Stack(
        stack_name, results, WORKERS="2", LOCUST_RUN_TIME="20s", LOCUST_USERS="20",
        LOCUST_SPAWN_RATE="20", LOCUST_WAIT_TIME="constant 0.1", LOCUST_USER_CLASSES="AlbumsFastHttpUser",
    )  # fmt: skip
    try:
        stack.compose("up", "--build", "--detach", "--quiet-pull", "--scale", "worker=2")
        stack.compose("wait", "master", timeout=120, check=False)
        code = stack.compose("ps", "--all", "--format", "{{.ExitCode}}", "master").stdout.strip()
        logs = stack.compose("logs", "--no-log-prefix", "master").stdout
        # The target is still up: ask it directly, from inside the compose network.
        served = stack.compose(
            "run", "--rm", "--no-deps", "--entrypoint", "python", "worker", "-c", METRICS_SCRIPT
        )
    finally:
        stack.down()
    assert code == "0", logs[-3000:]
    run_dir = only_run(results)
    assert run_dir.name.endswith("_AlbumsFastHttpUser_w2")
    m = assert_complete_folder(run_dir)
    assert m["workers_expected"] == 2 and m["workers_connected"] == 2
    assert (
        m["mode"] == "distributed" and m["host"] == "http://target:8080" and m["target"]["store"] == "rwmutex"
    )
    assert_exact_journey(run_dir, logs, served.stdout, more_than=1000)


def test_make_headless_runs_and_reports_its_folder(results, stack_name):
    """The terminal of a headless run (not a terminal here: a CI log): plain progress lines from the
    master's live status, the containers' logs in the run folder only, the summary last."""
    env = {**os.environ, "COMPOSE_PROJECT_NAME": stack_name, "SWARMBENCH_RESULTS": str(results)}
    res = make("headless", "WORKERS=1", "LOCUST_RUN_TIME=6s", "LOCUST_USERS=5", env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    run_dir = only_run(results)
    assert f"swarmbench: results in {run_dir}/" in res.stdout
    progress = r"^swarmbench: (spawning |stopping )?\d+/6 s · \d+ users · [01]/1 workers · [\d.]+ req/s"
    assert re.search(progress, res.stdout, re.M), res.stdout[-3000:]
    assert_summary_last(res.stdout, run_dir)
    log = (run_dir / folder.RUNNER_LOG).read_text()
    assert "master-1  |" in log and "worker-1  |" in log and "Response time percentiles" in log, log[-2000:]
    assert "master-1  |" not in res.stdout, "the containers' logs belong in the run folder's log"
    assert not (results / folder.LOGS_DIR).exists() and not (run_dir / folder.LIVE_JSON).exists()
    m = manifest(run_dir)
    assert m["user_classes"] == ["AlbumsHttpUser"], "the headless default user class"
    assert (m["users"], m["run_time"], m["workers_connected"]) == (5, 6, 1)
    leftovers = subprocess.run(
        ["docker", "ps", "-a", "-q", "--filter", f"label=com.docker.compose.project={stack_name}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert not leftovers, "make headless left containers behind"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"LOCUST_USERS": "abc"}, "swarmbench: error: LOCUST_USERS='abc' is not a whole number"),
        ({"WORKERS": "0"}, "swarmbench: error: WORKERS='0' must be at least 1"),
        ({"LOCUST_RUN_TIME": "soon"}, "swarmbench: error: LOCUST_RUN_TIME='soon' is not a duration"),
        ({"LOCUST_HOST": "target:8080"}, "swarmbench: error: LOCUST_HOST='target:8080' is not an http"),
    ],
)
def test_make_headless_rejects_bad_settings_before_starting(
    results, stack_name, docker_shim, settings, message
):
    env = {**os.environ, "COMPOSE_PROJECT_NAME": stack_name, "SWARMBENCH_RESULTS": str(results)}
    res = make("headless", env={**env, "PATH": docker_shim.path, **settings})
    assert res.returncode == 2  # make's code for a failed recipe (the CLI's own is 2 as well)
    assert message in res.stderr
    assert "Traceback" not in res.stderr
    assert docker_shim.calls() == [], "the check should not need Docker"
    assert not list(results.iterdir())


@pytest.mark.parametrize(
    ("settings", "message", "code"),
    [
        # --verbose (SWARMBENCH_VERBOSE=1): the containers' lines as they come, then where the log is
        ({"LOCUST_USER_CLASSES": "NoSuchUser", VERBOSE_ENV: "1"}, "Unknown User(s): NoSuchUser", 1),
        (
            # A closed port of the stack's own target (loopback names are refused before the stack).
            {"LOCUST_HOST": "http://target:9"},
            "swarmbench: error: host http://target:9 is unreachable",
            2,
        ),
    ],
)
def test_bad_configuration_inside_the_stack_stops_early(results, stack_name, settings, message, code):
    """No run folder: the runner prints the log's last lines (or, verbose, every line as it came),
    and keeps the log in results/.logs/."""
    env = {
        **os.environ,
        "COMPOSE_PROJECT_NAME": stack_name,
        "SWARMBENCH_RESULTS": str(results),
        "LOCUST_RUN_TIME": "30s",
        **settings,
    }
    started = time.monotonic()
    # The runner itself, not make: make turns every failure into its own exit code 2.
    res = swarmbench("headless", env=env, timeout=240)
    assert res.returncode == code, res.stdout[-2000:]
    assert message in res.stdout + res.stderr
    assert time.monotonic() - started < 120
    assert [p.name for p in results.iterdir()] == [folder.LOGS_DIR], "a run that never started left a folder"
    [log] = (results / folder.LOGS_DIR).iterdir()
    assert message in log.read_text()
    before_the_run = res.stdout.split("swarmbench: waiting for the master")[0]
    if settings.get(VERBOSE_ENV):
        assert "Started" in before_the_run, "verbose: compose's own lines as they came"
        assert res.stdout.rstrip().endswith(f"no run folder written); its log: {log}"), res.stdout[-2000:]
    else:
        assert "Started" not in before_the_run, res.stdout[-3000:]
        tail = res.stdout.split("; the last lines of its log:\n")[1]
        assert message in tail and tail.rstrip().endswith(f"swarmbench: the whole log: {log}"), tail


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def test_web_ui_shows_the_workers_and_runs_a_test(results, stack_name):
    port = free_port()
    stack = Stack(
        stack_name, results, files=("docker-compose.yml",), LOCUST_WEB_PORT=str(port),
        SWARMBENCH_METRICS_PORT=str(free_port()),
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        stack.compose("up", "--build", "--detach", "--quiet-pull", "--scale", "worker=2")
        wait_http(base + "/", timeout=90)
        deadline = time.monotonic() + 60
        while _get_json(base + "/stats/requests").get("worker_count") != 2:
            assert time.monotonic() < deadline, "the UI never showed 2 workers"
            time.sleep(1)
        form = urllib.parse.urlencode(
            {
                "user_count": 4,
                "spawn_rate": 4,
                "host": "http://target:8080",
                "user_classes": "AlbumsFastHttpUser",
            }
        ).encode()
        with urllib.request.urlopen(base + "/swarm", data=form, timeout=10) as r:
            assert json.loads(r.read())["success"] is True
        deadline = time.monotonic() + 30
        while _get_json(base + "/stats/requests")["stats"][-1]["num_requests"] < 50:
            assert time.monotonic() < deadline, "the UI's test sent no requests"
            time.sleep(1)
        urllib.request.urlopen(base + "/stop", data=b"", timeout=10).close()
        # Only the UI is published, on loopback; the master's 5557 stays inside the network.
        assert stack.compose("port", "master", "8089").stdout.strip() == f"127.0.0.1:{port}"
        assert stack.compose("port", "master", "5557", check=False).stdout.strip() in ("", ":0")
        uids = {
            svc: stack.compose("exec", "-T", svc, "id", "-u").stdout.strip() for svc in ("master", "worker")
        }
        assert all(uid not in ("", "0") for uid in uids.values()), uids
        target_id = stack.compose("ps", "-q", "target").stdout.strip()
        target_user = subprocess.run(
            ["docker", "inspect", "--format", "{{.Config.User}}", target_id],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert target_user not in ("", "0", "root"), target_user
    finally:
        stack.down()
