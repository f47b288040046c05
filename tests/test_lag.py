"""The generator's event-loop lag: percentiles, the bound, the verdict (core/bottleneck.py), the master's
book of reports (plugin/generator.py's LagBook, Locust-free)."""

from __future__ import annotations

import json
import random

import pytest
from verdicts import judge

from swarmbench.core import bottleneck
from swarmbench.core.manifest import GeneratorLag, TargetCounters, WorkerLag
from swarmbench.plugin.generator import LAG_SERIES_ROWS, LagBook

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority


def test_histogram_percentiles_are_within_five_percent_of_exact():
    rng = random.Random(7)
    samples = [rng.lognormvariate(0, 1.5) for _ in range(20_000)]
    h = bottleneck.Histogram()
    for x in samples:
        h.add(x)
    exact = bottleneck.percentiles(samples)
    got = h.summary()
    assert got["n"] == exact["n"] == 20_000 and got["max_ms"] == exact["max_ms"]
    for key in ("p50_ms", "p99_ms"):
        assert exact[key] <= got[key] <= exact[key] * 1.05 + 0.001, (key, got, exact)


def test_exact_percentiles_nearest_rank():
    assert bottleneck.percentiles([]) == {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    got = bottleneck.percentiles(float(i) for i in range(1, 101))
    assert (got["p50_ms"], got["p99_ms"], got["max_ms"]) == (50.0, 99.0, 100.0)


@pytest.mark.parametrize(
    ("p99", "median", "flagged"),
    [
        (5.0, 1.0, False),  # below the floor: timer jitter, not inflation
        (bottleneck.LAG_FLOOR_MS + 1, 2.0, True),  # above the floor and far above 10 % of a 2 ms median
        (30.0, 400.0, False),  # 30 ms late is under 10 % of a 400 ms median
        (50.0, 400.0, True),
        (None, 5.0, False),
    ],
)
def test_the_bound(p99, median, flagged):
    assert bottleneck.inflated(p99, median) is flagged


def test_judge_names_the_worst_worker_and_the_verdict_follows():
    workers = [WorkerLag(id="a", p99_ms=3.0), WorkerLag(id="b", p99_ms=80.0)]
    section = bottleneck.judge_lag(workers, median_response_ms=4.0).to_json()
    assert (section["worst_worker"], section["worst_p99_ms"], section["inflated"]) == ("b", 80.0, True)
    assert section["flag"] == bottleneck.INFLATED and section["bound_ms"] == bottleneck.LAG_FLOOR_MS
    run = {"generator_lag": section, "duration_s": 10, "totals": {"requests": 100, "failures": 0}}
    b = judge(run)
    assert b["verdict"] == "generator-bound" and b["reason"].startswith(bottleneck.INFLATED), b
    assert "p99 80 ms late" in b["reason"]
    calm = bottleneck.judge_lag([WorkerLag(id="a", p99_ms=1.5)], median_response_ms=4.0).to_json()
    assert not calm["inflated"] and calm["flag"] is None
    assert judge({**run, "generator_lag": calm})["verdict"] != "generator-bound"


def test_lag_book_keeps_a_series_per_worker_and_the_latest_whole_run_figures():
    book = LagBook()
    assert book.section(3.0) is None, "no generator reported: no section (an older worker image)"
    for t in (3.0, 6.0):
        figures = {"p50_ms": 0.2, "p99_ms": t, "max_ms": 9.0}
        book.record("w1", {"interval": {"n": 300, **figures}, "run": {"n": int(100 * t), **figures}}, t)
    book.record("w2", {"interval": {"n": 0}, "run": {"n": 0}}, 3.0)  # nothing measured yet: ignored
    s = book.section(median_response_ms=2.0).to_json()
    assert [w["id"] for w in s["per_worker"]] == ["w1"]
    assert s["per_worker"][0]["series"] == [[3.0, 0.2, 3.0, 9.0], [6.0, 0.2, 6.0, 9.0]]
    assert s["per_worker"][0]["p99_ms"] == 6.0 and s["worst_p99_ms"] == 6.0 and not s["inflated"]
    assert s["series_columns"] == ["t_s", "p50_ms", "p99_ms", "max_ms"]


def test_a_long_runs_lag_series_stays_bounded_and_keeps_the_worst_of_what_it_merges():
    """An hour of reports (1,200) from one worker: at most LAG_SERIES_ROWS rows, each covering
    reports_per_row consecutive reports; the spike in report 777 survives as a row's p99 and max, at
    the right time; the rows still tile the run in order; run.json reads back."""
    book = LagBook()
    for k in range(1, 1201):
        p99 = 50.0 if k == 777 else 1.0
        figures = {"p50_ms": float(k % 7), "p99_ms": p99, "max_ms": p99 * 2}
        book.record("w1", {"interval": {"n": 300, **figures}, "run": {"n": 300 * k, **figures}}, 3.0 * k)
    section = book.section(median_response_ms=2.0)
    [worker] = section.per_worker
    span = worker.reports_per_row
    assert LAG_SERIES_ROWS // 2 <= len(worker.series) <= LAG_SERIES_ROWS and span == 16
    assert len(worker.series) == -(-1200 // span)  # every report in one row, the last one filling
    times = [row[0] for row in worker.series]
    assert times == sorted(times) and times[-1] == 3600.0 and times[0] == 3.0 * span
    [spike] = [row for row in worker.series if row[2] == 50.0]
    assert spike[3] == 100.0 and spike[0] - 3.0 * span < 3.0 * 777 <= spike[0]
    assert all(row[1] == 6.0 for row in worker.series[:-1]), "p50: the worst of the merged reports"
    again = GeneratorLag.from_json(json.loads(json.dumps(section.to_json())))
    assert again.per_worker[0].series == worker.series and again.per_worker[0].reports_per_row == span
    short = LagBook()
    short.record("w1", {"interval": {"n": 3, "p99_ms": 1.0}, "run": {"n": 3, "p99_ms": 1.0}}, 3.0)
    assert "reports_per_row" not in short.section(2.0).to_json()["per_worker"][0], "short runs as before"


def test_cpu_share_is_judged_against_the_containers_limit():
    """A worker at 14 % of a core under a 0.15-CPU limit is saturated; the same 14 % without a
    limit is idle."""
    run = {"duration_s": 30, "totals": {"requests": 1000, "failures": 0}}
    limited = {"mean_percent": 14.0, "cpu_limit": {"cpus": 0.15}, "mean_percent_of_limit": 93.3}
    b = judge({**run, "worker_cpu": {"per_worker": [limited]}})
    assert b["verdict"] == "generator-bound" and "93 % of the CPU it may use" in b["reason"], b
    assert "limit: 0.15 CPU" in b["reason"]
    free = {"mean_percent": 14.0, "cpu_limit": {"cpus": 2.0}, "mean_percent_of_limit": 14.0}
    assert judge({**run, "worker_cpu": {"per_worker": [free]}})["verdict"] == "none"


def test_target_cpu_is_judged_against_its_limit():
    """0.24 CPU-seconds a second: idle for a 1-core GOMAXPROCS, saturated under a 0.25-CPU quota."""
    target = {"cpus": 2, "cpu_seconds": 7.2}
    assert bottleneck.target_cpu_util(TargetCounters.from_json(target), 30) == pytest.approx(0.12)
    limited = TargetCounters.from_json({**target, "cpu_limit": 0.25})
    assert bottleneck.target_cpu_util(limited, 30) == pytest.approx(0.96)
    run = {
        "duration_s": 30,
        "totals": {"requests": 1000, "failures": 0},
        "target": {**target, "cpu_limit": 0.25},
    }
    b = judge(run)
    assert b["verdict"] == "target-bound" and "of its 0.25 CPU(s)" in b["reason"], b
