"""CPU limits and the generator self-check through the real compose stack (`make headless`).

A worker at its 0.15-CPU quota is generator-bound (its CPU judged against its own limit, read from
its cgroup) and its event loop lags: the run is marked "latency inflated by the load generator".
A target at its 0.25-CPU quota is target-bound, and its healthy generators are not flagged.
"""

from __future__ import annotations

import pytest
from make_runs import compose_env, make
from runs import manifest, only_run, stats, total

from swarmbench.core import bottleneck

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_compose"), pytest.mark.alone]  # CPU shares


def _run(tmp_path, **settings: str) -> tuple[dict, str]:
    env = compose_env(tmp_path, LOCUST_RUN_TIME="20s", LOCUST_USER_CLASSES="AlbumsFastHttpUser", **settings)
    res = make("headless", env=env, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode in (0, 3), out[-3000:]
    run_dir = only_run(tmp_path / "results")
    m = manifest(run_dir)
    assert total(stats(run_dir)) == m["totals"]["requests"] == m["target"]["album_requests"]
    return m, out


def test_a_worker_at_its_cpu_quota_is_generator_bound_and_flagged(tmp_path):
    m, out = _run(
        tmp_path, WORKERS="2", WORKER_CPUS="0.15", LOCUST_USERS="100", LOCUST_SPAWN_RATE="50",
        LOCUST_WAIT_TIME="constant 0",
    )  # fmt: skip
    workers = m["worker_cpu"]["per_worker"]
    assert len(workers) == 2
    for w in workers:
        assert w["cpu_limit"]["cpus"] == 0.15, w
        assert w["mean_percent"] < 20 and w["mean_percent_of_limit"] >= 80, w  # ~15 % of a core = its all
    b = m["bottleneck"]
    assert b["verdict"] == "generator-bound", b
    g = m["generator_lag"]
    assert g["inflated"] and g["flag"] == bottleneck.INFLATED and g["worst_p99_ms"] > g["bound_ms"], g
    assert all(w["series"] for w in g["per_worker"]), "the lag over time, per worker"
    assert f"Warning: {bottleneck.INFLATED}: worker " in out, out[-3000:]  # in the run's summary


def test_a_target_at_its_cpu_quota_is_target_bound_and_its_generators_are_not_flagged(tmp_path):
    m, out = _run(
        tmp_path, WORKERS="1", TARGET_CPUS="0.25", ALBUMS_LOCK_WORK="1ms", LOCUST_USERS="20",
        LOCUST_SPAWN_RATE="20", LOCUST_WAIT_TIME="constant 0",
    )  # fmt: skip
    t = m["target"]
    assert (t["cpu_limit"], t["cpu_limit_source"].startswith("cgroup")) == (0.25, True), t
    assert t["cpu_share_of_limit"] >= 0.85, t
    b = m["bottleneck"]
    assert b["verdict"] == "target-bound" and "of its 0.25 CPU(s)" in b["reason"], b
    assert not m["generator_lag"]["inflated"], m["generator_lag"]
    assert bottleneck.INFLATED not in out
