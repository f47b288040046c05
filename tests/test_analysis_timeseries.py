"""Throughput over time from request counts (analysis.timeseries): real histories, then synthetic ones
whose every rate is known, written in Locust's own CSV format and read through the real reader."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest
from harness import FIXTURES
from histories import step_users, write_run
from runs import EXAMPLES

from swarmbench.analysis import columns as C
from swarmbench.analysis.knee import steps
from swarmbench.analysis.runs import load_run, load_runs
from swarmbench.analysis.timeseries import (
    grids,
    report_interval_s,
    resolution_ms,
    run_series,
    timeseries_table,
    windows,
)
from swarmbench.cli import analysis_main

# The synthetic runs have no run.json: the reader warns about each.
pytestmark = [
    pytest.mark.background,
    pytest.mark.filterwarnings("ignore::swarmbench.analysis.locust_csv.AnalysisWarning"),
]


def real_runs():
    runs = load_runs([FIXTURES / "analysis" / "sweep", FIXTURES / "knee"])  # step loads too
    runs += load_runs([EXAMPLES]) if EXAMPLES.is_dir() else []
    runs += load_runs([OLD_EXAMPLES])
    return [r for r in runs if r.history is not None and len(r.history) > 1]


OLD_EXAMPLES = FIXTURES / "examples-2026-11-21"
"""A run of the example sweep recorded on a quiet machine (2026-11-21): 40 users from second 1, its
throughput steady within a few percent (today's examples were recorded beside other work)."""
REAL = real_runs()


@pytest.mark.parametrize("run", REAL, ids=lambda r: r.run_id)
def test_the_series_integrates_to_every_final_count(run):
    """sum(rps x window_s) is the run's final request and failure count, per endpoint and Aggregated."""
    series = run_series(run)
    final = run.stats.set_index(C.ENDPOINT)
    assert set(series[C.ENDPOINT]) == set(final.index)
    for endpoint, rows in series.groupby(C.ENDPOINT):
        got = (rows[C.RPS_OUT] * rows[C.WINDOW_S]).sum()
        assert got == pytest.approx(final.loc[endpoint, C.REQUESTS], abs=1e-6), endpoint
        fails = (rows[C.FAIL_PER_S_WINDOW] * rows[C.WINDOW_S]).sum()
        assert fails == pytest.approx(final.loc[endpoint, C.FAILURES], abs=1e-6), endpoint


@pytest.mark.parametrize("run", REAL, ids=lambda r: r.run_id)
def test_every_window_is_the_count_difference_in_the_raw_csv(run):
    """Checked against the file itself, read with the csv module: the count at a second is the last
    Aggregated row at or before it (0 before the first)."""
    with open(run.csv_path("_stats_history.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Name"] == "Aggregated"]
    t0 = min(int(r["Timestamp"]) for r in rows)
    count: dict[int, float] = {}
    for r in rows:
        count[int(r["Timestamp"]) - t0] = float(r["Total Request Count"])

    def at(t: int) -> float:
        known = [k for k in count if k <= t]
        return count[max(known)] if known else 0.0

    series = run_series(run)
    for row in series[series[C.ENDPOINT] == C.AGGREGATED].itertuples():
        expected = (at(row.t_s) - at(row.t_s - row.window_s)) / row.window_s
        assert row.rps == pytest.approx(expected, rel=1e-9, abs=1e-9), row


@pytest.mark.parametrize("run", REAL, ids=lambda r: r.run_id)
def test_windows_tile_the_run_one_report_interval_long(run):
    agg = grids(run.history)[C.AGGREGATED]
    win = windows(agg)
    # Locust: a local run counts live (1 s); a worker reports every 3 s.
    assert win.interval_s == (1 if run.meta.mode == "local" else 3)
    starts, ends = [b[0] for b in win.bounds], [b[1] for b in win.bounds]
    assert starts[1:] == ends[:-1] and all(e > s for s, e in zip(starts, ends, strict=True))
    head = next(i for i, b in enumerate(win.bounds) if b[2])  # the first reports: partial
    full = [e - s for s, e, partial in win.bounds[head:] if not partial]
    assert set(full) <= {win.width_s} and win.width_s % win.interval_s == 0


@pytest.mark.parametrize("run", [r for r in REAL if r.folder.parent == OLD_EXAMPLES], ids=lambda r: r.run_id)
def test_at_constant_users_the_series_is_flat_from_the_first_full_window(run):
    series = run_series(run)
    agg = series[(series[C.ENDPOINT] == C.AGGREGATED) & ~series[C.PARTIAL]]
    loaded = agg[agg[C.USERS] == run.users]
    assert len(loaded) >= 4
    rps = loaded[C.RPS_OUT].to_numpy()
    # HttpUser on a saturated 2-core machine varies ~5 % window to window; nothing ramps.
    assert np.all(np.abs(rps / np.median(rps) - 1) < 0.10), rps
    head = series[(series[C.ENDPOINT] == C.AGGREGATED) & series[C.PARTIAL]].iloc[0]
    assert loaded[C.TIME_S].iloc[0] == head[C.TIME_S] + 3  # the window right after the first reports


def test_the_issue_run_shows_its_rate_from_the_first_full_report_interval():
    """r1-w4-AlbumsFastHttpUser: 40 users from second 1, ~10,000 requests every 3 s."""
    run = load_run(OLD_EXAMPLES / "r1-w4-AlbumsFastHttpUser")
    series = run_series(run)
    agg = series[series[C.ENDPOINT] == C.AGGREGATED]
    full = agg[~agg[C.PARTIAL]]
    assert full[C.TIME_S].iloc[0] == 6 and full[C.WINDOW_S].iloc[0] == 3  # (3, 6]: the first full one
    assert np.all(np.abs(full[C.RPS_OUT] / 3350 - 1) < 0.02), full[C.RPS_OUT].tolist()
    # ...while Locust's own trailing average reads 2,341 at t = 5 and climbs to 3,338 only at t = 14.
    locust_avg = run.history[run.history[C.ENDPOINT] == C.AGGREGATED].set_index(C.TIME_S)[C.RPS_OUT]
    assert locust_avg.loc[5] < 0.75 * 3350 < full[C.RPS_OUT].min()


def test_report_interval_from_the_spacing_and_repeats_of_count_changes():
    def counts(per_second):
        return np.concatenate([[0], np.cumsum(per_second)])

    assert report_interval_s(counts([100, 104, 97, 101, 99, 103, 98])) == 1  # local: every second
    assert report_interval_s(counts([0, 300, 0, 0, 310, 0, 0, 295, 0, 0, 305])) == 3  # one worker
    assert report_interval_s(counts([150, 150, 0] * 5)) == 3  # two workers, two phases
    assert report_interval_s(counts([200, 100, 100] * 5)) == 3  # uneven phases, every second busy


def test_resolution_follows_locusts_rounding_of_response_times():
    assert [resolution_ms(v) for v in (0.4, 99.4, 100, 999, 1000, 9999, 10000)] == [
        1,
        1,
        10,
        10,
        100,
        100,
        1000,
    ]


# --- synthetic histories in Locust's format -------------------------------------------------------------


def test_a_synthetic_step_history_gives_each_step_its_own_rate(tmp_path):
    levels, per_user = [10, 20, 40, 80], 7.0
    users = step_users(levels, 20)
    made = [round(u * per_user) for u in users]
    run = load_run(write_run(tmp_path / "run", users, made, [3.0] * len(users)), history=True)
    table = steps(run)
    assert table[C.USERS].tolist() == levels
    assert table[C.RPS_OUT].tolist() == pytest.approx([u * per_user for u in levels], rel=1e-12)
    series = run_series(run)
    agg = series[(series[C.ENDPOINT] == C.AGGREGATED) & ~series[C.PARTIAL]]
    # Every full window inside a step (reports 3 s late: skip the first window of each) has its rate.
    for u in levels:
        inside = agg[(agg[C.USERS] == u)].iloc[1:-1]
        assert len(inside) >= 3 and inside[C.RPS_OUT].tolist() == pytest.approx([u * per_user] * len(inside))
    assert (series[C.RPS_OUT] * series[C.WINDOW_S]).groupby(
        series[C.ENDPOINT]
    ).sum().tolist() == pytest.approx([sum(made)] * 2)


def test_percentiles_above_the_runs_max_are_not_drawn(tmp_path):
    users = step_users([10], 15)
    run = load_run(
        write_run(tmp_path / "run", users, [u * 5 for u in users], [110.0] * len(users), max_ms=120)
    )
    series = run_series(run)
    assert series.attrs["masked"][C.P99_MS] > 0 and series[C.P99_MS].isna().all()  # 132 > 120 ms
    assert series[C.P95_MS].max() == 110 and series.attrs["masked"][C.P95_MS] == 0


def test_report_writes_timeseries_csv_with_the_charts_numbers(tmp_path, capsys):
    out = tmp_path / "report"
    assert analysis_main(["report", str(FIXTURES / "analysis" / "sweep"), "-o", str(out)]) == 0
    written = pd.read_csv(out / "timeseries.csv")
    assert written.columns.tolist() == C.TIMESERIES_COLUMNS
    expected = timeseries_table(load_runs([FIXTURES / "analysis" / "sweep"]))
    pd.testing.assert_frame_equal(written, expected, check_dtype=False)
