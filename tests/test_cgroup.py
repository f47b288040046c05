"""CPU limits from cgroups (swarmbench/plugin/generator.py): fixture trees shared with the Go target's
tests (target/testdata/cgroup/, each with the answer in expect.json), then the real /sys/fs/cgroup
inside a container started with a CPU limit."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from harness import ROOT

from swarmbench.plugin import generator

FIXTURES = ROOT / "target" / "testdata" / "cgroup"
CASES = sorted(p.name for p in FIXTURES.iterdir())


@pytest.mark.parametrize("case", CASES)
def test_cpu_limit_of_each_fixture_tree(case: str):
    d = FIXTURES / case
    expect = json.loads((d / "expect.json").read_text())
    got = generator.cpu_limit(d / "fs", (d / "proc-self-cgroup").read_text(), host_cores=8)
    assert (got.cpus, got.source) == (pytest.approx(expect["cpus"]), expect["source"])


def test_fixtures_cover_every_source():
    sources = {json.loads((FIXTURES / c / "expect.json").read_text())["source"] for c in CASES}
    assert sources == {generator.V2_QUOTA, generator.V1_QUOTA, generator.CPUSET, generator.HOST}


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("15000 100000", 0.15), ("200000 100000", 2.0), ("max 100000", None), ("", None), ("x 1", None)],
)
def test_parse_cpu_max(text, cpus):
    assert generator.parse_cpu_max(text) == (pytest.approx(cpus) if cpus else None)


@pytest.mark.parametrize(
    ("text", "cores"), [("0-3,6", 5), ("2", 1), ("0-1,1-2", 3), ("", None), ("a-b", None)]
)
def test_parse_cpuset(text, cores):
    assert generator.parse_cpuset(text) == cores


def test_v1_quota_of_minus_one_is_no_quota():
    assert generator.parse_cfs("-1", "100000") is None
    assert generator.parse_cfs("50000", "100000") == 0.5


def test_this_machine_has_a_sane_limit():
    limit = generator.cpu_limit()
    assert 0 < limit.cpus <= len(os.sched_getaffinity(0))
    assert limit.source in (generator.V2_QUOTA, generator.V1_QUOTA, generator.CPUSET, generator.HOST)


IMAGE = "swarmbench-locust:2.47.0"
PROBE = (
    "from swarmbench.plugin.generator import cpu_limit; import json; print(json.dumps(cpu_limit().to_json()))"
)


def _in_container(*docker_args: str) -> dict:
    out = subprocess.run(
        ["docker", "run", "--rm", *docker_args, "--entrypoint", "python", IMAGE, "-c", PROBE],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(out.stdout)


@pytest.mark.docker
def test_real_cgroup_inside_a_container(docker_compose):
    """The real /sys/fs/cgroup of this host's engine (v1 or v2, whichever it runs): a quota, a
    cpuset, both (the smaller wins), neither (the machine's cores)."""
    subprocess.run(
        ["docker", "compose", "-f", str(ROOT / "docker-compose.yml"), "build", "worker"],
        cwd=ROOT, capture_output=True, timeout=600, check=True,
    )  # fmt: skip
    quota = _in_container("--cpus", "0.15")
    assert quota["cpus"] == 0.15 and quota["source"] in (generator.V1_QUOTA, generator.V2_QUOTA), quota
    assert _in_container("--cpuset-cpus", "0") == {"cpus": 1, "source": generator.CPUSET}
    assert _in_container("--cpuset-cpus", "0", "--cpus", "0.5")["cpus"] == 0.5
    free = _in_container()
    assert free["cpus"] == len(os.sched_getaffinity(0))
    assert free["source"] in (generator.CPUSET, generator.HOST)
