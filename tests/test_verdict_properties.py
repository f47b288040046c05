"""The bottleneck verdict never contradicts the numbers it was computed from.

A seeded random generator builds thousands of run.json-like inputs (CPU figures, target figures,
totals, measured pacing of one to three user classes, the --wait-time option, Locust's rate and
latency), judges each, and checks every verdict against its own inputs. Plus the issue's staging
case: a class with its own `wait_time = constant(0.02)` run with the default option.
"""

from __future__ import annotations

import random
import re
import subprocess
from typing import Any

import pytest
from conftest import ROOT, free_port, locust_cmd, run_locust
from runs import manifest, only_run

from swarmbench.core import bottleneck
from swarmbench.core import bottleneck as V
from swarmbench.core.loadspec import DEFAULT_WAIT_TIME
from swarmbench.core.manifest import RunManifest, VerdictInputs

CASES = 5000
SPECS = [
    None,
    DEFAULT_WAIT_TIME,
    "constant 0",
    "constant 0.02",
    "constant 2",
    "throughput 3",
    "pacing 0.5",
    "bogus",
]


def _maybe(rng: random.Random, value: Any, p: float = 0.8) -> Any:
    return value if rng.random() < p else None


def _pacing(rng: random.Random) -> dict | None:
    if rng.random() < 0.3:
        return None
    return {
        f"User{i}": {
            "users": rng.randint(0, 300),
            "waits": rng.choice([0, rng.randint(1, 10), rng.randint(10, 500_000)]),
            "mean_wait_s": rng.choice([0.0, round(rng.uniform(0, 0.1), 6), round(rng.uniform(0, 5), 6)]),
            "wait_time_option_used": rng.random() < 0.5,
            "open_loop": rng.random() < 0.15,
        }
        for i in range(rng.randint(1, 3))
    }


def _worker(rng: random.Random) -> dict:
    """A worker's CPU: a share of a core, and (a newer harness) of its container's limit."""
    mean = round(rng.uniform(0, 100), 1)
    if rng.random() < 0.5:
        return {"mean_percent": mean}
    limit = rng.choice([0.15, 0.5, 1.0, 2.0])
    return {
        "mean_percent": mean,
        "cpu_limit": {"cpus": limit},
        "mean_percent_of_limit": round(mean / min(1, limit), 1),
    }


def random_run(rng: random.Random) -> tuple[dict, float | None, float | None]:
    """A run.json-like dict, Locust's rps and mean latency (either may be absent)."""
    duration = _maybe(rng, round(rng.uniform(1, 120), 3))
    requests = rng.choice([0, rng.randint(1, 100), rng.randint(100, 200_000)])
    failures = rng.choice([0, 0, requests, rng.randint(0, requests), requests // 2, requests // 2 + 1])
    cpus = rng.choice([None, 1, 2, 4])
    run = {
        "duration_s": duration,
        "totals": _maybe(rng, {"requests": requests, "failures": failures}, 0.9),
        "worker_cpu": {"per_worker": [_worker(rng) for _ in range(rng.randint(0, 3))]},
        "target": _maybe(
            rng,
            {
                "cpus": cpus,
                "cpu_seconds": rng.uniform(0, (duration or 10) * (cpus or 1) * 1.1),
                "cpu_limit": _maybe(rng, rng.choice([0.25, 0.5, 1.5, 2.0]), 0.5),
            },
        ),  # fmt: skip
        "generator_lag": _maybe(
            rng,
            {
                "worst_p99_ms": round(10 ** rng.uniform(-1, 2.5), 3),
                "median_response_ms": _maybe(rng, round(10 ** rng.uniform(-1, 3), 1)),
            },
            0.5,
        ),  # fmt: skip
        "host_cpu": _maybe(rng, {"mean_percent": round(rng.uniform(0, 100), 1), "cpus": 2}, 0.5),
        "users": _maybe(rng, rng.randint(1, 500)),
        "wait_time": rng.choice(SPECS),
        "pacing": _pacing(rng),
    }
    rps = _maybe(rng, 10 ** rng.uniform(-1, 4), 0.7)
    avg = _maybe(rng, 10 ** rng.uniform(-1, 4), 0.7)
    return run, rps, avg


def judge(run: dict, rps: float | None = None, avg_ms: float | None = None) -> dict:
    """The verdict of a run.json-like dict, in the JSON form run.json records it in."""
    return V.judge_manifest(RunManifest.from_json(run), rps=rps, avg_ms=avg_ms).to_json()


def paced_rate(inputs: dict) -> float | None:
    return V.paced_rate(VerdictInputs.from_json(inputs))


def _leaves(value: Any) -> list[float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return []


def _printable(inputs: dict) -> set[str]:
    """Every way the verdict may print a number: an input, a limit, or a ratio of two inputs, at
    0 to 4 decimals, as a share (x 100) or in ms (x 1000)."""
    rps, cap, req, fail = (
        paced_rate(inputs),
        *(inputs.get(k) for k in ("offered_rate_cap", "requests", "failures")),
    )
    limits = [V.GENERATOR_CPU_LIMIT_PCT, V.TARGET_CPU_BUSY, V.HOST_CPU_BUSY_PCT, V.TARGET_FAILED_SHARE]
    limits += [bottleneck.LAG_FLOOR_MS, bottleneck.LAG_SHARE_OF_P50, bottleneck.bound_ms(inputs.get("generator_lag_median_ms"))]
    values = _leaves(inputs) + limits
    if rps and cap:
        values += [rps / cap, cap / rps]
    if req and fail is not None:
        values.append(fail / req)
    out = set()
    for v in values:
        for scaled in (v, v * 100, v * 1000):
            out.update(f"{scaled:.{d}f}" for d in range(5))
            out.add(f"{scaled:g}")
    return out


def numbers_in(reason: str, inputs: dict) -> list[str]:
    """The numbers a reason quotes, once class names and the quoted option are taken out."""
    text = reason
    for c in inputs.get("pacing") or []:
        text = text.replace(c["name"], "")
    if inputs.get("wait_time"):
        text = text.replace(f"'{inputs['wait_time']}'", "")
    text = re.sub(r"\bp\d+\b", "", text)  # percentile names (p99) are words, not figures
    return re.findall(r"\d+(?:\.\d+)?", text)


def check(result: dict) -> None:
    verdict, reason, inputs = result["verdict"], result["reason"], result["inputs"]
    assert verdict in V.VERDICTS
    # The rate the cap bounds: requests / duration where run.json has both (V.paced_rate says why).
    rps, cap, req, fail = (
        paced_rate(inputs),
        *(inputs.get(k) for k in ("offered_rate_cap", "requests", "failures")),
    )
    ratio = fail / req if req and fail is not None else None
    gen, host, util = (
        inputs.get(k) for k in ("worker_cpu_max_mean_percent", "host_cpu_mean_percent", "target_cpu_util")
    )
    if ratio is not None and ratio >= V.TARGET_FAILED_SHARE:
        assert verdict == "target-failed"
        assert f"{fail} of {req} requests failed ({ratio:.0%}" in reason
    if verdict == "target-failed":
        assert ratio is not None and ratio >= V.TARGET_FAILED_SHARE
    if verdict == "none":
        assert ratio is None or ratio <= 0.5
    if verdict == "load-bound":
        assert rps is not None and cap
        assert V.LOAD_BOUND_SHARE * cap <= rps <= cap * (1 + V.CAP_TOLERANCE)
        assert (
            f"at most {V._rate(cap)} requests/s and the run averaged {V._rate(rps)} ({rps / cap:.0%})"
            in reason
        )
    if verdict == "target-bound":
        if "the target used" in reason:
            assert util is not None and util >= V.TARGET_CPU_BUSY
            assert f"the target used {util:.0%}" in reason
        else:
            think, avg = inputs["think_time_s"], inputs["avg_response_ms"]
            assert think and avg / 1000 >= V.LATENCY_DOMINATES * think
            assert not (cap and rps is not None and rps > cap * (1 + V.CAP_TOLERANCE))
    of_limit = inputs.get("worker_cpu_max_percent_of_limit")
    share = gen if of_limit is None else of_limit
    p99, median = inputs.get("generator_lag_p99_ms"), inputs.get("generator_lag_median_ms")
    if verdict != "target-failed" and (
        bottleneck.inflated(p99, median) or (share or 0) >= V.GENERATOR_CPU_LIMIT_PCT
    ):
        assert verdict == "generator-bound", (verdict, reason)
    if verdict == "generator-bound":
        if reason.startswith(bottleneck.INFLATED):
            assert bottleneck.inflated(p99, median) and f"woke p99 {p99:.0f} ms late" in reason
        elif "busiest load generator used" in reason:
            assert share >= V.GENERATOR_CPU_LIMIT_PCT and f"used {share:.0f} % of" in reason
            assert ("of its CPU core" in reason) == (of_limit is None), reason
        else:
            assert host >= V.HOST_CPU_BUSY_PCT and f"were {host:.0f} % busy" in reason
    if verdict in ("load-bound", "target-bound") and "think" in reason:
        for c in inputs.get("pacing") or []:
            assert ("its own wait_time" in reason) >= bool(c["own_wait_time"]), reason
    printable = _printable(inputs)
    for token in numbers_in(reason, inputs):
        assert token in printable, f"{token!r} in {reason!r} is not one of the inputs"


def test_no_verdict_contradicts_its_inputs():
    assert V.CAP_TOLERANCE <= 0.1, "a cap that may be beaten by more than 10 % is no cap"
    rng = random.Random(20261123)
    seen: dict[str, int] = {}
    for _ in range(CASES):
        run, rps, avg = random_run(rng)
        result = judge(run, rps=rps, avg_ms=avg)
        check(result)
        seen[result["verdict"]] = seen.get(result["verdict"], 0) + 1
    # The generator reaches every verdict, so each rule above was exercised.
    assert set(seen) == set(V.VERDICTS), seen


def test_measured_cap_is_per_class_and_summed():
    run = {
        "duration_s": 10.0,
        "users": 30,
        "wait_time": DEFAULT_WAIT_TIME,
        "totals": {"requests": 2000, "failures": 0},
        "pacing": {
            "Fast": {"users": 10, "waits": 1000, "mean_wait_s": 0.1, "wait_time_option_used": False},
            "Slow": {"users": 20, "waits": 1000, "mean_wait_s": 1.0, "wait_time_option_used": True},
        },
    }
    inputs = V.inputs_from_manifest(RunManifest.from_json(run)).to_json()
    assert inputs["offered_rate_cap"] == pytest.approx(10 / 0.1 + 20 / 1.0)  # 120 tasks/s, 1 request each
    assert inputs["think_time_s"] == pytest.approx(0.55)  # the waits' own mean
    classes = {c["name"]: c for c in inputs["pacing"]}
    assert classes["Fast"]["own_wait_time"] and not classes["Slow"]["own_wait_time"]


# --- the case: a class with its own wait_time, the default option ---------------------------

STAGING = {
    "duration_s": 30.0,
    "users": 20,
    "wait_time": DEFAULT_WAIT_TIME,  # the option, which the class ignores
    "totals": {"requests": 23100, "failures": 0},
    "worker_cpu": {"per_worker": [{"mean_percent": 40.0}]},
    "target": {"cpus": 2, "cpu_seconds": 6.0},
}


def test_own_wait_time_is_judged_by_the_waits_taken():
    pacing = {
        "StagingUser": {"users": 20, "waits": 23100, "mean_wait_s": 0.02, "wait_time_option_used": False}
    }
    b = judge({**STAGING, "pacing": pacing}, rps=770.0, avg_ms=5.0)
    check(b)
    assert b["verdict"] == "load-bound", b
    assert "3851%" not in b["reason"] and "at most 20 requests/s" not in b["reason"]
    assert "StagingUser (its own wait_time, measured mean wait 0.0200 s)" in b["reason"]
    assert "at most 1000 requests/s and the run averaged 770 (77%)" in b["reason"]


def test_a_rate_above_the_options_cap_is_never_load_bound():
    """A run recorded before pacing was measured: the option's cap is contradicted by the rate."""
    b = judge(STAGING, rps=770.0, avg_ms=5.0)
    check(b)
    assert b["verdict"] == "none", b
    assert (
        "770 requests/s on average, above the 20 that 20 users with --wait-time 'between 0.5 1.5'"
        in b["reason"]
    )
    assert "pacing is unknown" in b["reason"]


def test_a_class_whose_waits_were_not_seen_leaves_no_cap():
    """Users ran but never called the class's wait_time (a TaskSet with its own): no cap, so never
    load-bound, and never the option's cap in its place."""
    pacing = {"NestedUser": {"users": 20, "waits": 0, "mean_wait_s": None, "wait_time_option_used": False}}
    b = judge({**STAGING, "pacing": pacing}, rps=770.0, avg_ms=5.0)
    check(b)
    assert b["inputs"]["pacing_measured"] and b["inputs"]["offered_rate_cap"] is None
    assert b["verdict"] == "none", b


def test_a_target_that_stopped_answering_is_target_failed():
    dead = {**STAGING, "totals": {"requests": 1000, "failures": 700}}
    b = judge(dead, rps=30.0, avg_ms=1.0)
    assert b["verdict"] == "target-failed" and "700 of 1000 requests failed (70%" in b["reason"]


# --- real runs: the pacing measured where the users run -----------------------------------------------

OWN_WAIT = "tests/fixtures/pacing/own_wait_locustfile.py"


@pytest.mark.quiet
def test_real_run_measures_a_classs_own_wait_time(albums_target, tmp_path):
    """The issue's staging case on a real Locust process: default --wait-time, a class of its own."""
    res = run_locust(
        "-f", f"locustfiles/swarmbench_plugin.py,{OWN_WAIT}", "--headless", "-H", albums_target.url,
        "-u", "10", "-r", "10", "-t", "4s", "--results-dir", str(tmp_path),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    m = manifest(only_run(tmp_path))
    assert m["wait_time"] == DEFAULT_WAIT_TIME  # the option, which the class never read
    p = m["pacing"]["OwnWaitUser"]
    assert p["wait_time_option_used"] is False and p["open_loop"] is False
    assert p["users"] == 10 and p["mean_wait_s"] == pytest.approx(0.02)
    # One wait after each task, one request per task: the counts agree within the users' last task.
    assert 0 <= m["totals"]["requests"] - p["waits"] <= 10
    b = m["bottleneck"]
    check(b)
    assert b["inputs"]["offered_rate_cap"] == pytest.approx(10 / 0.02, rel=0.02)
    assert "OwnWaitUser (its own wait_time, measured mean wait 0.0200 s)" in b["reason"], b


@pytest.mark.quiet
def test_real_distributed_run_sums_each_classs_waits_over_workers(albums_target, tmp_path):
    """Two workers, two classes: one paced by --wait-time, one by its own wait_time."""
    port = str(free_port())
    classes = ("AlbumsFastHttpUser", "OwnWaitUser")
    files = f"locustfiles/albums.py,{OWN_WAIT}"
    workers = [
        subprocess.Popen(locust_cmd("-f", files, "--worker", "--master-port", port), cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(2)
    ]  # fmt: skip
    try:
        res = run_locust(
            "-f", files, "--master", "--master-bind-port", port, "--expect-workers", "2", "--headless",
            "-H", albums_target.url, "-u", "8", "-r", "8", "-t", "5s", "--wait-time", "constant 0.05",
            "--results-dir", str(tmp_path), *classes,
        )  # fmt: skip
    finally:
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
    assert res.returncode == 0, res.stderr[-2000:]
    m = manifest(only_run(tmp_path))
    fast, own = (m["pacing"][c] for c in classes)
    assert fast["wait_time_option_used"] is True and fast["mean_wait_s"] == pytest.approx(0.05)
    assert own["wait_time_option_used"] is False and own["mean_wait_s"] == pytest.approx(0.02)
    assert fast["users"] + own["users"] == 8  # each worker's users, added up by the master
    waits = fast["waits"] + own["waits"]
    assert 0 <= m["totals"]["requests"] - waits <= 8, (m["totals"], m["pacing"])
    b = m["bottleneck"]
    check(b)
    cap = fast["users"] / 0.05 + own["users"] / 0.02  # per class, summed (x requests per task, ~1)
    assert b["inputs"]["offered_rate_cap"] == pytest.approx(cap, rel=0.05)
