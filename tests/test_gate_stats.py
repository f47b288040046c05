"""The gate's statistics (swarmbench/compare/history_stats.py) on synthetic data with a known answer:
the whole gate's false-alarm rate over many seeds (10 request names + Aggregated, every metric, log-
normal noise), its power at the change it says it would catch, one bad run among 20, failures as
counts (one failure in main's newest run does not empty the baseline), and degenerate inputs
(constant, zero, NaN, too few runs). The gate as the store and the command line give it:
test_history_trend.py, test_history_cli.py; the rates at more seeds: bench/bench_gate_truth.py."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from history_runs import at_mean, history, stored
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmbench.compare import history_stats as hs
from swarmbench.compare.trend import TAIL_MIN, gate_outcome, tail_rests_on
from swarmbench.core.checks import AGGREGATED, IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED, verdict
from swarmbench.history import open_store

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

NAMES = [*(f"GET /n{k}" for k in range(10)), AGGREGATED]
FIGURES = ("throughput", "p50", "p90", "p95", "p99")
ALPHAS = hs.row_alphas(NAMES, (*FIGURES, "error_rate"), 0.05)
SEEDS = 200


def gate_fails(rng: np.random.Generator, noise: float, *, bad_run: bool = False, shift: float = 1.0) -> bool:
    """One synthetic gate: 20 past runs and a candidate, every figure of every name log-normal with
    relative NOISE; BAD_RUN: one past run 40 % slower in every figure; the candidate's latencies
    times SHIFT. Does any row read `regressed` (exit 3)?"""
    x = 100 * np.exp(noise * rng.standard_normal((21, len(NAMES), len(FIGURES))))
    if bad_run:
        x[rng.integers(20)] *= 1.4
    x[20, :, 1:] *= shift
    for j, name in enumerate(NAMES):
        for k, metric in enumerate(FIGURES):
            d = hs.log_difference(hs.level(x[:20, j, k]), [x[20, j, k]], ALPHAS[(name, metric)])
            if verdict(metric, d, 0.05) == REGRESSED:
                return True
    return False


def test_the_shares_sum_to_the_gates_alpha() -> None:
    assert sum(ALPHAS.values()) == pytest.approx(0.05)
    assert sum(a for (n, _), a in ALPHAS.items() if n == AGGREGATED) == pytest.approx(0.025)
    assert hs.row_alphas(["GET /x"], ["p95"], 0.05) == {("GET /x", "p95"): 0.05}
    assert hs.row_alphas([AGGREGATED], ["p95", "p99"], 0.05) == {
        (AGGREGATED, "p95"): 0.025,
        (AGGREGATED, "p99"): 0.025,
    }


@pytest.mark.parametrize("noise", [0.03, 0.10])
def test_an_unchanged_run_fails_the_whole_gate_rarely(noise: float) -> None:
    """55 rows of figures (and 11 of failures) at 5 % for the whole gate: at most 5 % of unchanged
    candidates fail it (measured 0 % at 3 % noise, ~1 % at 10 %: the band and Bonferroni are
    conservative). The per-row 95 % CIs of before failed 37 % of them at 10 % noise."""
    rng = np.random.default_rng(int(noise * 1000))
    failed = sum(gate_fails(rng, noise) for _ in range(SEEDS))
    assert failed / SEEDS <= 0.05, failed


def test_one_bad_run_neither_blinds_the_gate_nor_fails_it() -> None:
    """One past run at +40 % among 20 (3 % noise): it is left out, so a +15 % candidate fails the
    gate (>= 80 %; measured 100 %) and an unchanged one passes (>= 90 %; measured 100 %)."""
    rng = np.random.default_rng(40)
    caught = sum(gate_fails(rng, 0.03, bad_run=True, shift=1.15) for _ in range(SEEDS // 2))
    spared = sum(not gate_fails(rng, 0.03, bad_run=True) for _ in range(SEEDS // 2))
    assert caught / (SEEDS // 2) >= 0.80 and spared / (SEEDS // 2) >= 0.90, (caught, spared)
    past = 100 * np.exp(0.03 * np.random.default_rng(1).standard_normal(20))
    past[-1] *= 1.4  # main's newest run: not its baseline either
    level = hs.level(past)
    assert level is not None and level.left_out == 1 and abs(level.center - math.log(100)) < 0.03


def test_the_change_it_would_catch_is_caught_nine_times_in_ten() -> None:
    """detectable(): the shift that one new run's verdict calls regressed (CI above 0, estimate beyond
    the band) with probability 0.9 (normal approximation, the SD taken as known); simulated with the
    SD estimated each time: 0.9 ± 0.04."""
    rng = np.random.default_rng(9)
    alpha = ALPHAS[(AGGREGATED, "p95")]
    reference = hs.level(100 * np.exp(0.02 * rng.standard_normal(200)))
    assert reference is not None
    shift = hs.detectable(dataclasses.replace(reference, n=20, df=19, spread=0.02), 1, alpha, 0.05, True)
    assert 0.07 < shift < 0.11  # max(log(1.05), t x 2 % x √(1 + 1/20)) + z(0.9) x 2 % x √(1 + 1/20)
    calls = 0
    for _ in range(2000):
        x = 100 * np.exp(0.02 * rng.standard_normal(21))
        d = hs.log_difference(hs.level(x[:20]), [x[20] * (1 + shift)], alpha)
        calls += verdict("p95", d, 0.05) == REGRESSED
    assert abs(calls / 2000 - 0.90) < 0.04, calls
    fall = hs.detectable(dataclasses.replace(reference, n=20, df=19, spread=0.02), 1, alpha, 0.05, False)
    assert fall == pytest.approx(math.expm1(-math.log1p(shift)))  # throughput: the same, falling


def test_failures_are_judged_as_counts(tmp_path: Path) -> None:
    """20 clean runs, then one failure in main's newest: the baseline is 1 failure in 20 x ~1,000
    requests, not an empty column; a candidate with 2 % failures is `regressed` (exit 3), a clean
    one is not."""
    runs = history(21, 0.01, seed=2)
    last = runs[-1]
    runs[-1] = dataclasses.replace(
        last,
        stats=tuple(
            dataclasses.replace(s, failures=1) if s.name in (AGGREGATED, "GET /albums") else s
            for s in last.stats
        ),  # fmt: skip
    )
    path = stored(tmp_path / "h.sqlite", runs)
    clean = at_mean(path, runs[-1])
    failing = dataclasses.replace(clean, stats=tuple(
        dataclasses.replace(s, failures=round(0.02 * s.requests)) for s in clean.stats))  # fmt: skip
    with open_store(path) as store:
        bad, _ = gate_outcome(store, [failing])
        good, _ = gate_outcome(store, [clean])
    assert bad is not None and good is not None
    rates = {r.name: r for r in bad.rows if r.metric == "error_rate"}
    assert rates[AGGREGATED].verdict == REGRESSED and rates[AGGREGATED].d.low > 0.001
    assert rates[AGGREGATED].d.baseline == pytest.approx(1 / sum(
        s.requests for r in runs[-20:] for s in r.stats if s.name == AGGREGATED))  # fmt: skip
    assert good.count(REGRESSED) == 0 and bad.detectable["error_rate"] > 0
    # Newcombe's own example (1998, method 10): 56/70 against 48/80, 95 %: [0.0524, 0.3339]
    d = hs.count_difference(48, 80, 56, 70, 0.025)
    assert (d.low, d.high) == (pytest.approx(0.0524, abs=1e-4), pytest.approx(0.3339, abs=1e-4))
    zero = hs.count_difference(0, 20_000, 0, 1_000, 0.001)
    assert zero.diff == 0 and zero.low <= 0 < zero.high < 0.02  # no failures: a finite, honest interval


def test_degenerate_inputs_give_finite_answers() -> None:
    constant = np.full(20, 50.0)
    level = hs.level(constant)
    assert level is not None and level.spread == hs.SD_FLOOR  # the floor, not 0
    assert verdict("p95", hs.log_difference(level, [50.0], 0.001), 0.05) == NO_CHANGE
    assert verdict("p95", hs.log_difference(level, [50.5], 0.001), 0.05) == NO_CHANGE  # +1 %: in the band
    assert verdict("p95", hs.log_difference(level, [55.0], 0.001), 0.05) == REGRESSED
    assert verdict("throughput", hs.log_difference(level, [40.0], 0.001), 0.05) == REGRESSED
    assert verdict("throughput", hs.log_difference(level, [60.0], 0.001), 0.05) == IMPROVED
    tiny = hs.level(np.full(20, 0.002))  # 2 µs: the 1 µs quantum is half of it
    assert tiny is not None and tiny.spread == pytest.approx(0.5)
    zeros = hs.level(np.zeros(20))
    assert zeros is not None and math.isfinite(zeros.center) and math.isfinite(zeros.spread)
    with_nan = np.array([50.0, math.nan] * 10)
    assert hs.level(with_nan).used == 10  # a run without the figure is no part of the sample
    assert hs.level(with_nan[:9]).used == 5 and hs.level(with_nan[:8]) is None  # 4: under MIN_RUNS
    d = hs.log_difference(None, [50.0], 0.01)
    assert math.isnan(d.low) and verdict("p95", d, 0.05) == INCONCLUSIVE
    d = hs.log_difference(level, [math.nan], 0.01)
    assert math.isnan(d.low) and math.isnan(d.candidate)
    assert math.isnan(hs.count_difference(0, 0, 1, 10, 0.01).low)


def test_identical_stored_runs_are_a_level_not_a_division_by_zero(tmp_path: Path) -> None:
    """20 identical runs through a real SQLite store (float64: the figures come back as they went
    in): the same run again is `no change` in every latency and throughput row (the SD floor gives
    a CI of a few tenths of a percent), +10 % on p95 is `regressed`, +1 % is not."""
    runs = history(20, 0.0)
    path = stored(tmp_path / "h.sqlite", runs)
    same = at_mean(path, runs[-1])
    with open_store(path) as store:
        outcome, _ = gate_outcome(store, [same])
        assert outcome is not None and outcome.noise["p95"] == hs.SD_FLOOR
        # A name with ~260 requests leaves 2 beyond p99 and 13 beyond p95, fewer than TAIL_MIN:
        # shown, not judged, and named in the header; Aggregated's p95 (~50 beyond) is judged.
        tails = {
            (r.name, r.metric) for r in outcome.rows if r.metric.startswith("p") and r.verdict == INCONCLUSIVE
        }
        assert {m for _, m in tails} >= {"p99"}
        assert all(f"{n} {m} (" in outcome.notes[0] for n, m in tails), outcome.notes
        requests = {s.name: s.requests for s in same.stats}
        percentile_rows = {(r.name, r.metric) for r in outcome.rows if r.metric.startswith("p")}
        assert tails == {(n, m) for n, m in percentile_rows if tail_rests_on(m, requests[n]) < TAIL_MIN}
        judged = {
            r.verdict for r in outcome.rows if r.metric != "error_rate" and (r.name, r.metric) not in tails
        }
        assert judged == {NO_CHANGE}
        assert ("Aggregated", "p95") not in tails
        for factor, expected in ((1.10, REGRESSED), (1.01, NO_CHANGE)):
            moved = dataclasses.replace(same, stats=tuple(
                dataclasses.replace(s, p95_ms=s.p95_ms * factor) for s in same.stats))  # fmt: skip
            found, _ = gate_outcome(store, [moved])
            assert found is not None
            assert {
                r.verdict for r in found.rows if r.metric == "p95" and (r.name, r.metric) not in tails
            } == {expected}, factor


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.5, 2000), min_size=5, max_size=25),
    st.floats(0.2, 4000),
    st.sampled_from([1e-4, 4e-3, 0.025]),
    st.sampled_from(["p95", "throughput"]),
)
def test_the_printed_interval_is_the_one_the_verdict_was_read_from(past, new, alpha, metric) -> None:
    """The CI in the metric's unit is the log-scale CI mapped back: the verdict read from it (the
    band against it, as the table shows) is the log-scale test's, and the relative change printed
    lies inside it."""
    level = hs.level(past)
    assert level is not None
    d = hs.log_difference(level, [new], alpha)
    half, _ = hs.half_width(level, 1, alpha)
    shift = math.log(max(new, hs.QUANTUM)) - level.center
    edge = math.log1p(0.05) if metric == "p95" else -math.log1p(-0.05)
    sign = 1 if metric == "p95" else -1
    near, point = sign * shift - half, sign * shift  # the CI's near end and the estimate, worse > 0
    if abs(near) > 1e-9 and abs(point - edge) > 1e-9:  # ASV's rule (core/checks.py verdict)
        assert (verdict(metric, d, 0.05) == REGRESSED) == (near > 0 and point > edge)
    assert d.low <= d.diff <= d.high and d.baseline > 0
