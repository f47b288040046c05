"""Hardening (issue 10), the analysis: impossible numbers refused with file and row, two sweeps
under one folder told apart, an OUT whose replacement would lose something refused, OUT replaced
whole. Nothing saved changes when an input is refused.
"""

from __future__ import annotations

import csv
import io
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hardening import HARDENING, snapshot
from harness import FIXTURES, assert_one_line_error, run_module

from swarmbench.analysis.commands import write_atomically

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

SWEEP = FIXTURES / "analysis" / "sweep"
RUN = SWEEP / "20261121T194528Z_AlbumsHttpUser_local"  # stats row 5 is Aggregated: 8442 requests


def analysis(*args: str | Path) -> subprocess.CompletedProcess:
    return run_module("analysis", *args)


# --- analysis: impossible data, duplicate ids, OUT ---------------------------------------------


def set_cell(path: Path, row: int, column: str, value: str) -> None:
    """Row as in the error message: the header is row 1; a row past the end is appended."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    col = rows[0].index(column)
    if row > len(rows):
        rows.append(["0"] * len(rows[0]))
    rows[row - 1][col] = value
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def analysis_cases() -> list[tuple[str, int, str, str, str]]:
    """The corpus of impossible numbers (fixtures/hardening/impossible_numbers.csv), one a row: the
    file, the row (the header is row 1) and column set to the value, and the error after "FILE: "."""
    with open(HARDENING / "impossible_numbers.csv", newline="", encoding="utf-8") as f:
        return [(r["file"], int(r["row"]), r["column"], r["value"], r["problem"]) for r in csv.DictReader(f)]


ANALYSIS_CASES = analysis_cases()


@pytest.mark.parametrize(("name", "row", "column", "value", "problem"), ANALYSIS_CASES)
def test_impossible_numbers_are_refused_with_file_and_row(tmp_path, name, row, column, value, problem):
    run = shutil.copytree(RUN, tmp_path / "run")
    if name == "locust_exceptions.csv":
        (run / name).write_text("Count,Message,Traceback,Nodes\r\n")
    set_cell(run / name, row, column, value)
    out = tmp_path / "out"  # a previous report, which must survive
    out.mkdir()
    for previous in ("report.html", "scaling.json", "summary.csv"):
        (out / previous).write_text(f"previous {previous}")
    before = snapshot(tmp_path)
    proc = analysis("report", run, "-o", out)
    assert_one_line_error(proc, f"analysis: error: {run / name}: {problem}")
    assert snapshot(tmp_path) == before, "a refused input changed something saved"


def test_the_probes_numbers_give_no_summary(tmp_path):
    """The issue's probe: -5 requests, inf requests/s, 99,999,999 failures out of 8,305."""
    run = shutil.copytree(RUN, tmp_path / "run")
    set_cell(run / "locust_stats.csv", 5, "Failure Count", "99999999")
    proc = analysis("summary", run)
    assert_one_line_error(proc, "is more than 'Request Count'")
    assert proc.stdout == ""


def test_two_sweeps_under_one_folder_are_told_apart_by_path(tmp_path):
    both = tmp_path / "both"
    runs = [RUN, *SWEEP.glob("*_AlbumsHttpUser_w2")]  # two runs per "sweep": a short report
    for name in ("sweep-a", "sweep-b"):
        for run in runs:
            shutil.copytree(run, both / name / run.name)
    proc = analysis("summary", both, "--aggregated", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    ids = [r["run_id"] for r in rows]
    assert len(ids) == 2 * len(runs) == len(set(ids))
    assert f"sweep-a/{RUN.name}" in ids and f"sweep-b/{RUN.name}" in ids
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 1 and f"{len(runs)} run id(s) appear in more than one folder" in warnings[0]
    out = tmp_path / "report"
    rep = analysis("report", both, "-o", out)
    assert rep.returncode == 0, rep.stderr[-3000:]
    summary = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text())))
    assert len({r["run_id"] for r in summary if r["endpoint"] == "Aggregated"}) == 2 * len(runs)


@pytest.mark.parametrize(
    ("make_out", "message"),
    [
        (lambda tmp: shutil.copytree(RUN, tmp / "run"), "is a run folder; its report.html is its run page"),
        (lambda tmp: tmp, "is not empty and not a previous report (in)"),
        (lambda tmp: _with(tmp / "mine", "notes.txt"), "is not empty and not a previous report (notes.txt)"),
        (lambda tmp: _with(tmp, "file") / "file", "exists and is not a folder"),
    ],
    ids=["run-folder", "parent-of-the-runs", "someone-elses-folder", "a-file"],
)
def test_out_that_would_lose_something_is_refused(tmp_path, make_out, message):
    shutil.copytree(RUN, tmp_path / "in" / "r1")
    out = make_out(tmp_path)
    target = tmp_path / "run" if (tmp_path / "run").exists() else tmp_path / "in"
    before = snapshot(tmp_path)
    proc = analysis("report", target, "-o", out)
    assert_one_line_error(proc, f"analysis: error: {out}: {message}")
    assert snapshot(tmp_path) == before


def _with(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("keep me")
    return folder


def test_out_is_replaced_whole_and_a_failed_write_names_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o750)
    (out / "report.html").write_text("previous")
    (out / "over_time_old-run.png").write_bytes(b"stale chart")
    write_atomically(out, {"summary.csv": b"new", "report.html": b"new page"})
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "summary.csv"]  # no stale chart
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    before = snapshot(tmp_path)
    with pytest.raises(OSError) as failed:
        write_atomically(out, {"summary.csv": b"newer", "no/such/dir.png": b"x", "report.html": b"newer"})
    assert failed.value.filename == str(out) and ".new-" not in str(failed.value)
    assert snapshot(tmp_path) == before, "OUT (and its folder) as it was, no temp folder left"
