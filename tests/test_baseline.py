"""`--baseline DIR` on headless/staging runs (BASELINE=DIR make headless|staging).

The headless runner needs Docker, so these tests exercise the code it calls after the run,
runner/ab.py compare_with_baseline(run folder, baseline, run's exit code), on real local runs
of the real target; and the CLI's validation of --baseline/BASELINE, which happens before Docker is
ever asked for (a bad baseline costs a second, not a run).
"""

from __future__ import annotations

import json
import os

import pytest
from harness import run_against, run_module

from swarmbench.core import exits
from swarmbench.runner.ab import SUFFIX, compare_with_baseline

# Verdicts on real runs' latency: run alone (make test-py). A bad baseline's one line is not timed.
QUIET = pytest.mark.quiet

LOAD = ["-t", "6s", "-u", "4", "-r", "4", "--wait-time", "constant 0.05", "AlbumsHttpUser"]


@pytest.fixture(scope="module")
def runs(albums_binary, tmp_path_factory):
    root = tmp_path_factory.mktemp("baseline")
    return {
        "main": run_against(albums_binary, root / "main", "main-1", LOAD, ALBUMS_DELAY="2ms"),
        "same": run_against(albums_binary, root / "pr", "pr-same", LOAD, ALBUMS_DELAY="2ms"),
        "slow": run_against(albums_binary, root / "pr", "pr-slow", LOAD, ALBUMS_DELAY="12ms"),
    }


@QUIET
def test_a_slower_run_fails_the_build_and_the_run_folder_is_kept(runs):
    before = sorted(p.name for p in runs["slow"].iterdir())
    code = compare_with_baseline(runs["slow"], runs["main"])
    assert code == exits.THRESHOLDS_BROKEN
    out = runs["slow"].parent / f"pr-slow{SUFFIX}"
    data = json.loads((out / "compare.json").read_text())
    p50 = next(r for r in data["results"] if r["name"] == "Aggregated" and r["metric"] == "p50")
    assert p50["verdict"] == "regressed"
    assert sorted(p.name for p in runs["slow"].iterdir()) == before  # nothing written into the run


@QUIET
def test_an_identical_run_passes(runs):
    assert compare_with_baseline(runs["same"], runs["main"]) == exits.OK
    data = json.loads((runs["same"].parent / f"pr-same{SUFFIX}" / "compare.json").read_text())
    assert data["verdicts"]["regressed"] == 0


@QUIET
def test_a_run_that_failed_is_not_compared(runs, tmp_path):
    fake = tmp_path / "r"
    fake.mkdir()
    assert compare_with_baseline(fake, runs["main"], exits.RUN_FAILED) == exits.RUN_FAILED
    assert not (tmp_path / f"r{SUFFIX}").exists()


@QUIET
def test_thresholds_broken_stays_the_runs_code(runs):
    """The run's own non-zero code wins (it is what the run's junit.xml says); the comparison is
    still written next to it."""
    assert compare_with_baseline(runs["same"], runs["main"], exits.THRESHOLDS_BROKEN) == 3


@pytest.mark.parametrize(
    ("how", "value", "expected"),
    [
        ("flag", "{tmp}/missing", "is not a folder"),
        ("env", "{tmp}/missing", "is not a folder"),
        ("env", "{tmp}", "is not a run folder"),
    ],
)
def test_a_bad_baseline_is_one_line_before_anything_runs(tmp_path, how, value, expected):
    value = value.format(tmp=tmp_path)
    env = {**os.environ, "SWARMBENCH_RESULTS": str(tmp_path / "results"), "PATH": "/usr/bin:/bin"}
    args = ["headless", "--staging"]
    env["LOCUST_HOST"] = "https://staging.example.com"
    if how == "flag":
        args += ["--baseline", value]
    else:
        env["BASELINE"] = value
    res = run_module("swarmbench", *args, env=env, timeout=30)
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and expected in lines[0], res.stdout + res.stderr
    assert "BASELINE=" in lines[0] and not (tmp_path / "results").exists()
