"""`python -m swarmbench ab` (make ab) with LOCAL=1: real short runs of the real Go target, a Locust
master and a worker, interleaved A B B A, then compared.

A/A gives exit 0, a noise-floor table and the calibration file with the A side; ALBUMS_DELAY 2 ms
against 12 ms gives p50 regressed and exit 3; two hosts (A_HOST/B_HOST) are compared like two
staging deploys. Bad settings: one line, exit 2, nothing created.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from harness import free_port, interrupt_when, interruptible, run_module

from swarmbench.runner.ab import schedule

QUIET = pytest.mark.quiet  # verdicts on real runs' latency: run alone (make test-py)

SHORT = {
    "LOCAL": "1",
    "REPEATS": "1",
    "RUN_TIME": "5s",
    "LOCUST_USERS": "4",
    "LOCUST_WAIT_TIME": "constant 0.05",
}
"""One 5 s run a side, 4 light users: the shortest runs that still have windows to resample. The A/A
test asks for 3 repeats x 6 s: with 2 a side, each side's spread rests on one degree of freedom and
one CI run called 2 of 24 metrics `improved` on identical settings."""


def _env(results: Path, binary: Path | None, **settings: str) -> dict[str, str]:
    env = {**os.environ, **SHORT, "SWARMBENCH_RESULTS": str(results), "AB_ID": "ab", **settings}
    if binary:
        env["SWARMBENCH_TARGET_BIN"] = str(binary)
    return env


def ab(results: Path, binary: Path | None, timeout: float = 300, **settings: str):
    res = run_module("swarmbench", "ab", env=_env(results, binary, **settings), timeout=timeout)
    return res.returncode, with_failed_logs(res.stdout + res.stderr), results / "ab"


def with_failed_logs(printed: str) -> str:
    """PRINTED with the end of each failed run's log after it: what an assertion shows when a run
    failed where it should not (CI's temporary folders are gone by the time anyone reads them)."""
    for log in re.findall(r"^swarmbench ab: run .* failed: .*\(its log: (.+)\)$", printed, re.M):
        tail = Path(log).read_text(errors="replace").splitlines()[-60:] if Path(log).is_file() else []
        printed += f"\n--- the end of {log}:\n" + "\n".join(line[:300] for line in tail)
    return printed


def verdicts(folder: Path) -> dict[tuple[str, str], dict]:
    data = json.loads((folder / "compare" / "compare.json").read_text())
    return {(r["name"], r["metric"]): r for r in data["results"]}


def test_schedule_interleaves_a_b_b_a():
    assert [p.id for p in schedule(3)] == ["a1", "b1", "b2", "a2", "a3", "b3"]
    assert [p.repeat for p in schedule(2)] == [1, 1, 2, 2]


@QUIET
def test_a_a_reports_the_noise_floor_and_stores_the_calibration(albums_binary, tmp_path):
    # 3 repeats a side, as test_compare_runs.py's A/A: with 2, each side's run-to-run spread rests on
    # one degree of freedom, and 2 of 24 metrics came out `improved` in one CI run of four.
    code, printed, root = ab(tmp_path, albums_binary, A="ALBUMS_DELAY=2ms", REPEATS="3", RUN_TIME="6s")
    assert code == 0, printed
    assert sorted(p.name for p in (root / "A").iterdir()) == ["a1", "a2", "a3", "compare-noise.json"]
    assert sorted(p.name for p in (root / "B").iterdir()) == ["b1", "b2", "b3"]
    noise = json.loads((root / "A" / "compare-noise.json").read_text())
    assert set(noise["noise"]) >= {"throughput", "p50", "p95"} and len(noise["runs"]) == 6
    assert "noise floor (A/A)" in printed and "floor, 3 vs 3 runs" in printed, printed
    floor = json.loads((root / "compare" / "noise-floor.json").read_text())
    for metric in ("throughput", "p50", "p95"):
        row = floor["metrics"][metric]
        # The floor is at least the band, and one run per side never sees finer than 3 per side.
        assert row["floor_repeats"] >= 0.05 and row["floor_single"] >= 0.05, row
    assert {r["verdict"] for r in verdicts(root).values()} <= {"no change", "inconclusive"}, printed
    # A later compare against the A side finds and uses the calibration.
    res = run_module("swarmbench", "compare", root / "A" / "a1", root / "B" / "b1", "-o", tmp_path / "later")
    assert f"run-to-run noise ({root / 'A' / 'compare-noise.json'})" in res.stdout, res.stdout + res.stderr


@QUIET
def test_a_b_ten_more_milliseconds_is_a_regression(albums_binary, tmp_path):
    # One run a side (the A/A test covers repeats): 10 ms is far above any noise.
    code, printed, root = ab(
        tmp_path,
        albums_binary,
        A="ALBUMS_DELAY=2ms",
        B="ALBUMS_DELAY=12ms",
        REPEATS="1",
        COMPARE_ARGS="--metrics p50,throughput --min-effect 4",
    )
    assert code == 3, printed
    options = json.loads((root / "compare" / "compare.json").read_text())["options"]
    assert options["metrics"] == ["p50", "throughput"] and options["min_effect"] == 0.04, options
    assert {metric for _, metric in verdicts(root)} == {"p50", "throughput"}
    p50 = verdicts(root)[("Aggregated", "p50")]
    # 10 ms more sleep measures as 10 ms or a little more (CI [10.1, 10.7] seen in CI): the CI
    # sits near +10 ms, far above the band.
    assert p50["verdict"] == "regressed" and p50["ci"][0] >= 7 and p50["ci"][1] <= 14, printed
    assert sorted(p.name for p in (root / "B").iterdir()) == ["b1"]
    assert not (root / "A" / "compare-noise.json").exists()  # A/B never writes a calibration


@QUIET
def test_a_budget_buys_pairs_and_stops_early_once_the_change_is_decided(albums_binary, tmp_path):
    # 10 ms against 30 ms of service time, looked at after every pair: decided at the first look
    # (pair 3) or soon after, long before the pairs the 3-minute budget buys (~20 s a pair here).
    code, printed, root = ab(
        tmp_path,
        albums_binary,
        A="ALBUMS_DELAY=10ms",
        B="ALBUMS_DELAY=30ms",
        BUDGET="3m",
        RUN_TIME="3s",
        COMPARE_ARGS="--metrics p50,p95 --names Aggregated",
    )
    assert code == 3, printed
    seq = _state(root)["sequential"]
    done = seq["looks"][-1]["pairs"]
    assert seq["stopped"] == "decided" and seq["budget_s"] == 180, seq
    assert 3 <= done < seq["max_pairs"], seq  # it stopped early
    assert "pair 1/" in printed and "pair 2/" in printed and "the first look is at pair 3" in printed
    # One line per look: what it could catch now, per gated metric, and the time to decide.
    lines = re.findall(r"pair \d+/\d+: catches now p50 ±[\d.]+%, p95 ±[\d.]+%; .*", printed)
    assert len(lines) == done - 2 and lines[-1].endswith("decided (p50 regressed, p95 regressed)"), printed
    assert sorted(p.name for p in (root / "B").iterdir()) == [f"b{i}" for i in range(1, done + 1)]
    found = json.loads((root / "compare" / "compare.json").read_text())
    assert found["sequential"]["decided"] and found["sequential"]["pairs"] == done
    assert {r["metric"]: r["verdict"] for r in found["results"]} == {"p50": "regressed", "p95": "regressed"}
    assert "sequential: stopped at the look at pair" in (root / "compare" / "compare.txt").read_text()
    # The same AB_ID again: the sequence ended, nothing runs; compared again (the first kept).
    again = run_module("swarmbench", "ab", env=_env(tmp_path, albums_binary, BUDGET="3m", RUN_TIME="3s",
        A="ALBUMS_DELAY=10ms", B="ALBUMS_DELAY=30ms", COMPARE_ARGS="--metrics p50,p95 --names Aggregated"),
        timeout=60)  # fmt: skip
    assert again.returncode == 3 and "the sequence ended (decided)" in again.stderr, again.stderr[-2000:]
    assert (root / "compare-2" / "compare.json").is_file()


@QUIET
def test_two_hosts_are_compared_like_two_staging_deploys(two_hosts, tmp_path):
    fast, slow = two_hosts
    code, printed, root = ab(tmp_path, None, A_HOST=fast.url, B_HOST=slow.url, REPEATS="1", RUN_TIME="8s")
    assert code == 3, printed
    data = json.loads((root / "compare" / "compare.json").read_text())
    hosts = next(s for s in data["settings_differ"] if s["setting"] == "host")
    assert (hosts["baseline"], hosts["candidate"]) == (fast.url, slow.url)
    assert verdicts(root)[("Aggregated", "p50")]["verdict"] == "regressed", printed


def test_a_failed_run_says_why_and_where_its_log_is(albums_target, tmp_path):
    """B's host refuses connections: B's run fails, and the line that says so names the log its
    processes wrote (the reason is one line of it; the rest is what a user reads next)."""
    dead = f"http://127.0.0.1:{free_port()}"
    code, printed, root = ab(tmp_path, None, A_HOST=albums_target.url, B_HOST=dead, RUN_TIME="3s")
    assert code != 0, printed
    line = next(x for x in printed.splitlines() if x.startswith("swarmbench ab: run B/b1 failed: "))
    assert "unreachable" in line and line.endswith(f"(its log: {root / '.logs' / 'b1.log'})"), line
    assert "unreachable" in (root / ".logs" / "b1.log").read_text()
    assert (root / "A" / "a1" / "run.json").is_file(), "A's run is kept"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (dict(A="ALBUMS_STORE"), "A: 'ALBUMS_STORE' is not NAME=value"),
        (dict(B="ALBUMS_STORE=fast"), "B: ALBUMS_STORE='fast' is not one of"),
        (dict(A="LOCUST_USERS=3"), "A: LOCUST_USERS is the load"),
        (dict(A="ALBUMS_DELAY=1ms ALBUMS_DELAY=2ms"), "A: ALBUMS_DELAY is set twice"),
        (dict(A="X='open"), 'A="X=\'open": No closing quotation'),
        (dict(B_HOST="http://127.0.0.1:9"), "B_HOST without A_HOST"),
        (dict(A_HOST="ftp://example.com"), "A_HOST='ftp://example.com' is not an http"),
        (dict(A_HOST="http://127.0.0.1:9", A="ALBUMS_DELAY=1ms"), "choose one"),
        (dict(REPEATS="0"), "REPEATS='0' must be at least 1"),
        (dict(RUN_TIME="5q"), "RUN_TIME='5q' is not a duration"),
        (dict(AB_ID="../up"), "AB_ID='../up' is not a folder name"),
        (
            dict(COMPARE_ARGS="--min-effect x"),
            "COMPARE_ARGS='--min-effect x': argument --min-effect: invalid",
        ),
        (dict(COMPARE_ARGS="-o elsewhere"), "COMPARE_ARGS='-o elsewhere': -o is set by make ab"),
        (dict(COMPARE_ARGS="--metrics p50"), "an A/A run's noise floor takes --min-effect"),
        (dict(A="ALBUMS_DELAY=1ms", B="ALBUMS_DELAY=2ms", COMPARE_ARGS="--metrics p51"), "unknown p51"),
        (dict(COMPARE_ARGS="'open"), 'COMPARE_ARGS="\'open": No closing quotation'),
        (dict(A="ALBUMS_DELAY=1ms", B="ALBUMS_DELAY=2ms", BUDGET="5q"), "BUDGET='5q' is not a duration"),
        (dict(A="ALBUMS_DELAY=1ms", BUDGET="1m"), "BUDGET with an A/A run"),
        (
            dict(A="ALBUMS_DELAY=1ms", B="ALBUMS_DELAY=2ms", COMPARE_ARGS="--sequential 5"),
            "--sequential (BUDGET) is set by make ab",
        ),
        (
            dict(A="ALBUMS_DELAY=1ms", B="ALBUMS_DELAY=2ms", COMPARE_ARGS="--noise no-such-noise.json"),
            "COMPARE_ARGS='--noise no-such-noise.json': --noise: no-such-noise.json:",
        ),
    ],
)
def test_bad_settings_are_one_line_and_nothing_runs(tmp_path, settings, expected):
    code, printed, _ = ab(tmp_path, None, timeout=30, **settings)
    lines = printed.strip().splitlines()
    assert code == 2 and len(lines) == 1 and expected in lines[0], printed
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_never_overwritten(tmp_path):
    (tmp_path / "ab").mkdir()
    code, printed, _ = ab(tmp_path, None, timeout=30)
    assert code == 2 and "exists and holds no ab.json to resume; choose another AB_ID" in printed, printed
    assert list((tmp_path / "ab").iterdir()) == []


def test_interrupt_keeps_finished_runs_and_the_same_ab_id_resumes(albums_binary, tmp_path):
    # Not quiet: what it asserts is the state kept and resumed; its one verdict is 2 ms against 12.
    settings = dict(A="ALBUMS_DELAY=2ms", B="ALBUMS_DELAY=12ms", RUN_TIME="4s")
    env = {**os.environ, **SHORT, "SWARMBENCH_RESULTS": str(tmp_path), "AB_ID": "ab", **settings}
    env["SWARMBENCH_TARGET_BIN"] = str(albums_binary)
    root = tmp_path / "ab"
    proc = interruptible([sys.executable, "-m", "swarmbench", "ab"], env)
    # Ctrl-C during b1: once a1 is recorded done and b1 has its folder
    err = interrupt_when(
        proc, lambda: (root / "B" / "b1").exists() and _state(root).get("counts", {}).get("done") == 1, "b1"
    )
    assert proc.returncode == 130 and "Resume: the same settings and AB_ID=ab" in err, err
    state = _state(root)
    assert state["state"] == "interrupted", state
    assert [(p["id"], p["status"]) for p in state["points"]] == [("a1", "done"), ("b1", "interrupted")]
    assert not (root / "B" / "b1").exists() and (root / "B" / ".aborted" / "b1-1").is_dir()
    assert not (root / "compare").exists()
    a1 = (root / "A" / "a1" / "run.json").stat().st_mtime_ns

    other = run_module("swarmbench", "ab", env={**env, "B": "ALBUMS_DELAY=13ms"}, timeout=30)
    lines = (other.stdout + other.stderr).strip().splitlines()
    assert other.returncode == 2 and len(lines) == 1, lines
    assert "holds an A/B run with other settings (sides differ)" in lines[0], lines

    res = run_module("swarmbench", "ab", env=env, timeout=180)
    assert res.returncode == 3, res.stderr[-3000:]
    assert "1 of 2 runs" in res.stderr, res.stderr
    assert (root / "A" / "a1" / "run.json").stat().st_mtime_ns == a1, "a finished run was rerun"
    assert _state(root)["state"] == "complete"
    assert verdicts(root)[("Aggregated", "p50")]["verdict"] == "regressed"

    again = run_module("swarmbench", "ab", env=env, timeout=120)  # nothing to run: compare again
    assert again.returncode == 3 and "all 2 runs already done" in again.stderr, again.stderr[-3000:]
    assert (root / "compare-2" / "compare.json").is_file()  # the first comparison is kept


def _state(root: Path) -> dict:
    try:
        return json.loads((root / "ab.json").read_text())
    except (OSError, ValueError):  # not written yet, or being replaced
        return {}
