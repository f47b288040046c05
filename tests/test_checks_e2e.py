"""Thresholds end to end: real Locust processes against the real Go target, then the real compose
stack (`make headless`), reading the exit code, the console lines, junit.xml and run.json.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from harness import run_locust
from make_runs import compose_env, make
from runs import only_run

JUNIT_XML = "junit.xml"
THRESHOLDS_BROKEN_EXIT = 3
"""The contract (see swarmbench/plugin/checks.py), restated: the tests must not import Locust (gevent)."""

FAST = ["--wait-time", "constant 0.05", "-u", "5", "-r", "5", "-t", "4s", "AlbumsHttpUser"]
FAIL_LINE = re.compile(r"^swarmbench: check FAIL p95<1 \(Aggregated\): measured ([\d.]+) ms \(exact\)$", re.M)


def junit(run_dir: Path) -> tuple[ET.Element, dict[str, ET.Element]]:
    suite = ET.parse(run_dir / JUNIT_XML).getroot().find("testsuite")
    assert suite is not None
    return suite, {c.get("name"): c for c in suite.findall("testcase")}


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


# --- a local Locust process ----------------------------------------------------------------------


def test_impossible_threshold_exits_3_and_reports_it(albums_target, tmp_path):
    res = run_locust(
        "--headless", "-H", albums_target.url, *FAST, "--results-dir", str(tmp_path), "--check", "p95<1"
    )
    assert res.returncode == THRESHOLDS_BROKEN_EXIT == 3, res.stderr[-2000:]
    m = FAIL_LINE.search(res.stdout)
    assert m, res.stdout[-2000:]
    measured = float(m[1])
    assert measured >= 1
    assert "swarmbench: 1 of 1 thresholds broken (exit code 3)" in res.stdout

    run_dir = only_run(tmp_path)
    suite, cases = junit(run_dir)
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    failure = cases["p95<1"].find("failure")
    assert failure is not None and failure.get("message") == f"measured {m[1]} ms (exact), limit < 1 ms"

    man = manifest(run_dir)
    assert man["exit_code"] == 3 and man["checks_passed"] is False
    assert man["checks"] == [
        {"expr": "p95<1", "name": "Aggregated", "metric": "p95", "op": "<", "limit": 1.0,
         "measured": measured, "passed": False, "exact": True},
    ]  # fmt: skip


def test_generous_thresholds_pass_and_junit_shows_them(albums_target, tmp_path):
    exprs = ["p50<5000", "p95<10000", "GET /albums/{id}:p99<=20000", "POST /albums:fail_ratio<=0", "rps>=1"]
    env = {"LOCUST_CHECKS": ";".join(exprs)}
    res = run_locust("--headless", "-H", albums_target.url, *FAST, "--results-dir", str(tmp_path), env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert len(re.findall(r"^swarmbench: check PASS ", res.stdout, re.M)) == len(exprs)
    assert "swarmbench: check FAIL" not in res.stdout

    run_dir = only_run(tmp_path)
    suite, cases = junit(run_dir)
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (str(len(exprs)), "0", "0")
    assert list(cases) == exprs
    assert all(c.find("failure") is None for c in cases.values())
    man = manifest(run_dir)
    assert man["checks_passed"] is True and man["exit_code"] == 0
    assert [c["expr"] for c in man["checks"]] == exprs
    assert all(c["passed"] and c["measured"] is not None for c in man["checks"])


def test_conf_file_thresholds(albums_target, tmp_path):
    conf = tmp_path / "ci.conf"
    conf.write_text("checks = p95<10000; fail_ratio<0.5\n")
    results = tmp_path / "results"
    res = run_locust(
        "--config", str(conf), "--headless", "-H", albums_target.url, *FAST, "--results-dir", str(results)
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert [c["expr"] for c in manifest(only_run(results))["checks"]] == ["p95<10000", "fail_ratio<0.5"]


def test_no_thresholds_no_junit(albums_target, tmp_path):
    res = run_locust("--headless", "-H", albums_target.url, *FAST, "--results-dir", str(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    run_dir = only_run(tmp_path)
    assert not (run_dir / JUNIT_XML).exists()
    assert "checks" not in manifest(run_dir)


@pytest.mark.parametrize(
    ("how", "message"),
    [
        (["--check", "p80<300"], "'p80<300': unknown metric 'p80'"),
        ({"LOCUST_CHECKS": "p95<300;GET /albums:p99 500"}, "'GET /albums:p99 500': no comparison operator"),
    ],
)
def test_malformed_threshold_exits_2_before_the_test_starts(albums_target, tmp_path, how, message):
    args, env = (how, None) if isinstance(how, list) else ([], how)
    results = tmp_path / "results"
    res = run_locust(
        "--headless",
        "-H",
        albums_target.url,
        *FAST,
        "--results-dir",
        str(results),
        *args,
        env=env,
        timeout=30,
    )
    assert res.returncode == 2
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("swarmbench: error:")]
    assert len(errors) == 1 and errors[0].startswith("swarmbench: error: --check/LOCUST_CHECKS: "), res.stderr
    assert message in errors[0]
    assert "Ramping to" not in res.stderr
    assert not results.exists() or not any(results.iterdir()), "a run folder was left behind"
    assert 'route="GET /albums"' not in albums_target.metrics(), "requests were sent"


# --- the compose stack ---------------------------------------------------------------------------


@pytest.mark.docker
def test_make_headless_with_an_impossible_threshold(docker_compose, tmp_path):
    res = make("headless", env=compose_env(tmp_path, LOCUST_CHECKS="p95<1"))
    out = res.stdout + res.stderr
    # make exits 2 for any failed recipe; it names the recipe's own exit code in its message.
    assert res.returncode == 2, out[-3000:]
    assert "[Makefile:" in out and f"headless] Error {THRESHOLDS_BROKEN_EXIT}" in out, out[-3000:]
    # exact: the workers' histograms reached the master (the image has the latency modules)
    assert re.search(r"check FAIL p95<1 \(Aggregated\): measured [\d.]+ ms \(exact\)", out), out[-3000:]
    run_dir = only_run(tmp_path / "results")
    suite, cases = junit(run_dir)
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    assert cases["p95<1"].find("failure").get("message").startswith("measured ")
    man = manifest(run_dir)
    assert man["mode"] == "distributed" and man["checks_passed"] is False and man["exit_code"] == 3
