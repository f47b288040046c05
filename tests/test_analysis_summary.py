"""summary.csv numbers checked against the CSVs themselves (read here with the csv module)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from swarmbench.analysis import columns as C
from swarmbench.analysis.runs import load_runs
from swarmbench.analysis.summary import aggregated, failures_table, settings_table, summarize

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"


@pytest.fixture(scope="module")
def runs():
    with pytest.warns(Warning):  # the legacy runs have no run.json
        return load_runs([FIXTURES])


def test_every_stats_row_is_in_the_summary_with_the_csv_numbers(runs):
    summary = summarize(runs)
    assert list(summary.columns) == C.SUMMARY_COLUMNS
    expected_rows = 0
    for run in runs:
        with open(run.csv_path("_stats.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        expected_rows += len(rows)
        mine = summary[summary[C.RUN_ID] == run.run_id].reset_index(drop=True)
        assert len(mine) == len(rows)
        for got, want in zip(mine.itertuples(), rows, strict=True):
            assert got.name == want["Name"]
            assert got.requests == int(want["Request Count"])
            assert got.failures == int(want["Failure Count"])
            assert got.rps == pytest.approx(float(want["Requests/s"]), rel=1e-12)
            assert got.p50_ms == float(want["50%"])
            assert got.p95_ms == float(want["95%"])
            assert got.p99_ms == float(want["99%"])
            assert got.fail_ratio == pytest.approx(int(want["Failure Count"]) / int(want["Request Count"]))
    assert len(summary) == expected_rows == 11 * 4


def test_aggregated_rows_match_the_harness_totals(runs):
    # Two independent records of one run: Locust's CSV and the harness's run.json.
    for run in runs:
        if run.has_manifest:
            totals = json.loads((run.folder / C.MANIFEST).read_text())["totals"]
            assert run.aggregated[C.REQUESTS] == totals["requests"]
            assert run.aggregated[C.FAILURES] == totals["failures"]


def test_run_level_columns(runs):
    agg = aggregated(summarize(runs))
    assert len(agg) == 11
    known = agg[agg[C.USER_CLASS].notna()]
    assert set(known[C.WORKERS]) == {1, 2, 3} and set(known[C.USERS]) == {12}
    unknown = agg[agg[C.USER_CLASS].isna()]
    assert len(unknown) == 2 and unknown[C.WORKERS].isna().all()


def test_settings_and_failures_tables(runs):
    settings = settings_table(runs)
    assert len(settings) == 11
    http = settings[settings[C.RUN_ID].str.endswith("AlbumsHttpUser_w2")]
    assert set(http[C.MODE]) == {"distributed"} and set(http[C.WORKERS]) == {2}
    util = settings[C.TARGET_CPU_UTIL].dropna()
    assert len(util) == 9 and ((util > 0) & (util < 1)).all()
    failures = failures_table(runs)
    assert failures[C.OCCURRENCES].is_monotonic_decreasing
    assert set(failures[C.ENDPOINT]) == {"GET /albums/{id}"}  # the deliberate 404s
    assert failures[C.OCCURRENCES].sum() == sum(int(r.aggregated[C.FAILURES]) for r in runs)
    assert not math.isnan(failures[C.OCCURRENCES].iloc[0])
