"""The history's answers (swarmbench/compare/trend.py) on a real SQLite store: the trend finds a known
step and names its first run; the gate (gate_outcome, what `swarmbench compare --history` prints)
judges a new run against main's runs before it, since their last change, with compare's verdicts.
The runs are a real run folder's, their figures scaled by a known noise and step (history_runs.py);
the engines themselves are tested in test_history_store.py, the command line in test_history_cli.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from history_runs import at_mean, base_run, history, scaled, stored

from swarmbench.compare import triage
from swarmbench.compare.trend import GATE_METHOD, GATE_MIN_RUNS, TAIL_MIN, gate_outcome, tail_rests_on, trend
from swarmbench.core.checks import AGGREGATED, IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED
from swarmbench.history import RunData, open_store

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

STEP_AT, RUNS = 25, 40
STEPPED = ("GET", "GET /albums")  # its p99 rises 10 % from run STEP_AT on
JUDGED = ("GET", "GET /albums/{id}")  # 514 requests a run: 25 beyond p95, so the gate judges its p95


def p99_step(i: int) -> dict[tuple[str, str, str], float]:
    return {(*STEPPED, "p99_ms"): 1.10} if i >= STEP_AT else {}


@pytest.fixture
def runs() -> list[RunData]:
    return history(RUNS, 0.01, seed=3, step=p99_step)


@pytest.fixture
def store_path(tmp_path: Path, runs: list[RunData]) -> Path:
    return Path(stored(tmp_path / "h.sqlite", runs))


def verdicts(store_path: Path, run: RunData, **options) -> dict[tuple[str, str], str]:
    with open_store(store_path) as store:
        outcome, _ = gate_outcome(store, [run], **options)
    assert outcome is not None
    return {(r.name, r.metric): r.verdict for r in outcome.rows}


def test_the_trend_finds_the_step_and_its_first_run(store_path: Path) -> None:
    with open_store(store_path) as store:
        (config,) = store.configurations()
        changes = trend(store, config)
    stepped = [c for c in changes if (c.type, c.name, c.metric) == (*STEPPED, "p99_ms")]
    assert len(stepped) == 1 and abs(stepped[0].point.index - STEP_AT) <= 1
    assert stepped[0].run.run_id == f"r{stepped[0].point.index}"
    assert 7 < stepped[0].point.change_percent < 13
    # 27 flat series of 40 runs at ~3 % false change points each (test_trend_stats): ~1 expected,
    # 4 or more would be 1 % likely
    assert len(changes) - 1 <= 3


def test_the_gate_calls_the_bad_side_regressed_and_the_good_side_improved(
    store_path: Path, runs: list[RunData]
) -> None:
    new = at_mean(store_path, runs[-1])
    unchanged = verdicts(store_path, new)
    errors = {unchanged.pop((name, "error_rate")) for name, _ in list(unchanged) if _ == "throughput"}
    # ~260 requests a name: a p99 rests on 2 of them and a p95 on 13, fewer than trend.TAIL_MIN:
    # shown, not judged; GET /albums/{id}'s 514 leave 25 beyond its p95, which is judged
    tails = {k: unchanged.pop(k) for k in list(unchanged) if k[1][0] == "p" and unchanged[k] == INCONCLUSIVE}
    assert ("POST /albums", "p99") in tails and ("POST /albums", "p95") in tails
    assert (JUDGED[1], "p95") not in tails
    assert set(unchanged.values()) == {NO_CHANGE}, unchanged  # at the baseline's mean: inside the band
    # no failure in ~260 requests cannot rule out a rate above the band (0.1 pp) at a row's 99.9 %
    assert errors == {INCONCLUSIVE}
    for metric, stored_as, factor, expected in (
        ("p95", "p95_ms", 1.12, REGRESSED), ("p95", "p95_ms", 0.88, IMPROVED),
        ("throughput", "rps", 0.85, REGRESSED), ("throughput", "rps", 1.15, IMPROVED),
    ):  # fmt: skip
        moved = scaled(new, 100, {(*JUDGED, stored_as): factor}, run_id="moved")
        found = verdicts(store_path, moved)
        assert found.pop((JUDGED[1], metric)) == expected, (metric, factor)
        judged = {v for k, v in found.items() if k[1] != "error_rate" and k not in tails}
        assert judged == {NO_CHANGE}, (metric, factor, found)


def test_the_outcome_names_its_baseline_method_and_noise(store_path: Path, runs: list[RunData]) -> None:
    with open_store(store_path) as store:
        outcome, comparable = gate_outcome(store, [at_mean(store_path, runs[-1])])
    assert comparable == RUNS and outcome is not None
    assert outcome.baseline == [r.run_id for r in runs[-20:]] and outcome.candidate == ["new"]
    assert outcome.method == GATE_METHOD and "±t(df)·s·√(1+1/n)" in outcome.method
    assert 0.005 < outcome.noise["p95"] < 0.02  # the Aggregated p95's learned SD, of 1 % noise
    assert 0.05 < outcome.detectable["p95"] < 0.12 and outcome.detectable["throughput"] < -0.05
    assert outcome.names.common[-1] == AGGREGATED and len(outcome.names.common) == 4


def test_a_stored_run_is_judged_against_the_runs_before_it(store_path: Path, runs: list[RunData]) -> None:
    with open_store(store_path) as store:
        outcome, comparable = gate_outcome(store, [runs[STEP_AT - 1]])
        assert comparable == STEP_AT - 1 and outcome is not None
        assert outcome.baseline == [r.run_id for r in runs[STEP_AT - 21 : STEP_AT - 1]]
        early, comparable = gate_outcome(store, [runs[GATE_MIN_RUNS - 1]])
        assert (early, comparable) == (None, GATE_MIN_RUNS - 1)  # too few before it: no verdict


def test_only_an_accepted_change_resets_the_baseline(tmp_path: Path) -> None:
    """p95 +20 % in the last 5 of 40 runs: not accepted, those 5 are outliers of the last 20 (18
    SDs off) and a run at the new level is a regression; accepted (their first run's key), the
    baseline is those 5 runs and it is not. Accepted 2 runs ago: the 2 runs' centre, the noise of
    both sides: not a regression either, and a run at the old level is no regression. (p95: these
    runs' 514 requests of GET /albums/{id} leave 25 beyond p95 and 5 beyond p99; the gate judges a
    percentile with trend.TAIL_MIN or more.)"""
    runs = history(RUNS, 0.01, seed=3, step=lambda i: {(*JUDGED, "p95_ms"): 1.20} if i >= RUNS - 5 else {})
    path = Path(stored(tmp_path / "h.sqlite", runs))
    new = at_mean(path, runs[-1], n=5)
    assert verdicts(path, new)[(JUDGED[1], "p95")] == REGRESSED
    assert verdicts(path, new, accepted=[runs[-5].run_key])[(JUDGED[1], "p95")] != REGRESSED
    recent = at_mean(path, runs[-1], n=2)
    assert verdicts(path, recent, accepted=[runs[-2].run_key])[(JUDGED[1], "p95")] != REGRESSED
    assert verdicts(path, recent, accepted=["unknown@run"])[(JUDGED[1], "p95")] == REGRESSED
    old_level = scaled(new, 100, {(*JUDGED, "p95_ms"): 1 / 1.20}, run_id="old")
    assert verdicts(path, old_level, accepted=[runs[-5].run_key])[(JUDGED[1], "p95")] != REGRESSED


def test_repeats_are_judged_together(store_path: Path, runs: list[RunData]) -> None:
    new = at_mean(store_path, runs[-1])
    rng = np.random.default_rng(9)
    slower = [{(s.type, s.name, "p95_ms"): 1.15 * (1 + 0.01 * rng.standard_normal()) for s in new.stats}
              for _ in range(3)]  # fmt: skip
    repeats = [scaled(new, 100 + k, factors, run_id=f"rep{k}") for k, factors in enumerate(slower)]
    with open_store(store_path) as store:
        outcome, _ = gate_outcome(store, repeats)
    assert outcome is not None and outcome.candidate == ["rep0", "rep1", "rep2"]
    p95 = {r.name: r.verdict for r in outcome.rows if r.metric == "p95"}
    thin = {s.name for s in new.stats if tail_rests_on("p95", s.requests) < TAIL_MIN}
    assert {v for n, v in p95.items() if n not in thin} == {REGRESSED}, p95
    assert thin and all(p95[n] == INCONCLUSIVE and f"{n} p95 (" in outcome.notes[0] for n in thin)
    other = dataclasses.replace(repeats[1], host="http://elsewhere:1")
    with open_store(store_path) as store, pytest.raises(ValueError, match="not the same load, host"):
        gate_outcome(store, [repeats[0], other])


def test_another_branch_is_no_baseline(store_path: Path, runs: list[RunData]) -> None:
    with open_store(store_path) as store:
        outcome, comparable = gate_outcome(store, [at_mean(store_path, runs[-1])], branch="feature")
    assert (outcome, comparable) == (None, 0)
    assert base_run().branch == "main"


def test_the_notebooks_frame_holds_every_run_and_name(store_path: Path, runs: list[RunData]) -> None:
    from swarmbench.analysis import history_frame

    frame = history_frame(store_path, branch="main")
    assert len(frame) == RUNS * 4 and frame["run_id"].iloc[0] == "r0"  # 3 names and Aggregated, oldest first
    p99 = frame[frame["name"] == STEPPED[1]].set_index("run_id")["p99_ms"]
    stored_p99 = {r.run_id: next(s.p99_ms for s in r.stats if s.name == STEPPED[1]) for r in runs}
    assert p99.to_dict() == pytest.approx(stored_p99)
    assert history_frame(store_path, branch="feature").empty


# --- the trend's false alarms and the check's power, on stores with a known truth ----------------

SEEDS = 30
"""Histories per known-answer test (bench/bench_trend_truth.py runs hundreds, with 10 names)."""


def drift(start: int, per: float = 0.01) -> Callable[[int], dict[tuple[str, str, str], float]]:
    """Aggregated p95 +PER a run from run START on (run START is +PER): a creeping regression."""
    return lambda i: {("", AGGREGATED, "p95_ms"): 1 + per * (i - start + 1)} if i >= start else {}


def test_flat_histories_rarely_list_a_change_or_fail_the_check(tmp_path: Path) -> None:
    """30 runs, 3 % noise, 28 series (3 names and Aggregated x 7 metrics): the trend lists a change
    point in few histories (the false discovery control is across all 28 series), and the check
    passes. Before: 1.9 % of series, so ~42 % of such histories, showed a change."""
    listed = failed = 0
    for seed in range(SEEDS):
        with open_store(stored(tmp_path / f"{seed}.sqlite", history(30, 0.03, seed=100 + seed))) as store:
            (config,) = store.configurations()
            changes, regressions = triage.check(store, config)
        listed += bool(changes)
        failed += bool(regressions)
    assert listed <= 3 and failed <= 3, (listed, failed)  # <= 10 %: measured 1 and 1


def test_a_creeping_drift_is_caught_before_it_totals_13_percent(tmp_path: Path) -> None:
    """10 flat runs, then Aggregated p95 +1 % a run: with runs 0..21 stored (+12 %) the check says
    open in nearly every history (change points absorb a drift; the level against the anchor does
    not)."""
    caught = 0
    for seed in range(SEEDS):
        runs = history(22, 0.03, seed=200 + seed, step=drift(10))
        with open_store(stored(tmp_path / f"{seed}.sqlite", runs)) as store:
            (config,) = store.configurations()
            _, regressions = triage.check(store, config)
        caught += any((r.name, r.metric) == (AGGREGATED, "p95_ms") for r in regressions)
    assert caught >= 27, caught  # >= 90 %


def test_a_renamed_name_is_analysed_over_the_runs_that_have_it(tmp_path: Path) -> None:
    """GET /albums renamed GET /v2/albums at run 20 of 40: each name's series is NaN where the other
    is. Filled forward and back, 41-54 % of such series showed a false change; left out, as rare as
    on any flat series (here at most 1 history of 10 with one: measured 1)."""
    renamed = 0
    for seed in range(10):
        runs = history(40, 0.03, seed=300 + seed)
        runs[20:] = [dataclasses.replace(r, stats=tuple(
            dataclasses.replace(s, name="GET /v2/albums") if s.name == STEPPED[1] else s for s in r.stats))
            for r in runs[20:]]  # fmt: skip
        with open_store(stored(tmp_path / f"{seed}.sqlite", runs)) as store:
            (config,) = store.configurations()
            changes = trend(store, config)
        renamed += any(c.name in (STEPPED[1], "GET /v2/albums") for c in changes)
    assert renamed <= 1


def test_accepted_runs_are_the_configurations_decisions_oldest_first(
    store_path: Path, runs: list[RunData]
) -> None:
    with open_store(store_path) as store:
        stored_runs = store.runs()
        for k in (30, 25):
            store.accept(stored_runs[k], f"level of r{k}", "test")
        first = runs[0]
        assert store.accepted(first.fingerprint, first.host, first.testbed, "main") == [
            stored_runs[25].run_key, stored_runs[30].run_key]  # fmt: skip
        (config,) = store.configurations()
        changes, regressions = triage.check(store, config)
    assert any((c.name, c.metric) == (STEPPED[1], "p99_ms") for c in changes) and regressions == []
