"""The two-node lab end to end: `make swarm-lab`, `make swarm` with every worker on the second node
(its own Docker engine in its own network namespace) and master + target on the manager, then
`make swarm-lab-down`, after which nothing of the lab is left. Root and Docker; mandatory in CI.

After test_swarm.py (which leaves its one-node swarm first): the lab makes a swarm of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness import ROOT, missing
from make_runs import SWARM_LOAD, make, stacks, swarm_state
from runs import assert_complete_folder, only_run

from swarmbench.runner import swarmlab

pytestmark = [pytest.mark.docker, pytest.mark.swarm]


def lab_leftovers() -> list[str]:
    left = []
    if swarmlab.NETNS in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
        left.append("namespace")
    if subprocess.run(["ip", "link", "show", swarmlab.VETH_HOST], capture_output=True).returncode == 0:
        left.append("veth")
    left += [str(p) for p in (swarmlab.DATA_ROOT, swarmlab.EXEC_ROOT, swarmlab.STATE_DIR) if p.exists()]
    if Path(swarmlab.SOCKET).exists():
        left.append("socket")
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    if any(swarmlab.SOCKET in line and "dockerd" in line for line in ps.splitlines()):
        left.append("dockerd")
    if swarm_state() != "inactive":
        left.append("swarm")
    return left


@pytest.fixture
def lab_possible(docker_compose) -> None:
    why = None
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "nsenter", "dockerd")):
        why = "the lab needs root, iproute2, nsenter and dockerd"
    elif swarm_state() != "inactive" or lab_leftovers():
        why = f"this engine is in a swarm or the lab's names are taken ({lab_leftovers()}); not touching them"
    if why:
        missing(why)


def test_two_node_lab_runs_every_worker_on_the_second_node(lab_possible, tmp_path):
    results = tmp_path / "results"
    try:
        up = make("swarm-lab", timeout=300)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        again = make("swarm-lab", timeout=120)
        assert again.returncode == 0 and "swarm-lab: up" in again.stdout, again.stderr[-2000:]
        env = {
            **os.environ, "SWARMBENCH_RESULTS": str(results), "WORKERS": "3", "LOCUST_RUN_TIME": "10s",
            "SWARMBENCH_WORKER_CONSTRAINT": "node.role==worker", **SWARM_LOAD,
        }  # fmt: skip
        res = make("swarm", env=env)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
        assert "swarmbench" not in stacks()
    finally:
        down = make("swarm-lab-down", timeout=180)
    assert down.returncode == 0, down.stderr[-2000:]
    assert lab_leftovers() == [], "swarm-lab-down left parts of the lab behind"
    assert make("swarm-lab-down").stdout.strip().endswith("swarm-lab: no lab to remove")
    run_dir = only_run(results)
    m = assert_complete_folder(run_dir)
    assert (m["engine"], m["workers_connected"], m["exit_code"]) == ("swarm", 3, 0)
    nodes = m["nodes"]
    assert nodes["master"]["role"] == nodes["target"]["role"] == "manager"
    assert [(w["role"], w["replicas"]) for w in nodes["workers"]] == [("worker", 3)]
    assert nodes["workers"][0]["id"] != nodes["master"]["id"]
    assert m["totals"]["requests"] > 100 and m["totals"]["failures"] == 0
    assert m["totals"]["requests"] == m["target"]["album_requests"], (
        "Locust's count differs from the target's"
    )


def test_swarm_lab_refuses_without_root(tmp_path):
    if os.geteuid() != 0:
        res = make("swarm-lab")
    else:  # as root, drop to an ordinary user for this one call
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv is not installed")
        res = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             sys.executable, "-m", "swarmbench", "swarm-lab", "up"],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
        )  # fmt: skip
    assert res.returncode == 2
    assert "swarm-lab needs root" in res.stderr and "Traceback" not in res.stderr
