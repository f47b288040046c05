"""Open-model load (--arrival-rate), the pure parts: the stage grammar and the rate it offers, the
runner's check of the settings, counts and exact HDR merges across workers, and the open-model
verdict (core/loadspec.py, core/openmodel.py, swarmbench/latency/histogram.py, core/bottleneck.py). The real
Locust runs are in test_open_model.py.
"""

from __future__ import annotations

import json
import random

import pytest

from swarmbench.analysis import openmodel as open_analysis
from swarmbench.core import folder
from swarmbench.core.bottleneck import judge_open
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import UsageError
from swarmbench.core.loadspec import parse_arrival_rate, parse_duration
from swarmbench.core.manifest import OpenCapacity, RunManifest
from swarmbench.core.openmodel import ArrivalCounts, summarize
from swarmbench.latency.histogram import LatencyBook
from swarmbench.runner.settings import check_arrival as check_settings

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

# --- the grammar ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "at", "rate"),
    [
        ("100", 12.0, 100.0),
        ("100/s", 0.0, 100.0),
        ("50; 100@30s", 15.0, 75.0),
        ("50; 100@30s", 31.0, 100.0),
        ("50; 100@30s; 400@60s", 60.0, 250.0),
        ("100@10s", 2.5, 25.0),
        ("50; 50@30s; 200@0s; 200@1m", 29.0, 50.0),
        ("50; 50@30s; 200@0s; 200@1m", 30.0, 200.0),
        ("10; 0@500ms", 1.0, 0.0),
    ],
)
def test_schedule_rate_follows_the_stages(spec, at, rate):
    assert parse_arrival_rate(spec).rate_at(at) == pytest.approx(rate)


@pytest.mark.parametrize("spec", ["100", "50; 100@30s; 400@60s", "100@10s", "10; 0@5s; 300@2s", "7; 3@4s"])
def test_time_at_inverts_the_iteration_count(spec):
    """The scheduler fires the n-th iteration at time_at(n); iterations() integrates the rate."""
    s = parse_arrival_rate(spec)
    for n in [0.5, 1, 7, 33.3, 100, 500, 1234]:
        t = s.time_at(n)
        assert s.iterations(t) == pytest.approx(n, rel=1e-9), (spec, n, t)
    # 50/s for 30 s then a ramp to 100/s over 30 s: 1500 + 2250 iterations in the first minute
    assert parse_arrival_rate("50; 50@30s; 100@30s").iterations(60) == pytest.approx(3750)


def test_a_schedule_ending_at_zero_never_offers_more():
    s = parse_arrival_rate("10; 0@2s")  # 10 iterations in 2 s, then nothing
    assert s.iterations(100) == pytest.approx(10)
    assert s.time_at(11) == float("inf")


BAD_SCHEDULES = {
    "": "empty arrival rate",
    "fast": "stage 1 'fast': 'fast' is not a rate",
    "10; 20": "stage 2 '20': only the first stage may omit",
    "10;": "stage 2 '': empty stage",
    "10; 20@3x": "'3x' is not a duration",
    "-5": "must be between 0 and",
    "nan": "must be between 0 and",
    "0; 0@10s": "every rate is 0",
}
"""A malformed --arrival-rate -> words its one-line error must contain."""


@pytest.mark.parametrize(("spec", "words"), BAD_SCHEDULES.items())
def test_bad_schedules_name_the_stage(spec, words):
    with pytest.raises(ValueError) as e:
        parse_arrival_rate(spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_runner_checks_the_settings_before_anything_starts():
    check_settings({"LOCUST_ARRIVAL_RATE": "50; 100@30s", "LOCUST_ARRIVAL_MAX_WAIT": "500ms"})
    check_settings({})
    with pytest.raises(UsageError, match="LOCUST_ARRIVAL_RATE: invalid arrival rate '100@soon'"):
        check_settings({"LOCUST_ARRIVAL_RATE": "100@soon"})
    with pytest.raises(UsageError, match="LOCUST_ARRIVAL_MAX_WAIT='-1s'"):
        check_settings({"LOCUST_ARRIVAL_RATE": "100", "LOCUST_ARRIVAL_MAX_WAIT": "-1s"})
    assert parse_duration("1.5m") == 90 and parse_duration("250ms") == 0.25 and parse_duration("3") == 3


# --- counts and HDR merges --------------------------------------------------------------------------


def test_counts_from_two_workers_add_up():
    a, b = ArrivalCounts(), ArrivalCounts()
    for i in range(250):
        a.record(i // 100, started=True)
        b.record(i // 100, started=i % 10 != 0)
    a.cover(0.1), a.cover(2.6), b.cover(0.2), b.cover(2.4)
    b.exhaustion_events = 25
    total_ = ArrivalCounts()
    for part in (a, b):
        total_.add_report(json.loads(json.dumps(part.to_report())))  # the report crosses a wire
    assert (total_.scheduled, total_.started, total_.dropped) == (500, 475, 25)
    assert total_.rows() == [[0, 200, 190, 10], [1, 200, 190, 10], [2, 100, 95, 5]]
    assert total_.span == [0.1, 2.6]
    out = summarize("200", parse_arrival_rate("200"), total_, pool=10)
    assert out.window_s == 2.5 and out.offered_rate == 200
    assert out.achieved_rate == 190 and out.dropped_iterations == 25
    assert out.max_dropped_per_s == 10 and out.pool_exhaustion_events == 25


def test_hdr_merge_of_two_workers_equals_the_histogram_of_all_samples(tmp_path):
    rng = random.Random(12)
    everything, workers = LatencyBook(), [LatencyBook(), LatencyBook()]
    for i in range(20_000):
        name = rng.choice(["GET /albums", "GET /albums/{id}", "POST /albums"])
        ms = rng.lognormvariate(1.0, 1.2) + (2_000 * rng.random() if i % 500 == 0 else 0)  # a long tail
        for kind, value in (("service", ms), ("intended", ms + rng.expovariate(0.5))):
            everything.record(name.split()[0], name, kind, value)
            workers[i % 2].record(name.split()[0], name, kind, value)
    shipped = [json.loads(json.dumps(w.take())) for w in workers]  # each worker's report, over a wire
    assert not workers[0] and not workers[1], "take() must start the next report from zero"
    merged = LatencyBook()
    for report in shipped:  # what the master does
        merged.merge(report)
    assert merged.hists.keys() == everything.hists.keys()
    for key, hist in everything.hists.items():
        assert list(merged.hists[key].counts) == list(hist.counts), key  # every bucket
    assert merged.rows() == everything.rows()
    # ... and as two run folders' JSON files that an analysis merges
    runs = [tmp_path / "run1", tmp_path / "run2"]
    for run_dir, report in zip(runs, shipped, strict=True):
        run_dir.mkdir()
        part = LatencyBook()
        part.merge(report)
        (run_dir / folder.LATENCY_HDR_JSON).write_text(json.dumps(part.to_json()))
    assert open_analysis.merged_latency(runs).rows() == everything.rows()
    assert LatencyBook.read(runs[0] / folder.LATENCY_HDR_JSON).rows() != everything.rows()
    agg = [r for r in everything.rows() if r["name"] == AGGREGATED]
    assert [r["kind"] for r in agg] == ["service", "intended"] and agg[0]["count"] == 20_000
    for r in agg:  # 3 significant digits, and never a percentile above the max (Locust's can be)
        assert r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"] <= r["p99.9_ms"] <= r["p99.99_ms"] <= r["max_ms"]


def judged(dropped_ratio: float, first: float, last: float, **run: object) -> OpenCapacity:
    om = {"offered_rate": 100, "scheduled_rate": 100, "achieved_rate": 100 * (1 - dropped_ratio)}
    om["dropped_ratio"] = dropped_ratio
    om.update(intended_p99_first_third_ms=first, intended_p99_last_third_ms=last)
    return judge_open(RunManifest.from_json({"open_model": om, "duration_s": 20.0, **run}))


def test_open_verdict_capacity_and_what_limited_it():
    assert judged(0.002, 10.0, 14.0).capacity_reached is False  # held: few drops, flat latency
    assert judged(0.0, 3.0, 9.0).capacity_reached is False  # 3x, but 6 ms: noise, not a queue
    growing = judged(0.0, 120.0, 1100.0)
    assert growing.capacity_reached and growing.by == "neither", growing
    assert "120 -> 1100 ms" in growing.reason
    late = judge_open(
        RunManifest.from_json(
            {"open_model": {"offered_rate": 4000, "scheduled_rate": 3520, "dropped_ratio": 0.0}}
        )
    )
    assert late.capacity_reached and late.by == "generator CPU" and "3520 of 4000" in late.reason
    busy_worker = {"worker_cpu": {"per_worker": [{"id": "w1", "mean_percent": 97.0}]}}
    assert judged(0.05, 10.0, 10.0, **busy_worker).by == "generator CPU"
    busy_target = {"target": {"cpu_seconds": 36.0, "cpus": 2}}  # 36 s of 2 CPUs in 20 s: 90 %
    v = judged(0.05, 10.0, 10.0, **busy_target)
    assert v.by == "target CPU" and "5.0% dropped" in v.reason and "90%" in v.reason, v
