"""Exact latency in the analysis (analysis/exact.py): tables, lines over time, knee steps and the
distribution chart from the HDR histograms of real runs (tests/fixtures/exact, made by
make_exact_fixtures.py); old folders say rounded; a corrupt windows file stops the report."""

from __future__ import annotations

import csv
import random
import shutil
from pathlib import Path

import pytest
from harness import assert_one_line_error
from hdrh.histogram import HdrHistogram

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import EXACT, ROUNDED, distribution, merge_books, merge_histograms
from swarmbench.analysis.knee import FIRST_WINDOW, STOP_WINDOW, steps
from swarmbench.analysis.plots import TICKS, configuration_lines, distribution_figure
from swarmbench.analysis.report import render_charts
from swarmbench.analysis.runs import load_run, load_runs
from swarmbench.analysis.summary import summarize
from swarmbench.analysis.timeseries import run_series
from swarmbench.latency.histogram import LatencyBook, new_histogram

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

HERE = Path(__file__).parent
EXACT_RUNS = HERE / "fixtures" / "exact"
STEP = EXACT_RUNS / "step"
REPEATS = [EXACT_RUNS / "repeat-1", EXACT_RUNS / "repeat-2"]
OLD_RUN = next((HERE / "fixtures" / "analysis" / "sweep").iterdir())
PCTS = {C.P50_MS: 50.0, C.P90_MS: 90.0, C.P95_MS: 95.0, C.P99_MS: 99.0, C.P999_MS: 99.9}


def windows_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "locust_latency_windows.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["kind"] == "service"]


def merged(texts) -> HdrHistogram:
    hist = new_histogram()
    for text in texts:
        hist.add(HdrHistogram.decode(text.encode("ascii")))
    return hist


def ms(hist: HdrHistogram, p: float) -> float:
    return round(hist.get_value_at_percentile(p) / 1000, 3)


# --- merging: a known answer ------------------------------------------------------------------------


def test_merged_percentiles_equal_the_percentiles_of_all_samples():
    # Below 2,048 µs a 3-digit HDR histogram keeps every integer exactly, so the merged percentile
    # must be the nearest-rank sample: sorted[round(p/100 * N)] (1-based), hdrh's rule.
    rng = random.Random(7)
    samples = [[rng.randint(1, 2047) for _ in range(n)] for n in (311, 1000, 57)]
    parts = []
    for part in samples:
        hist = new_histogram()
        for v in part:
            hist.record_value(v)
        parts.append(hist)
    total = merge_histograms(parts)
    every = sorted(v for part in samples for v in part)
    assert total.get_total_count() == len(every)
    for p in (50, 90, 95, 99, 99.9, 100):
        rank = max(1, int(p / 100 * len(every) + 0.5))
        assert total.get_value_at_percentile(p) == every[rank - 1], p
    assert total.get_max_value() == every[-1]


def test_repeats_merge_losslessly_into_one_book():
    books = [LatencyBook.read(run / "locust_latency_hdr.json") for run in REPEATS]
    both = merge_books(books)
    # Independently: every window histogram of both runs added up.
    rows = [r for run in REPEATS for r in windows_rows(run) if r["name"] != "Aggregated"]
    expect = merged(r["hdr"] for r in rows)
    total = both.aggregated("service")
    assert total.get_total_count() == expect.get_total_count() == sum(int(r["count"]) for r in rows)
    for p in PCTS.values():
        assert ms(total, p) == ms(expect, p)


# --- tables -----------------------------------------------------------------------------------------


def test_tables_say_exact_and_equal_the_histogram_percentiles():
    summary = summarize(load_runs([STEP], history=False))
    with open(STEP / "locust_latency_hdr.csv", newline="") as f:
        written = {(r["type"], r["name"]): r for r in csv.DictReader(f) if r["kind"] == "service"}
    assert len(summary) == len(written) == 4
    for got in summary.to_dict("records"):
        assert got[C.LATENCY] == EXACT
        want = written[(got[C.METHOD], got[C.ENDPOINT_NAME])]
        for col in (C.P50_MS, C.P90_MS, C.P95_MS, C.P99_MS, C.P999_MS, C.MAX_MS):
            assert got[col] == float(want[col]), (got[C.ENDPOINT_NAME], col)


def test_old_folders_say_rounded_and_keep_locusts_numbers():
    summary = summarize([load_run(OLD_RUN, history=False)])
    assert set(summary[C.LATENCY]) == {ROUNDED}
    with open(OLD_RUN / "locust_stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert summary[C.P90_MS].tolist() == [float(r["90%"]) for r in rows]
    assert summary[C.P999_MS].tolist() == [float(r["99.9%"]) for r in rows]
    assert run_series(load_run(OLD_RUN))[C.LATENCY].eq(ROUNDED).all()


# --- over time and the knee ---------------------------------------------------------------------------


def test_over_time_lines_equal_the_per_window_values():
    series = run_series(load_run(STEP))
    assert series.attrs["pct_window"] == EXACT and series[C.LATENCY].eq(EXACT).all()
    assert series.attrs["window_s"] == 1  # a local run: one 1 s file window per line window
    by_window = {(r["name"], int(r["window_s"])): r for r in windows_rows(STEP)}
    agg = series[series[C.ENDPOINT] == C.AGGREGATED]
    file_values = sorted(float(r["p95_ms"]) for (name, _), r in by_window.items() if name == "Aggregated")
    matched = 0
    for p50, p95, p99 in zip(agg[C.P50_MS], agg[C.P95_MS], agg[C.P99_MS], strict=True):
        hits = [r for (name, _), r in by_window.items() if name == "Aggregated" and float(r["p95_ms"]) == p95]
        assert any(float(r["p50_ms"]) == p50 and float(r["p99_ms"]) == p99 for r in hits), p95
        matched += 1
    assert matched == len(agg) and matched >= len(file_values) - 2  # the history covers ~every window


def test_a_knee_steps_p95_equals_its_merged_windows():
    table = steps(load_run(STEP))
    assert table is not None and len(table) == 4 and table[C.LATENCY].eq(EXACT).all()
    rows = [r for r in windows_rows(STEP) if r["name"] == "Aggregated"]
    for step in table.itertuples(index=False):
        first, stop = getattr(step, FIRST_WINDOW), getattr(step, STOP_WINDOW)
        inside = [r for r in rows if first <= int(r["window_s"]) < stop]
        assert len(inside) == stop - first > 1
        hist = merged(r["hdr"] for r in inside)
        assert step.p95_ms == ms(hist, 95) and step.p50_ms == ms(hist, 50)
        # ... which is no average of the windows' own p95s (the method the old code would imply)
        mean = sum(float(r["p95_ms"]) for r in inside) / len(inside)
        assert step.p95_ms != pytest.approx(mean, abs=1e-3)


# --- the distribution chart ------------------------------------------------------------------------------


def test_distribution_chart_has_percentile_axes_and_one_line_per_configuration():
    runs = load_runs([STEP, *REPEATS], history=False)
    from swarmbench.analysis.report import configurations

    configs = configurations(runs)
    assert sorted(len(r) for _, r in configs) == [1, 2]  # the two repeats are one configuration
    lines = configuration_lines(configs, C.AGGREGATED)
    fig = distribution_figure(lines, C.AGGREGATED)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "latency (ms)"
    assert "percentile" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == list(TICKS.values())
    assert list(TICKS.values()) == ["50 %", "90 %", "99 %", "99.9 %", "99.99 %"]
    assert len(ax.get_lines()) == 2 and any("2 runs merged" in line.get_label() for line in ax.get_lines())
    # The merged line is the two runs' histograms added up: its p99 is theirs together.
    repeat_line = next(line for line in lines if "merged" in line.label)
    together = merge_books(LatencyBook.read(r / "locust_latency_hdr.json") for r in REPEATS)
    assert ms(repeat_line.hist, 99) == ms(together.aggregated("service"), 99)
    curve = distribution(repeat_line.hist)
    assert (
        curve["ms"].is_monotonic_increasing
        and curve["ms"].iloc[-1] == repeat_line.hist.get_max_value() / 1000
    )
    charts = [
        c for c in render_charts(runs, summarize(runs), []) if c.filename.startswith("latency_distribution")
    ]
    assert {c.filename for c in charts} >= {"latency_distribution_Aggregated.png"} and len(charts) == 4


def test_old_folders_get_no_distribution_chart():
    runs = [load_run(OLD_RUN, history=False)]
    assert not [c for c in render_charts(runs, summarize(runs), []) if "distribution" in c.filename]


# --- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "row"),
    [
        (lambda lines: lines.__setitem__(5, lines[5].replace(",service,", ",service,many,", 1)), 6),
        (lambda lines: lines.__setitem__(9, lines[9].rsplit(",", 1)[0] + ",HISTFAAAAbroken\n"), 10),
        (lambda lines: lines.__setitem__(len(lines) - 1, lines[-1][:20]), None),
    ],
    ids=["text-as-count", "corrupt-histogram", "cut-off"],
)
def test_corrupt_windows_file_is_one_line_exit_2_nothing_overwritten(tmp_path, analysis_cli, damage, row):
    run = shutil.copytree(STEP, tmp_path / "run")
    path = run / "locust_latency_windows.csv"
    lines = path.read_text().splitlines(keepends=True)
    damage(lines)
    path.write_text("".join(lines))
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("previous")
    (out / "scaling.json").write_text("previous")
    want = f"row {row if row is not None else len(lines)}"
    proc = analysis_cli("report", run, "-o", out)
    assert_one_line_error(proc, str(path), want)
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "scaling.json"]
    assert (out / "report.html").read_text() == "previous"
