"""Docker Swarm end to end: the stack file, `make swarm`, `make sweep ENGINE=swarm`, a replica that
cannot start, and (test_swarm_lab) the two-node lab. Real swarms, real images, real containers.

A test that needs a swarm inits a one-node swarm on 127.0.0.1 and leaves it afterwards. It never
touches a swarm it did not create: an engine already in one makes these tests skip (fail in CI).
Marked `docker`; the settings tests at the top need no engine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ROOT, missing, one_error_line, swarmbench
from make_runs import METRICS_SCRIPT, SWARM_LOAD, make, stacks, swarm_state
from runs import (
    assert_complete_folder,
    manifest,
    only_run,
    printed_total,
    stats,
    target_album_requests,
    total,
)

from swarmbench.runner import swarm
from swarmbench.runner.compose import prepare_results

pytestmark = pytest.mark.swarm  # its Docker tests: one after the other (tests/conftest.py)

# --- settings: refused with one line before Docker is asked anything ------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"SWARMBENCH_STACK": "My Stack"}, "SWARMBENCH_STACK='My Stack' is not a stack name"),
        ({"SWARMBENCH_WORKER_CONSTRAINT": "node.role; rm -rf ~"}, "is not a placement constraint"),
        ({"SWARMBENCH_MASTER_CONSTRAINT": "anywhere"}, "SWARMBENCH_MASTER_CONSTRAINT='anywhere' is not a"),
        (
            {"SWARMBENCH_REGISTRY": "http://reg:5000"},
            "SWARMBENCH_REGISTRY='http://reg:5000' is not a registry",
        ),
        ({"SWARMBENCH_MOUNT": "/tmp"}, "SWARMBENCH_MOUNT is for docker compose on one machine"),
        ({"WORKERS": "3; touch /tmp/x"}, "WORKERS='3; touch /tmp/x' is not a whole number"),
    ],
)
def test_make_swarm_refuses_bad_settings_with_one_line(tmp_path, docker_shim, settings, message):
    results = tmp_path / "results"
    results.mkdir()
    env = {**os.environ, "SWARMBENCH_RESULTS": str(results), "PATH": docker_shim.path, **settings}
    res = make("swarm", env=env)
    assert res.returncode == 2  # make's own code for a failed recipe (the CLI's is 2 as well)
    assert message in one_error_line(res.stderr)
    assert docker_shim.calls() == [], "Docker was asked before the settings were checked"
    assert not list(results.iterdir())


def test_sweep_engine_must_be_known(tmp_path):
    env = {**os.environ, "SWARMBENCH_RESULTS": str(tmp_path), "ENGINE": "kubernetes"}
    res = swarmbench("sweep", env=env, timeout=30)
    assert res.returncode == 2
    assert "ENGINE='kubernetes' is not one of compose, swarm" in one_error_line(res.stderr)
    assert not list(tmp_path.iterdir())


def test_stack_file_runs_the_images_compose_builds():
    """Swarm cannot build: the stack files must name exactly the images docker-compose.yml builds."""

    def images(*names: str) -> set[str]:
        text = "".join((ROOT / n).read_text() for n in names)
        return {re.sub(r"\$\{SWARMBENCH_IMAGE_PREFIX:-\}", "", m) for m in re.findall(r"image: (\S+)", text)}

    import yaml

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    prefix = r"\$\{SWARMBENCH_IMAGE_PREFIX:-\}"
    built = {re.sub(prefix, "", s["image"]) for s in services.values() if "build" in s}
    # The monitoring profile's Prometheus and Grafana are pulled, not built: not the stack's to run.
    assert images(swarm.STACK_FILE, swarm.TARGET_FILE) == built
    assert images(swarm.STACK_FILE, swarm.TARGET_FILE) == {"swarmbench-locust:2.47.0", "swarmbench-target:1"}


def test_stack_target_has_the_settings_compose_gives_it():
    """The same target as compose: every ALBUMS_* setting, with the same default."""
    import yaml

    def env(name: str) -> dict[str, str]:
        return yaml.safe_load((ROOT / name).read_text())["services"]["target"]["environment"]

    assert env(swarm.TARGET_FILE) == env("docker-compose.yml")


def test_a_task_that_cannot_be_placed_is_reported_after_the_grace():
    t = swarm.Task("t1", "worker", "", "pending", "running", "no suitable node (x)", None, False)
    seen: dict[str, float] = {}
    assert swarm.cannot_start([t], seen, now=100.0) is None
    assert swarm.cannot_start([t], seen, now=100.0 + swarm.START_GRACE_S - 1) is None
    late = swarm.cannot_start([t], seen, now=100.0 + swarm.START_GRACE_S)
    assert late == "worker task cannot be placed on any node: no suitable node (x)"
    rejected = swarm.Task("t2", "target", "n1", "rejected", "running", "No such image: x", None, False)
    assert swarm.cannot_start([rejected], {}, now=0.0) == "target task cannot start: No such image: x"
    running = swarm.Task("t3", "worker", "n1", "running", "running", "", None, True)
    assert swarm.cannot_start([running], {}, now=1e9) is None


# --- one-node swarm --------------------------------------------------------------------------------


def no_foreign_swarm() -> None:
    state = swarm_state()
    if state != "inactive":
        missing(f"this Docker engine is in a swarm ({state!r}) these tests did not create; not touching it")


@pytest.fixture(scope="module")
def one_node_swarm(docker_compose) -> Iterator[None]:
    no_foreign_swarm()
    subprocess.run(
        ["docker", "swarm", "init", "--advertise-addr", "127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        yield
    finally:
        subprocess.run(["docker", "swarm", "leave", "--force"], capture_output=True, timeout=60)


@pytest.fixture
def stack(request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"sbt{os.getpid()}{request.node.name.lower()[5:14].replace('_', '')}"
    yield name
    swarm.remove_stack(name)  # whatever happened, leave no service behind


@pytest.fixture
def results(tmp_path: Path) -> Path:
    d = tmp_path / "results"
    d.mkdir()
    return d


@pytest.mark.docker
def test_stack_file_two_replicas_complete_and_exact(one_node_swarm, stack, results):
    """compose/swarm.yml deployed by hand, as its header says: counts checked against the target itself."""
    env = {**os.environ, "WORKERS": "2", "LOCUST_RUN_TIME": "10s", "SWARMBENCH_RESULTS": str(results)}
    env.update(SWARM_LOAD)
    prepare_results(env, results)
    env = swarm.swarm_env(env)
    swarm.build_images(env, staging=False)
    env["SWARMBENCH_ENV_FILE"] = swarm.write_env_file(env)
    deploy = [
        "docker",
        "stack",
        "deploy",
        "--resolve-image",
        "never",
        "-c",
        swarm.STACK_FILE,
        "-c",
        swarm.TARGET_FILE,
    ]
    try:
        subprocess.run([*deploy, stack], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
        code = swarm.follow(stack, deadline_s=120)
        logs = subprocess.run(
            ["docker", "service", "logs", "--raw", f"{stack}_master"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        served = subprocess.run(
            ["docker", "run", "--rm", "--network", f"{stack}_bench", "--entrypoint", "python",
             "swarmbench-locust:2.47.0", "-c", METRICS_SCRIPT],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        services = {t.service for t in swarm.tasks(stack)}
    finally:
        os.unlink(env["SWARMBENCH_ENV_FILE"])
    assert code == 0, (logs.stdout + logs.stderr)[-3000:]
    run_dir = only_run(results)
    m = assert_complete_folder(run_dir)
    assert (m["workers_expected"], m["workers_connected"], m["mode"]) == (2, 2, "distributed")
    assert m["host"] == "http://target:8080" and m["user_classes"] == ["AlbumsFastHttpUser"]
    rows = stats(run_dir)
    n = total(rows)
    assert n > 100, n
    assert total(rows, "Failure Count") == 0
    assert n == printed_total(logs.stdout + logs.stderr), "CSV total differs from the total Locust printed"
    assert n == target_album_requests(served.stdout), "Locust's count differs from the target's /metrics"
    assert services == {"master", "worker", "target"}
    inspect = ["docker", "service", "inspect", "--format", "{{json .Spec.TaskTemplate.ContainerSpec}}"]
    spec = json.loads(subprocess.run([*inspect, f"{stack}_worker"], capture_output=True, text=True).stdout)
    assert spec["User"].split(":")[0] not in ("", "0", "root"), "workers must not run as root"


@pytest.mark.docker
def test_make_swarm_three_replicas_with_headers_secret_and_thresholds(
    one_node_swarm, stack, results, tmp_path
):
    """The issue's acceptance run through make: run.json says swarm and where each part ran."""
    headers = tmp_path / "headers"
    headers.write_text("X-Swarm-Test: s3cr3t-value\n")
    headers.chmod(0o644)
    env = {
        **os.environ, "SWARMBENCH_STACK": stack, "SWARMBENCH_RESULTS": str(results), "WORKERS": "3",
        "LOCUST_RUN_TIME": "10s", "SWARMBENCH_HEADERS_FILE": str(headers), "LOCUST_CHECKS": "fail_ratio<0.01",
        **SWARM_LOAD,
    }  # fmt: skip
    res = make("swarm", env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    run_dir = only_run(results)
    assert f"swarmbench: results in {run_dir}/" in res.stdout
    m = manifest(run_dir)
    assert m["engine"] == "swarm"
    assert (m["workers_expected"], m["workers_connected"], m["exit_code"]) == (3, 3, 0)
    nodes = m["nodes"]
    assert nodes["master"]["role"] == "manager" and nodes["target"]["role"] == "manager"
    assert sum(w["replicas"] for w in nodes["workers"]) == 3
    assert m["totals"]["requests"] > 100
    assert m["totals"]["requests"] == m["target"]["album_requests"], (
        "Locust's count differs from the target's"
    )
    assert m["request_headers"] == ["X-Swarm-Test"] and m["checks_passed"] is True
    for path in run_dir.iterdir():
        assert "s3cr3t-value" not in path.read_text(errors="replace"), (
            f"the header value leaked into {path.name}"
        )
    assert stack not in stacks(), "make swarm left its stack behind"


@pytest.mark.docker
def test_a_replica_that_cannot_start_is_one_line_and_the_stack_is_removed(one_node_swarm, stack, results):
    env = {
        **os.environ, "SWARMBENCH_STACK": stack, "SWARMBENCH_RESULTS": str(results), "WORKERS": "2",
        "LOCUST_RUN_TIME": "30s", "SWARMBENCH_WORKER_CONSTRAINT": "node.labels.swarmbench-no-such-label==yes",
    }  # fmt: skip
    started = time.monotonic()
    res = swarmbench("headless", "--swarm", env=env, timeout=240)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    line = one_error_line(res.stderr)
    assert "worker task cannot be placed on any node: no suitable node" in line, line
    assert line.endswith("removing the stack")
    assert stack not in stacks()
    assert time.monotonic() - started < 120
    for run_json in results.rglob("run.json"):  # what the master saved is kept, and says it did not run
        assert json.loads(run_json.read_text())["workers_connected"] == 0


@pytest.mark.docker
def test_sweep_on_swarm_scales_the_replicas(one_node_swarm, stack, results):
    env = {
        **os.environ, "ENGINE": "swarm", "SWARMBENCH_STACK": stack, "SWARMBENCH_RESULTS": str(results),
        "WORKERS": "2", "CLASSES": "AlbumsFastHttpUser", "REPEATS": "1", "RUN_TIME": "6s", "USERS": "4",
        "SWEEP_ID": "swarm-sweep",
    }  # fmt: skip
    res = swarmbench("sweep", "--no-report", env=env, timeout=400)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    state = json.loads((results / "swarm-sweep" / "sweep.json").read_text())
    assert [p["status"] for p in state["points"]] == ["done"]
    m = manifest(only_run(results))
    assert (m["engine"], m["workers_connected"], m["sweep"]["id"]) == ("swarm", 2, "swarm-sweep")
    assert stack not in stacks()
