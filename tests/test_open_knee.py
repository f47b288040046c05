"""`knee --rates` and `sweep --arrival-rate`: the stepped arrival-rate schedule (core/loadspec.py), the
open-model knee and the highest rate N workers sustain (analysis/openmodel.py) on synthetic
per-second rows, and real local runs (the Go target slowed to 100 ms, a small pool) whose knee and
sustained rates follow from the pool: U users at 100 ms hold about 10 x U iterations/s.

Locust only runs in subprocesses (`python -m swarmbench ... --local`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest
from harness import assert_one_line_error, swarmbench
from make_runs import compose_env, run_on_stack
from runs import assert_summary_last

from swarmbench import cli
from swarmbench.analysis import openmodel
from swarmbench.core import folder
from swarmbench.core.bottleneck import KNEE_P99_MS, knee_p99_ms
from swarmbench.core.exits import UsageError
from swarmbench.core.loadspec import Hold, holds, parse_arrival_rate, parse_step_rates
from swarmbench.core.manifest import RunManifest
from swarmbench.core.sweepstate import SweepPoint
from swarmbench.runner import points
from swarmbench.runner.knee import knee_env
from swarmbench.runner.points import PointRunner
from swarmbench.runner.sweep import knee_bound, report_command

# --- the step schedule ----------------------------------------------------------------------------------


def test_step_rates_become_holds_joined_by_jumps():
    steps = parse_step_rates("100 100 20 300")
    assert steps.levels == [100, 200, 300]
    assert steps.arrival_rate() == "100; 100@20s; 200@0s; 200@20s; 300@0s; 300@20s"
    assert steps.run_time() == "65s"  # 3 x 20 s + STEP_SETTLE_S
    schedule = parse_arrival_rate(steps.arrival_rate())
    assert [schedule.rate_at(t) for t in (0, 19.9, 20, 39.9, 40, 70)] == [100, 100, 200, 200, 300, 300]
    assert holds(schedule) == [Hold(100, 0, 20), Hold(200, 20, 40), Hold(300, 40, math.inf)]
    assert parse_step_rates("2.5/s 2.5 5s 10").levels == [2.5, 5, 7.5, 10]


def test_holds_of_any_schedule_skip_ramps_and_zero_and_merge_repeats():
    assert holds(parse_arrival_rate("50; 100@30s")) == [Hold(100, 30, math.inf)]
    assert holds(parse_arrival_rate("100; 100@10s; 100@5s; 0@0s")) == [Hold(100, 0, 15)]
    assert holds(parse_arrival_rate("80")) == [Hold(80, 0, math.inf)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("100 200 400 800 1600", "expected 'START STEP SECONDS MAX'"),
        ("100 x 20 400", "must be numbers"),
        ("0 100 20 400", "need START > 0"),
        ("100 100 20 50", "MAX"),
        ("100 100 0 400", "SECONDS > 0"),
        ("100 100 inf 400", "finite"),
    ],
)
def test_bad_step_rates_name_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_step_rates(spec)
    with pytest.raises(UsageError, match=f"^STEP_RATES: .*{message}"):
        knee_env({}, rates=spec)


def test_knee_env_in_open_mode():
    env = knee_env({"KNEE_P99_MS": "250"}, rates="50 50 10 150")
    assert env["LOCUST_ARRIVAL_RATE"] == "50; 50@10s; 100@0s; 100@10s; 150@0s; 150@10s"
    assert env["LOCUST_RUN_TIME"] == "35s" and env["LOCUST_LOCUSTFILE"] == "locustfiles/albums.py"
    assert env["LOCUST_SPAWN_RATE"] == env["LOCUST_USERS"] == "200"
    assert "LOCUST_STEP_USERS" not in env
    with pytest.raises(UsageError, match="STEP_RATES and STEP_USERS: choose one"):
        knee_env({"STEP_USERS": "10 10 10 30", "STEP_RATES": "10 10 10 30"})
    with pytest.raises(UsageError, match="^KNEE_P99_MS: 'soon' is not a positive number"):
        knee_env({"KNEE_P99_MS": "soon"}, rates="10 10 10 30")
    assert knee_p99_ms("") == KNEE_P99_MS and knee_p99_ms("120ms") == 120


# --- the knee on synthetic per-second rows --------------------------------------------------------------


def synthetic(spec: str, held: dict[float, tuple[float, float]], seconds: int) -> openmodel.OpenRun:
    """A run of SPEC: each second offers its rate; HELD maps a rate to (dropped share, p99 ms)."""
    schedule = parse_arrival_rate(spec)
    rows = []
    for s in range(seconds):
        rate = schedule.rate_at(s + 0.5)
        dropped_share, p99 = held.get(rate, (0.0, 20.0))
        dropped = round(rate * dropped_share)
        rows.append(
            {"second": s, "scheduled": rate, "started": rate - dropped, "dropped": dropped,
             "service_p99_ms": 10.0, "intended_p99_ms": p99}
        )  # fmt: skip
    manifest = RunManifest.from_json({"open_model": {"arrival_rate": spec}})
    return openmodel.OpenRun(Path("synthetic"), manifest, pd.DataFrame(rows))


STEPS = parse_step_rates("100 100 6 500").arrival_rate()  # 100 .. 500/s, 6 s each: 30 s


def test_the_knee_is_the_last_rate_held_before_drops():
    run = synthetic(STEPS, {400: (0.05, 80.0), 500: (0.3, 900.0)}, 36)
    k = openmodel.open_model_knee(run)
    assert k is not None and k.rate == 300
    assert k.steps["held"].tolist() == [True, True, True, False, False]
    assert k.steps["seconds"].tolist() == [5, 5, 5, 5, 10]  # the first second of each step settles
    assert k.sentence().startswith("Knee: 300/s is the highest rate held")
    assert "at 400/s, 5.0% dropped" in k.sentence()


def test_intended_p99_over_the_bound_is_a_knee_too():
    run = synthetic(STEPS, {300: (0.0, 450.0), 400: (0.0, 700.0)}, 36)
    assert openmodel.open_model_knee(run).rate == 300
    k = openmodel.open_model_knee(run, bound_ms=400.0)
    assert k.rate == 200 and "intended-start p99 450 ms over 400 ms" in k.sentence()
    assert openmodel.sustained_rate(run) == {"offered": 500, "sustained": 500}  # the sweep: no bound


def test_no_knee_when_every_step_held_and_none_when_the_first_did_not():
    k = openmodel.open_model_knee(synthetic(STEPS, {}, 36))
    assert k.rate == 500 and k.sentence().startswith("No knee up to 500/s: every step held")
    k = openmodel.open_model_knee(synthetic(STEPS, {100: (0.02, 20.0)}, 36))
    assert k.rate is None and k.sentence().startswith("No rate held: already at 100/s, 2.0% dropped")


def test_a_held_step_above_a_failed_one_is_luck_not_capacity():
    assert openmodel.open_model_knee(synthetic(STEPS, {200: (0.1, 50.0)}, 36)).rate == 100


def test_a_single_rate_is_no_knee_search():
    run = synthetic("250", {}, 10)
    assert openmodel.open_model_knee(run) is None
    assert openmodel.sustained_rate(run) == {"offered": 250, "sustained": 250}


def test_sweep_table_per_worker_count():
    spec = "60; 60@4s; 120@0s; 120@4s; 240@0s"
    points = [
        ("AlbumsFastHttpUser", 1, synthetic(spec, {120: (0.2, 90.0), 240: (0.6, 90.0)}, 13)),
        ("AlbumsFastHttpUser", 1, synthetic(spec, {240: (0.6, 90.0)}, 13)),
        ("AlbumsFastHttpUser", 2, synthetic(spec, {240: (0.2, 90.0)}, 13)),
        ("AlbumsFastHttpUser", 2, synthetic(spec, {}, 13)),
    ]
    table = openmodel.sweep_table(points)
    assert table[
        ["workers", "repeats", "sustained_every_repeat", "sustained_best_repeat"]
    ].values.tolist() == [
        [1, 2, 60, 120],
        [2, 2, 120, 240],
    ]
    assert openmodel.sweep_table(points[:2]) is None  # one worker count: no scaling question


def test_the_report_takes_its_knee_bound_from_the_command_line_only(monkeypatch):
    monkeypatch.setenv("KNEE_P99_MS", "-3")  # the analysis reads no environment
    parse = cli.build_parser("analysis", cli.ANALYSIS_COMMANDS).parse_args
    assert parse(["report", "x", "-o", "y"]).knee_p99_ms == KNEE_P99_MS
    assert parse(["report", "x", "-o", "y", "--knee-p99-ms", "250ms"]).knee_p99_ms == 250


def test_a_bad_knee_p99_bound_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.analysis_main(["report", "x", "-o", "y", "--knee-p99-ms", "-3"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "analysis: error: report: argument --knee-p99-ms: '-3' is not a positive number" in err
    with pytest.raises(UsageError, match="^KNEE_P99_MS: '-3' is not a positive number"):
        knee_bound({"KNEE_P99_MS": "-3"})


def test_the_runner_passes_knee_p99_ms_to_the_report(tmp_path):
    cmd = report_command(tmp_path, knee_p99_ms=knee_bound({"KNEE_P99_MS": "250"}))
    assert cmd[1:4] == ["-m", "swarmbench", "report"] and cmd[-2:] == ["--knee-p99-ms", "250.0"]
    assert cli.build_parser().parse_args(cmd[3:]).knee_p99_ms == 250
    assert knee_bound({}) == KNEE_P99_MS
    assert "--knee-p99-ms" not in report_command(tmp_path)  # a closed-model report: the analysis' default


# --- the sweep's settings ------------------------------------------------------------------------------


def test_sweep_passes_the_schedule_to_every_point(tmp_path):
    s = points.sweep_settings({"workers": "1 2"}, {"ARRIVAL_RATE": "100; 200@5s"})
    assert s.arrival_rate == "100; 200@5s" and s.identity()["arrival_rate"] == "100; 200@5s"
    env = PointRunner(s, tmp_path, {}).point_env(SweepPoint("r1-w2-X", 1, 2, "X", 50))
    assert env["LOCUST_ARRIVAL_RATE"] == "100; 200@5s"
    closed = points.sweep_settings({}, {})
    assert closed.arrival_rate is None and "arrival_rate" not in closed.identity()  # old sweeps resume
    with pytest.raises(UsageError, match=r"^ARRIVAL_RATE: invalid arrival rate '100; 200@soon'"):
        points.sweep_settings({"arrival_rate": "100; 200@soon"}, {})


def test_a_dry_run_shows_the_schedule_every_point_offers(tmp_path):
    env = {**os.environ, "SWARMBENCH_RESULTS": str(tmp_path)}
    args = ["sweep", "--workers", "1 2", "--arrival-rate", "100; 100@20s; 200@0s; 200@20s", "--dry-run"]
    res = swarmbench(*args, env=env, timeout=30)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == (
        "open model: every point offers 100; 100@20s; 200@0s; 200@20s iterations/s (users = the pool); "
        "steps judged: 100/s for 20 s, 200/s to the end"
    ), res.stdout
    assert len(lines) > 2 and all("users=" in line for line in lines[1:])
    assert list(tmp_path.iterdir()) == [], "a dry run writes nothing"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["knee", "--rates", "100 100 20"], "STEP_RATES: '100 100 20': expected 'START STEP SECONDS MAX'"),
        (["sweep", "--arrival-rate", "fast"], "ARRIVAL_RATE: invalid arrival rate 'fast'"),
    ],
)
def test_bad_schedules_stop_with_one_line(tmp_path, args, message):
    env = {**os.environ, "SWARMBENCH_RESULTS": str(tmp_path)}
    assert_one_line_error(swarmbench(*args, env=env, timeout=30), message, prog="swarmbench")
    assert list(tmp_path.iterdir()) == []


# --- real local runs: a target slowed to 100 ms, so the pool sets the capacity ------------------------


def local_env(tmp_path: Path, albums_binary: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ, "SWARMBENCH_RESULTS": str(tmp_path), "SWARMBENCH_TARGET_BIN": str(albums_binary),
        "ALBUMS_DELAY": "100ms", **extra,
    }  # fmt: skip


@pytest.mark.quiet
def test_knee_local_finds_the_rate_the_pool_holds(albums_binary, tmp_path):
    """10 users at 100 ms: about 100 iterations/s. 40 and 80/s hold, 120/s drops about a fifth."""
    env = local_env(tmp_path, albums_binary, LOCUST_USERS="10", LOCUST_RUN_ID="k")
    res = swarmbench("knee", "--local", "--rates", "40 40 5 120", env=env, timeout=150)
    assert res.returncode == 0, res.stderr[-3000:]
    run = openmodel.load(tmp_path / "k")
    assert run.summary.arrival_rate == "40; 40@5s; 80@0s; 80@5s; 120@0s; 120@5s"
    k = openmodel.open_model_knee(run)
    assert k is not None and k.rate == 80, k.steps
    assert k.steps["dropped_ratio"].iloc[-1] > 0.1
    assert k.steps["achieved_rate"].iloc[:2].tolist() == pytest.approx([40, 80], rel=0.01)
    report = (tmp_path / "k" / "analysis" / "report.html").read_text()
    assert "Knee: 80/s is the highest rate held" in report
    # Shown as a headless run is (runner/terminal.py): the run's summary, then the report's line.
    assert_summary_last(res.stdout[: res.stdout.rindex(f"{tmp_path / 'k' / 'analysis'}")], tmp_path / "k")
    assert "Response time percentiles" in (tmp_path / "k" / folder.RUNNER_LOG).read_text()


@pytest.mark.quiet
def test_sweep_reports_the_highest_rate_n_workers_sustain(albums_binary, tmp_path):
    """Weak scaling, 10 users per worker: one worker holds 60/s but not 120/s, two hold 120/s."""
    args = [
        "--local", "--sweep-id", "open", "--workers", "1 2", "--classes", "AlbumsFastHttpUser",
        "--repeats", "1", "--run-time", "13s", "--users", "10", "--mode", "weak",
        "--arrival-rate", "60; 60@4s; 120@0s; 120@4s; 240@0s",
    ]  # fmt: skip
    res = swarmbench("sweep", *args, env=local_env(tmp_path, albums_binary), timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_dir = tmp_path / "open"
    points = [
        ("AlbumsFastHttpUser", w, openmodel.load(sweep_dir / f"r1-w{w}-AlbumsFastHttpUser")) for w in (1, 2)
    ]
    table = openmodel.sweep_table(points)
    assert table["sustained_every_repeat"].tolist() == [60, 120], table
    report = (sweep_dir / "report" / "report.html").read_text()
    assert "Highest arrival rate sustained vs workers" in report


# --- the same knee through the real compose stack ------------------------------------------------------


@pytest.mark.docker
@pytest.mark.usefixtures("docker_compose")
@pytest.mark.quiet
def test_knee_through_compose_splits_the_rate_over_two_workers(tmp_path):
    """`python -m swarmbench knee --rates` with the compose stack: the schedule reaches both worker
    containers, each runs half, every step holds on the fast demo target, and the report says so."""
    env = compose_env(
        tmp_path, WORKERS="2", LOCUST_USERS="20", LOCUST_SPAWN_RATE="20", LOCUST_RUN_ID="ck",
        LOCUST_USER_CLASSES="AlbumsFastHttpUser",
    )  # fmt: skip
    for key in ("LOCUST_RUN_TIME", "LOCUST_WAIT_TIME"):  # the knee sets its own run time; no think time
        env.pop(key)
    res = run_on_stack("knee", "--rates", "20 20 5 40", env=env, timeout=400)
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = tmp_path / "results" / "ck"
    run = openmodel.load(run_dir)
    assert run.summary.arrival_rate == "20; 20@5s; 40@0s; 40@5s"
    assert len(run.summary.per_worker) == 2, run.summary.per_worker
    started = [w.started for w in run.summary.per_worker.values()]
    assert min(started) == pytest.approx(max(started), rel=0.1), run.summary.per_worker
    assert run.summary.dropped_iterations == 0, run.summary
    k = openmodel.open_model_knee(run)
    assert k is not None and k.failed() is None and k.rate == 40, k.steps  # every step held
    assert k.steps["achieved_rate"].tolist() == pytest.approx([20, 40], rel=0.01)
    report = (run_dir / "analysis" / "report.html").read_text()
    assert "No knee up to 40/s: every step held" in report
