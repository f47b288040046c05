"""`python -m swarmbench sweep`: validation, planning, resume, interrupt, and the bottleneck verdicts.

The interrupt test and the verdict tests are real runs (local processes against the real Go
target); the Docker test runs `make sweep` through the compose stack.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from harness import Target, assert_one_line_error, interrupt_when, interruptible, run_locust, swarmbench
from make_runs import make
from runs import manifest, only_run
from verdicts import judge

from swarmbench.core import bottleneck as _verdict
from swarmbench.core.exits import UsageError
from swarmbench.core.folder import ABORTED_DIR
from swarmbench.core.loadspec import parse_wait_time
from swarmbench.core.manifest import VerdictInputs
from swarmbench.runner import points as sw


def settings(**kw: str) -> sw.SweepSettings:
    return sw.sweep_settings(kw, {})


# --- bad input: one line, exit 2, nothing started --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--classes", "NoSuchUser"], "CLASSES: unknown user class 'NoSuchUser'"),
        (["--workers", "1 two"], "WORKERS='two' is not a whole number"),
        (["--workers", "0 2"], "WORKERS='0' must be at least 1"),
        (["--workers", "2,2"], "lists 2 twice"),
        (["--run-time", "0s"], "RUN_TIME='0s' must be at least 1s"),
        (["--run-time=-5s"], "RUN_TIME='-5s' is not a duration"),
        (["--run-time", "-5s"], "argument --run-time: expected one argument"),
        (["--repeats"], "argument --repeats: expected one argument"),
        (["--mode", "diagonal"], "MODE='diagonal'"),
        (["--stores", "btree"], "STORES: unknown 'btree'"),
        (["--sweep-id", "../x"], "must be a folder name"),
    ],
)
def test_bad_input_is_one_line_before_anything_starts(tmp_path, args, message):
    env = {**os.environ, "SWARMBENCH_RESULTS": str(tmp_path)}
    assert_one_line_error(swarmbench("sweep", *args, env=env, timeout=30), message, prog="swarmbench")
    assert list(tmp_path.iterdir()) == []


# --- planning and resume -----------------------------------------------------------------------------


def test_plan_covers_every_point_once_per_repeat_in_a_seeded_shuffle():
    s = settings(workers="1 2 4", classes="AlbumsHttpUser AlbumsFastHttpUser", repeats="3", sweep_id="p")
    points = sw.plan(s)
    assert len(points) == 18 and len({p.id for p in points}) == 18
    for r in (1, 2, 3):
        block = points[(r - 1) * 6 : r * 6]
        assert {p.repeat for p in block} == {r}
        assert {(p.workers, p.user_class) for p in block} == {
            (w, c) for w in (1, 2, 4) for c in ("AlbumsHttpUser", "AlbumsFastHttpUser")
        }
    assert [p.id for p in sw.plan(s)] == [p.id for p in points], "the same sweep id gives the same plan"
    orders = {tuple((p.workers, p.user_class) for p in points[i : i + 6]) for i in (0, 6, 12)}
    assert len(orders) > 1, "repeats are shuffled independently"
    natural = [(w, c) for w in (1, 2, 4) for c in ("AlbumsHttpUser", "AlbumsFastHttpUser")]
    assert any(list(o) != natural for o in orders)


def test_strong_and_weak_scaling_users():
    strong = settings(workers="1 4", users="20", mode="strong", sweep_id="s")
    weak = settings(workers="1 4", users="20", mode="weak", sweep_id="w")
    assert {p.workers: p.users for p in sw.plan(strong)} == {1: 20, 4: 20}
    assert {p.workers: p.users for p in sw.plan(weak)} == {1: 20, 4: 80}


def test_store_sweep_points_carry_store_and_mix():
    s = settings(
        workers="1",
        classes="AlbumsFastHttpUser",
        repeats="1",
        stores="mutex sharded",
        mixes="post-heavy read-heavy",
    )
    ids = {p.id for p in sw.plan(s)}
    assert "r1-w1-AlbumsFastHttpUser-mutex-post-heavy" in ids and len(ids) == 4


def test_resume_with_other_settings_is_refused(tmp_path):
    s = settings(workers="1 2", repeats="1", sweep_id="x")
    (tmp_path / "x").mkdir()
    sw.save_state(tmp_path / "x", s, sw.plan(s), "interrupted")
    assert sw.load_state(tmp_path / "x", s)[0].status == "pending"
    other = settings(workers="1 2 4", repeats="1", sweep_id="x")
    with pytest.raises(UsageError, match="exists with other settings"):
        sw.load_state(tmp_path / "x", other)


# --- the verdict's rules -----------------------------------------------------------------------------


def test_verdict_rules_in_order():
    base = VerdictInputs(
        rps=100.0,
        avg_response_ms=2.0,
        worker_cpu_max_mean_percent=20.0,
        target_cpu_util=0.2,
        target_cpus=1.0,
        users=10,
        wait_time="constant 1",
        offered_rate_cap=10.0,
        think_time_s=1.0,
    )
    assert judge(replace(base, worker_cpu_max_mean_percent=95.0))["verdict"] == "generator-bound"
    assert judge(replace(base, target_cpu_util=0.97))["verdict"] == "target-bound"
    starved = judge(replace(base, host_cpu_mean_percent=97.0, host_cpus=2.0))
    assert starved["verdict"] == "generator-bound" and "machine's 2 CPUs were 97 % busy" in starved["reason"]
    assert judge(replace(base, rps=9.5))["verdict"] == "load-bound"
    slow = replace(base, rps=5.0, avg_response_ms=1500.0)
    assert judge(slow)["verdict"] == "target-bound"
    assert judge(replace(base, rps=5.0, offered_rate_cap=100.0))["verdict"] == "none"
    assert parse_wait_time("between 0.5 1.5").offered_rate_cap(50) == pytest.approx(50.0)
    assert parse_wait_time("constant 0").offered_rate_cap(50) is None


# --- verdicts on real runs ---------------------------------------------------------------------------


@pytest.mark.alone  # a bottleneck verdict: the whole machine's CPU
def test_real_run_with_few_users_and_long_waits_is_load_bound(albums_target, tmp_path):
    res = run_locust(
        "--headless", "-H", albums_target.url, "-t", "6s", "-u", "2", "-r", "2",
        "--wait-time", "constant 2", "--results-dir", str(tmp_path), "AlbumsFastHttpUser",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    b = manifest(only_run(tmp_path))["bottleneck"]
    assert b["verdict"] == "load-bound", b
    assert b["inputs"]["offered_rate_cap"] == pytest.approx(1.0)
    assert "AlbumsFastHttpUser (--wait-time 'constant 2', measured mean wait 2.0000 s)" in b["reason"]


@pytest.mark.alone  # a bottleneck verdict: the whole machine's CPU
def test_real_run_against_a_slow_serialised_target_is_target_bound(albums_binary, tmp_path):
    # Calibrated slow target: every store operation holds the one mutex for 5 ms of CPU work on one
    # CPU, so ~200 operations/s at most, far below what 20 users with 10 ms think time ask for.
    target = Target(albums_binary, ALBUMS_STORE="mutex", ALBUMS_LOCK_WORK="5ms", GOMAXPROCS="1")
    try:
        res = run_locust(
            "--headless", "-H", target.url, "-t", "6s", "-u", "20", "-r", "20",
            "--wait-time", "constant 0.01", "--results-dir", str(tmp_path), "AlbumsFastHttpUser",
        )  # fmt: skip
    finally:
        target.stop()
    assert res.returncode == 0, res.stderr[-2000:]
    b = manifest(only_run(tmp_path))["bottleneck"]
    assert b["verdict"] == "target-bound", b
    assert b["inputs"]["worker_cpu_max_mean_percent"] < _verdict.GENERATOR_CPU_LIMIT_PCT


def test_step_load_file_is_inert_without_steps(albums_target, tmp_path):
    res = run_locust(
        "-f", "locustfiles/albums.py,locustfiles/step_load.py", "--headless", "-H", albums_target.url,
        "-t", "3s", "-u", "4", "-r", "4", "--wait-time", "constant 0.05", "--results-dir", str(tmp_path),
        "AlbumsFastHttpUser",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    m = manifest(only_run(tmp_path))
    assert "load_shape" not in m and m["totals"]["requests"] > 20 and m["run_time"] == 3


# --- interrupt and resume (local processes) ----------------------------------------------------------


def _state(sweep_dir: Path) -> dict:
    return json.loads((sweep_dir / "sweep.json").read_text())


def test_interrupt_keeps_finished_points_and_a_rerun_resumes(albums_binary, tmp_path):
    args = [
        "--local", "--sweep-id", "sig", "--workers", "1 2", "--classes", "AlbumsFastHttpUser",
        "--repeats", "2", "--run-time", "3s", "--users", "4", "--wait-time", "constant 0.2",
    ]  # fmt: skip
    env = {**os.environ, "SWARMBENCH_RESULTS": str(tmp_path), "SWARMBENCH_TARGET_BIN": str(albums_binary)}
    sweep_dir = tmp_path / "sig"
    proc = interruptible([sys.executable, "-m", "swarmbench", "sweep", *args, "--no-report"], env)

    def point_2_started() -> bool:  # point 1 done and point 2's run folder made
        if not (sweep_dir / "sweep.json").exists() or _state(sweep_dir)["counts"]["done"] < 1:
            return False
        return (sweep_dir / _state(sweep_dir)["points"][1]["id"]).exists()

    err = interrupt_when(proc, point_2_started, "point 2")
    assert proc.returncode == 130, err
    state = _state(sweep_dir)
    assert state["state"] == "interrupted"
    done = [p for p in state["points"] if p["status"] == "done"]
    assert [p["id"] for p in done] == [state["points"][0]["id"]]
    interrupted = state["points"][1]
    assert interrupted["status"] == "interrupted"
    assert not (sweep_dir / interrupted["id"]).exists(), "a partial folder must not stay where analysis looks"
    assert list((sweep_dir / ABORTED_DIR).glob(f"{interrupted['id']}-1"))
    kept = {p["id"]: (sweep_dir / p["id"] / "run.json").stat().st_mtime_ns for p in done}

    res = swarmbench("sweep", *args, env=env, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    state = _state(sweep_dir)
    assert state["state"] == "complete" and state["counts"]["done"] == 4
    for pid, mtime in kept.items():
        assert (sweep_dir / pid / "run.json").stat().st_mtime_ns == mtime, "a finished point was rerun"
    assert "3 of 4 points to run" in res.stderr
    for p in state["points"]:
        m = manifest(sweep_dir / p["id"])
        assert m["sweep"] == {"id": "sig", "mode": "strong", "repeat": p["repeat"], "point": p["id"]}
        assert m["workers_connected"] == p["workers"]
    report = (sweep_dir / "report" / "report.html").read_text()
    assert "Bottleneck: load-bound" in report and "Fitted serial fraction" in report

    again = swarmbench("sweep", *args, env=env, timeout=60)
    assert again.returncode == 0 and "nothing to run" in again.stdout
    assert _state(sweep_dir)["counts"]["done"] == 4


# --- the Docker path -----------------------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.quiet  # its answer is a scaling fit of two runs' throughput: beside the Docker tests on
# two workers (tests/suite), once the report had no speedup chart
def test_make_sweep_through_compose(docker_compose, tmp_path):
    env = {
        **os.environ,
        "SWARMBENCH_RESULTS": str(tmp_path),
        "COMPOSE_PROJECT_NAME": f"sbh4-test-{os.getpid()}",
        "SWEEP_ID": "dock",
    }
    sweep = ("sweep", "WORKERS=1 2", "CLASSES=AlbumsFastHttpUser", "REPEATS=1", "RUN_TIME=8s")
    res = make(*sweep, env=env, timeout=420)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    sweep_dir = tmp_path / "dock"
    runs = sorted(p.parent.name for p in sweep_dir.glob("*/run.json"))
    assert runs == ["r1-w1-AlbumsFastHttpUser", "r1-w2-AlbumsFastHttpUser"]
    state = _state(sweep_dir)
    assert state["state"] == "complete" and state["runner"] == "compose"
    assert state["settings"]["workers"] == [1, 2] and state["settings"]["classes"] == ["AlbumsFastHttpUser"]
    for name in ("report.html", "scaling.json", "summary.csv", "speedup_g1_AlbumsFastHttpUser.png"):
        assert (sweep_dir / "report" / name).is_file(), name
    scaling = json.loads((sweep_dir / "report" / "scaling.json").read_text())
    assert scaling["groups"][0]["amdahl"] is not None and scaling["groups"][0]["bottleneck"]
    for run in runs:
        m = manifest(sweep_dir / run)
        assert m["mode"] == "distributed" and m["bottleneck"]["verdict"] in _verdict.VERDICTS

    again = make(*sweep, env=env, timeout=60)
    assert again.returncode == 0 and "nothing to run" in again.stdout


# --- a failing point is recorded, the sweep goes on, the report shows it missing ---------------------


def test_failed_point_is_recorded_and_shown_missing(albums_binary, tmp_path):
    # A target that cannot start for one store strategy: that point fails, the other runs.
    wrapper = tmp_path / "albums-wrapper"
    wrapper.write_text(f'#!/bin/sh\n[ "$ALBUMS_STORE" = syncmap ] && exit 3\nexec {albums_binary}\n')
    wrapper.chmod(0o755)
    results = tmp_path / "results"
    env = {**os.environ, "SWARMBENCH_RESULTS": str(results), "SWARMBENCH_TARGET_BIN": str(wrapper)}
    args = [
        "--local", "--sweep-id", "f", "--workers", "1", "--classes", "AlbumsFastHttpUser", "--repeats", "1",
        "--run-time", "3s", "--users", "4", "--wait-time", "constant 0.2", "--stores", "rwmutex syncmap",
    ]  # fmt: skip
    res = swarmbench("sweep", *args, env=env, timeout=180)
    assert res.returncode == 1, res.stderr[-3000:]
    state = _state(results / "f")
    by_store = {p["store"]: p for p in state["points"]}
    assert by_store["rwmutex"]["status"] == "done"
    failed = by_store["syncmap"]
    assert failed["status"] == "failed" and "did not answer" in failed["reason"]
    assert f"point {failed['id']} failed" in res.stderr
    report = (results / "f" / "report" / "report.html").read_text()
    assert "Missing points" in report and failed["id"] in report


def test_knee_is_the_first_step_whose_p95_leaves_its_floor():
    import pandas as pd

    from swarmbench.analysis import columns as C
    from swarmbench.analysis.knee import knee_from_steps

    table = pd.DataFrame(
        {
            C.USERS: [10, 20, 30, 40, 50],
            C.RPS_OUT: [100.0, 200.0, 290.0, 330.0, 335.0],
            C.P50_MS: [2.0, 2.0, 3.0, 9.0, 40.0],
            C.P95_MS: [6.0, 5.0, 8.0, 24.0, 90.0],
        }
    )
    k = knee_from_steps(table)
    assert k.users == 40 and k.floor_ms == 5.0 and "Knee at 40 users" in k.sentence()
    flat = table.assign(**{C.P95_MS: [6.0, 5.0, 7.0, 8.0, 9.0]})
    assert knee_from_steps(flat).index is None
