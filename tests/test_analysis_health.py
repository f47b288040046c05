"""Run health in the analysis: status in summary.csv, partial runs out of the scaling fits (with one
warning naming them, --include-partial to keep them), the report's "Run health" section.

The run folders are the real fixture sweep (tests/fixtures/analysis/sweep), copied and given the
status, events and workers timeline a degraded run's run.json carries.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from harness import ROOT, run_module

from swarmbench.analysis import analyze_scaling, load_runs, settings_table, summarize
from swarmbench.analysis import columns as C
from swarmbench.analysis.health import events_table, workers_changed, workers_figure

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

SWEEP = ROOT / "tests" / "fixtures" / "analysis" / "sweep"
DEGRADED = "20261121T194551Z_AlbumsHttpUser_w3"  # the one w3 run of its group with a twin repeat
EVENTS = [
    {"at": "2026-11-21T19:45:52.000Z", "t_s": 0.0, "kind": "worker_joined", "detail": "3 workers"},
    {"at": "2026-11-21T19:45:56.000Z", "t_s": 4.0, "kind": "worker_missing", "detail": "worker 3 missing"},
]


def analysis(*args: str | Path) -> subprocess.CompletedProcess:
    return run_module("analysis", *args)


def set_manifest(run_dir: Path, **fields) -> None:
    path = run_dir / C.MANIFEST
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data, indent=2))


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """The fixture sweep's AlbumsHttpUser runs (1, 2, 3 workers, twice), one degraded (a worker
    lost at 4 s), one complete, the others from before the status field."""
    out = tmp_path / "sweep"
    for run in SWEEP.glob("*_AlbumsHttpUser_*"):
        shutil.copytree(run, out / run.name)
    set_manifest(out / DEGRADED, status="degraded", events=EVENTS, workers_timeline=[[0.0, 3], [4.0, 2]])
    set_manifest(
        out / "20261121T194528Z_AlbumsHttpUser_local", status="complete", workers_timeline=[[0.0, 1]]
    )
    return out


def aggregated_rows(text: str) -> dict[str, dict[str, str]]:
    return {r[C.RUN_ID]: r for r in csv.DictReader(io.StringIO(text)) if r[C.ENDPOINT] == C.AGGREGATED}


def test_summary_has_each_runs_status(sweep):
    res = analysis("summary", "--format", "csv", sweep)
    assert res.returncode == 0, res.stderr
    rows = aggregated_rows(res.stdout)
    assert rows[DEGRADED][C.STATUS] == "degraded"
    assert rows["20261121T194528Z_AlbumsHttpUser_local"][C.STATUS] == "complete"
    # A run.json older than the status field says nothing either way.
    assert rows["20261121T194539Z_AlbumsHttpUser_w2"][C.STATUS] == "unknown"
    assert list(csv.reader(io.StringIO(res.stdout)))[0] == C.SUMMARY_COLUMNS


def fitted_run_ids(scaling: dict) -> set[str]:
    return {rid for g in scaling["groups"] for p in g["points"] for rid in p["run_ids"]}


def test_partial_runs_are_left_out_of_fits_with_one_warning(sweep, tmp_path):
    out = tmp_path / "report"
    res = analysis("report", sweep, "-o", out)
    assert res.returncode == 0, res.stderr
    named = [line for line in res.stderr.splitlines() if DEGRADED in line]
    assert len(named) == 1, res.stderr
    assert (
        "left out of scaling fits" in named[0]
        and "(degraded)" in named[0]
        and "--include-partial" in named[0]
    )
    scaling = json.loads((out / "scaling.json").read_text())
    fitted = fitted_run_ids(scaling)
    assert DEGRADED not in fitted and len(fitted) == 5
    assert any(DEGRADED in w for w in scaling["warnings"])
    # The degraded run is still reported: in summary.csv, with its status, and in Run health.
    assert aggregated_rows((out / "summary.csv").read_text())[DEGRADED][C.STATUS] == "degraded"
    page = (out / "report.html").read_text()
    start = page.index("<h2>Run health</h2>")
    health = page[start : page.index("<h2>", start + 1)]
    assert "<td>degraded</td>" in health and "worker 3 missing" in health and "worker_missing" in health
    assert f"Left out of the scaling fits (status degraded, interrupted or failed): {DEGRADED}" in health
    # Only the run whose worker count changed gets the chart: in Run health, as a PNG, once on the page.
    assert sorted(p.name for p in out.glob("workers_*.png")) == [f"workers_{DEGRADED}.png"]
    assert health.count("<img") == 1 and page.count(f"Load generators over time — {DEGRADED}</h3>") == 1


def test_include_partial_keeps_them_in_the_fits(sweep, tmp_path):
    for run in sweep.iterdir():  # two runs are enough for a fit: the local one and the degraded one
        if run.name not in (DEGRADED, "20261121T194528Z_AlbumsHttpUser_local"):
            shutil.rmtree(run)
    kept = tmp_path / "kept"
    res = analysis("report", sweep, "-o", kept, "--include-partial")
    assert res.returncode == 0, res.stderr
    assert "left out of scaling fits" not in res.stderr
    assert DEGRADED in fitted_run_ids(json.loads((kept / "scaling.json").read_text()))
    assert "Left out of the scaling fits" not in (kept / "report.html").read_text()


def test_fit_without_the_partial_run_uses_only_the_others(sweep):
    runs = load_runs([sweep], history=False)
    with pytest.warns(UserWarning, match=DEGRADED):
        groups, notes = analyze_scaling(runs)
    w3 = next(
        p for g in groups if g.key.user_classes == ("AlbumsHttpUser",) for p in g.points if p.workers == 3
    )
    assert w3.run_ids == ["20261121T194624Z_AlbumsHttpUser_w3"]
    assert len(notes) == 1 and DEGRADED in notes[0]
    assert summarize(runs).set_index(C.RUN_ID).loc[DEGRADED, C.STATUS].iloc[0] == "degraded"


def test_workers_chart_and_events_from_run_json(sweep):
    runs = {r.run_id: r for r in load_runs([sweep], history=False)}
    degraded, complete = runs[DEGRADED], runs["20261121T194528Z_AlbumsHttpUser_local"]
    assert workers_changed(degraded) and not workers_changed(complete)
    fig = workers_figure(degraded)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time since the test started (s)" and "(workers)" in ax.get_ylabel()
    x, y = ax.lines[0].get_data()
    assert list(x) == [0.0, 4.0, degraded.meta.duration_s] and list(y) == [3, 2, 2]
    table = events_table(list(runs.values()))
    assert table["kind"].tolist() == ["worker_joined", "worker_missing"]
    assert set(table[C.RUN_ID]) == {DEGRADED}


def test_a_group_paced_by_the_locustfiles_own_wait_time_is_labelled_so(sweep):
    """run.json's --wait-time is not what the users did when no class used it (measured pacing)."""
    own = {
        "AlbumsHttpUser": {"users": 12, "waits": 8000, "mean_wait_s": 0.02, "wait_time_option_used": False}
    }
    for run in sweep.iterdir():
        set_manifest(run, pacing=own)
    runs = load_runs([sweep], history=False)
    with pytest.warns(UserWarning):
        groups, _ = analyze_scaling(runs)
    assert [g.key.label() for g in groups] == [
        "AlbumsHttpUser, 12 users, the locustfile's own wait_time, 8 s, store rwmutex"
    ]
    assert set(settings_table(runs)[C.WAIT_TIME]) == {"the locustfile's own wait_time"}
