"""`swarmbench report` on what is not a sweep: one run (or repeats of one configuration) reports as its
run page, with no sweep sections or sweep warnings; a set of runs links every run's page; folders
without a history or windows file report again (the regression of the summary box's loader)."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

from harness import FIXTURES
from pages import assert_page_matches_files, tables

from swarmbench.core import folder
from swarmbench.page import run as run_page

EXACT = FIXTURES / "exact"
SWEEP = FIXTURES / "analysis" / "sweep"
SWEEP_WORDS = ("Nothing to compare", "Scaling verdict", "only one worker count", "What limited each run")
"""What a sweep's report says that a one-run report must not."""


def links(page: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]+)"', page)]


def test_one_run_reports_as_its_page(tmp_path, analysis_cli):
    res = analysis_cli("report", EXACT / "repeat-1", "-o", tmp_path / "o")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    page = (tmp_path / "o" / "report.html").read_text()
    assert not [w for w in SWEEP_WORDS if w in page]
    assert run_page.MARK in page and "<h1>Run repeat-1</h1>" in page
    assert_page_matches_files(page, EXACT / "repeat-1")
    # Its links lead from the report's folder to the run's files.
    for href in links(page):
        assert (tmp_path / "o" / href).resolve().exists(), href
    assert {"summary.csv", "scaling.json", "timeseries.csv", "comparisons.json"} <= {
        p.name for p in (tmp_path / "o").iterdir()
    }
    assert not list((tmp_path / "o").glob("*.png")), "inline SVG only: no matplotlib"


def test_repeats_of_one_configuration_show_each_runs_page(tmp_path, analysis_cli):
    res = analysis_cli("report", EXACT / "repeat-1", EXACT / "repeat-2", "-o", tmp_path / "o")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    page = (tmp_path / "o" / "report.html").read_text()
    assert "2 repeats of one configuration" in page and not [w for w in SWEEP_WORDS if w in page]
    assert page.count('<table id="numbers">') == 2


def test_a_sweep_links_each_runs_page(tmp_path, analysis_cli):
    runs = shutil.copytree(SWEEP, tmp_path / "runs")
    with_page = sorted(p for p in runs.iterdir() if p.is_dir())[:2]
    for run_dir in with_page:
        run_page.write(run_dir)
    res = analysis_cli("report", runs, "-o", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "o" / "report.html").read_text()
    pages = [h for h in links(page) if h.endswith(folder.REPORT_HTML)]
    assert sorted((tmp_path / "o" / h).resolve() for h in pages) == [
        (p / folder.REPORT_HTML).resolve() for p in with_page
    ], "the runs with a page, and no folder whose report.html is Locust's"


def test_folders_without_history_or_windows_report_again(tmp_path, analysis_cli):
    """Run folders of locust_stats.csv and run.json alone: totals and fits as before; the comparisons
    and charts over time are left out, and one warning says why (it used to stop the report)."""
    runs = shutil.copytree(SWEEP, tmp_path / "runs")
    for p in runs.rglob(folder.HISTORY_CSV):
        p.unlink()
    res = analysis_cli("report", runs, "-o", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    (said,) = res.stderr.strip().splitlines()  # one warning, not one per run
    assert "neither locust_latency_windows.csv nor locust_stats_history.csv" in said
    assert "comparisons between runs are left out" in said
    scaling = json.loads((tmp_path / "o" / "scaling.json").read_text())
    assert any(g["amdahl"] for g in scaling["groups"]), "the fits are there"
    assert json.loads((tmp_path / "o" / "comparisons.json").read_text())["comparisons"] == []
    page = (tmp_path / "o" / "report.html").read_text()
    assert "Comparisons left out" in page and "Over time" not in page
    assert "Per-endpoint summary" in page and tables(page), "the totals are there"


def test_one_run_without_history_or_windows_reports_too(tmp_path, analysis_cli):
    run_dir = shutil.copytree(next(p for p in SWEEP.iterdir() if p.is_dir()), tmp_path / "run")
    (run_dir / folder.HISTORY_CSV).unlink()
    res = analysis_cli("report", run_dir, "-o", tmp_path / "o")
    assert res.returncode == 0, res.stderr
    assert_page_matches_files((tmp_path / "o" / "report.html").read_text(), Path(run_dir))


def test_a_step_load_run_reports_its_page_and_its_knee(tmp_path, analysis_cli):
    """`swarmbench knee`'s report is one run's: its page, then the knee the analysis finds."""
    run_dir = FIXTURES / "knee" / "saturating"
    res = analysis_cli("report", run_dir, "-o", tmp_path / "o")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    page = (tmp_path / "o" / "report.html").read_text()
    assert not [w for w in SWEEP_WORDS if w in page]
    assert_page_matches_files(page, run_dir)
    assert "The knee and the offered load" in page and "Knee at 60 users" in page
    assert [p.name for p in (tmp_path / "o").glob("*.png")] == ["knee_sat4.png"]
