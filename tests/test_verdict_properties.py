"""The bottleneck verdict never contradicts the numbers it was computed from.

Hypothesis draws thousands of run.json-like inputs (CPU figures, target figures, totals, measured
pacing of one to three user classes, the --wait-time option, Locust's rate and latency), judges each,
and checks every verdict against its own inputs; a contradiction is shrunk to its smallest run. Plus
the issue's staging case: a class with its own `wait_time = constant(0.02)` run with the default option.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from typing import Any

import pytest
from harness import ROOT, free_port, locust_cmd, run_locust
from hypothesis import given, settings
from hypothesis import strategies as st
from runs import manifest, only_run
from verdicts import judge

from swarmbench.core import bottleneck
from swarmbench.core import bottleneck as V
from swarmbench.core.loadspec import DEFAULT_WAIT_TIME
from swarmbench.core.manifest import RunManifest, VerdictInputs

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

CASES = 5000
"""Examples of the property: as many as the seeded loop it replaced drew."""
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


def maybe(values: st.SearchStrategy) -> st.SearchStrategy:
    """VALUES, or the field absent from run.json (None)."""
    return st.none() | values


def rounded(low: float, high: float, places: int) -> st.SearchStrategy[float]:
    return st.floats(low, high).map(lambda x: round(x, places))


def log_uniform(low_exp: float, high_exp: float, places: int | None = None) -> st.SearchStrategy[float]:
    """10 ** x, x from LOW_EXP to HIGH_EXP: rates and latencies over several orders of magnitude."""
    return st.floats(low_exp, high_exp).map(lambda x: round(10**x, places) if places is not None else 10**x)


# Strategies are built once, here: Hypothesis validates each new one, which (built per example
# inside the composites) cost more than judging the run.
PRESENT = st.booleans()
"""Whether an optional section is in run.json (absent: None)."""
SHARE = st.floats(0, 1)
"""A fraction of a bound drawn inside an example (a strategy with that bound would be a new one)."""
COUNTS = st.just(0) | st.integers(1, 100) | st.integers(100, 200_000)
"""A request count: none, a handful, or a real run's thousands."""
FAILED = st.sampled_from(["none", "all", "any", "half", "half and one"])
DURATIONS = maybe(rounded(1, 120, 3))
TARGET_CPUS = st.sampled_from([None, 1, 2, 4])
TARGET_LIMITS = maybe(st.sampled_from([0.25, 0.5, 1.5, 2.0]))
LAG_P99S = log_uniform(-1, 2.5, places=3)
LAG_MEDIANS = maybe(log_uniform(-1, 3, places=1))
HOST_CPUS = maybe(st.fixed_dictionaries({"mean_percent": rounded(0, 100, 1), "cpus": st.just(2)}))
USERS = maybe(st.integers(1, 500))
WAIT_TIMES = st.sampled_from(SPECS)
RATES = maybe(log_uniform(-1, 4))
"""Locust's requests/s or mean latency (ms), as the plugin passes them, or none."""
NEAR_THE_CAP = st.floats(0.5, 1.5)
"""The waits a run took over those its classes' pacing allows in its duration (see runs())."""


MEAN_PERCENTS = rounded(0, 100, 1)
WORKER_LIMITS = maybe(st.sampled_from([0.15, 0.5, 1.0, 2.0]))


@st.composite
def workers(draw: st.DrawFn) -> dict:
    """A worker's CPU: a share of a core, and (a newer harness) of its container's limit."""
    mean = draw(MEAN_PERCENTS)
    limit = draw(WORKER_LIMITS)
    if limit is None:
        return {"mean_percent": mean}
    return {
        "mean_percent": mean,
        "cpu_limit": {"cpus": limit},
        "mean_percent_of_limit": round(mean / min(1, limit), 1),
    }


WORKERS = st.lists(workers(), max_size=3)
PACINGS = maybe(
    st.lists(
        st.fixed_dictionaries(
            {
                "users": st.integers(0, 300),
                "waits": st.just(0) | st.integers(1, 10) | st.integers(10, 500_000),
                "mean_wait_s": st.just(0.0) | rounded(0, 0.1, 6) | rounded(0, 5, 6),
                "wait_time_option_used": st.booleans(),
                "open_loop": st.booleans(),
            }
        ),
        min_size=1,
        max_size=3,
    ).map(lambda classes: {f"User{i}": c for i, c in enumerate(classes)})
)
"""run.json's `pacing`: one to three user classes, as measured where the users ran."""


@st.composite
def runs(draw: st.DrawFn) -> tuple[dict, float | None, float | None]:
    """A run.json-like dict, Locust's rps and mean latency (either may be absent)."""
    duration = draw(DURATIONS)
    pacing = draw(PACINGS)
    if pacing and duration and draw(PRESENT):
        # As many waits as the pacing allows in the duration, give or take: the measured rate near
        # its cap, where the load-bound rule decides (drawn independently, 1 run in 700 was there).
        share = draw(NEAR_THE_CAP)
        for c in pacing.values():
            if c["mean_wait_s"] > 0:
                c["waits"] = min(500_000, max(1, round(c["users"] / c["mean_wait_s"] * duration * share)))
    requests = draw(COUNTS)
    failed = draw(FAILED)
    if failed == "any":
        failures = round(draw(SHARE) * requests)
    else:
        half = requests // 2
        failures = {"none": 0, "all": requests, "half": half, "half and one": half + 1}[failed]
    cpus = draw(TARGET_CPUS)
    target = {
        "cpus": cpus,
        "cpu_seconds": draw(SHARE) * (duration or 10) * (cpus or 1) * 1.1,
        "cpu_limit": draw(TARGET_LIMITS),
    }
    lag = {"worst_p99_ms": draw(LAG_P99S), "median_response_ms": draw(LAG_MEDIANS)}
    run = {
        "duration_s": duration,
        "totals": {"requests": requests, "failures": failures} if draw(PRESENT) else None,
        "worker_cpu": {"per_worker": draw(WORKERS)},
        "target": target if draw(PRESENT) else None,
        "generator_lag": lag if draw(PRESENT) else None,
        "host_cpu": draw(HOST_CPUS),
        "users": draw(USERS),
        "wait_time": draw(WAIT_TIMES),
        "pacing": pacing,
    }
    return run, draw(RATES), draw(RATES)


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
    limits += [bottleneck.LAG_FLOOR_MS, bottleneck.LAG_SHARE_OF_P50]
    limits.append(bottleneck.bound_ms(inputs.get("generator_lag_median_ms")))
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
    seen: Counter[str] = Counter()

    # A @given function inside the test: the property holds for every example, and (below, once
    # they have all run) the examples together reached every verdict.
    @settings(max_examples=CASES, deadline=None)
    @given(runs())
    def each(case: tuple[dict, float | None, float | None]) -> None:
        run, rps, avg = case
        result = judge(run, rps=rps, avg_ms=avg)
        check(result)
        seen[result["verdict"]] += 1

    each()
    # The strategy reaches every verdict, so each rule above was exercised.
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


@pytest.mark.alone  # a bottleneck verdict: the whole machine's CPU
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


@pytest.mark.alone  # a bottleneck verdict: the whole machine's CPU
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
