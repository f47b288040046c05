"""`python -m analysis` end to end: swarmbench.analysis.commands.main in the pytest process (exit code,
stdout, stderr as a person would see them; conftest's analysis_cli), and one smoke test of the real
`python -m analysis` in a subprocess.

RESULT_SETS: the fixtures, plus results/examples once the harness has produced it; point at other
folders with SWARMBENCH_TEST_RESULTS=dir1:dir2.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from harness import ROOT, assert_one_line_error, run_module
from runs import result_sets

from swarmbench.analysis.commands import write_atomically

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

FIXTURES = ROOT / "tests" / "fixtures" / "analysis"
SWEEP_RUN = next((FIXTURES / "sweep").iterdir())


def stats_rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "locust_stats.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("results", result_sets(FIXTURES), ids=lambda p: p.name)
def test_report_end_to_end(results, tmp_path, analysis_cli):
    out = tmp_path / "report"
    proc = analysis_cli("report", results, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    names = {p.name for p in out.iterdir()}
    assert {"summary.csv", "scaling.json", "report.html"} <= names
    assert any(n.endswith(".png") for n in names)
    assert not list(tmp_path.glob(".report.tmp-*"))  # the temp folder is gone

    # summary.csv: one row per stats row of every run, same numbers as the CSVs.
    with open(out / "summary.csv", newline="") as f:
        summary = list(csv.DictReader(f))
    folders = sorted({p.parent for p in results.rglob("locust_stats.csv")})
    want = [row for folder in folders for row in stats_rows(folder)]
    assert len(summary) == len(want) > 0
    assert sorted(int(r["requests"]) for r in summary) == sorted(int(r["Request Count"]) for r in want)
    for col in ("run_id", "user_class", "workers", "users", "name", "fail_ratio", "rps", "p95_ms", "p99_ms"):
        assert col in summary[0]

    # scaling.json: every point's rps is some run's Aggregated Requests/s.
    scaling = json.loads((out / "scaling.json").read_text())
    agg_rps = [float(r["Requests/s"]) for r in want if r["Name"] == "Aggregated"]
    for group in scaling["groups"]:
        for point in group["points"]:
            for rps in point["rps"]:
                assert any(rps == pytest.approx(v, rel=1e-12) for v in agg_rps)

    # report.html: self-contained, charts embedded, verdict present.
    page = (out / "report.html").read_text()
    srcs = re.findall(r'src="([^"]*)"', page)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "What was run" in page and "Scaling verdict" in page


def test_report_on_fixtures_has_the_fitted_groups(tmp_path, analysis_cli):
    proc = analysis_cli("report", FIXTURES, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    # The legacy runs (no run.json) are reported with a one-line warning each, not dropped silently.
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("analysis: warning: ")]
    assert sum("locust-2.15.1/run.json: missing" in w for w in warnings) == 1
    assert len(proc.stderr.strip().splitlines()) == len(warnings)
    scaling = json.loads((tmp_path / "out" / "scaling.json").read_text())
    http = next(g for g in scaling["groups"] if g["key"]["user_classes"] == ["AlbumsHttpUser"])
    assert [p["workers"] for p in http["points"]] == [1, 2, 3]
    assert len(http["amdahl"]["ci95"]) == 2 and http["usl"]["peak_workers"] > 0
    page = (tmp_path / "out" / "report.html").read_text()
    assert "3 workers gave" in page and "locust-2.8.6" in page


def test_summary_prints_the_table():
    """The smoke test of the real entry point: `python -m analysis` in a subprocess (analysis/
    __main__.py turning main's return value into the exit code)."""
    proc = run_module("analysis", "summary", FIXTURES / "sweep", "--aggregated")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 + 9 and "p95_ms" in lines[0]
    assert all("Aggregated" in line for line in lines[1:])


# --- bad input: one line, exit 2, names the file, no traceback ------------------------------------


def test_missing_path(tmp_path, analysis_cli):
    assert_one_line_error(analysis_cli("summary", tmp_path / "nope"), str(tmp_path / "nope"), "no such file")


def test_empty_folder(tmp_path, analysis_cli):
    (tmp_path / "empty").mkdir()
    assert_one_line_error(
        analysis_cli("report", tmp_path / "empty", "-o", tmp_path / "o"), "no Locust run found"
    )


def test_truncated_stats_csv(tmp_path, analysis_cli):
    run = shutil.copytree(SWEEP_RUN, tmp_path / "run")
    data = (run / "locust_stats.csv").read_bytes()
    (run / "locust_stats.csv").write_bytes(data[: len(data) // 2])
    assert_one_line_error(analysis_cli("summary", run), str(run / "locust_stats.csv"))


def test_non_locust_csv(tmp_path, analysis_cli):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "sales_stats.csv").write_text("region,revenue\nnorth,12\n")
    assert_one_line_error(
        analysis_cli("summary", tmp_path / "x"), "sales_stats.csv", "not a Locust stats CSV"
    )


def test_empty_stats_csv(tmp_path, analysis_cli):
    run = shutil.copytree(SWEEP_RUN, tmp_path / "run")
    (run / "locust_stats.csv").write_text("")
    assert_one_line_error(analysis_cli("summary", run), "locust_stats.csv: empty file")


def test_malformed_run_json(tmp_path, analysis_cli):
    run = shutil.copytree(SWEEP_RUN, tmp_path / "run")
    text = (run / "run.json").read_text().splitlines()
    assert text[2].startswith('  "run_id": ')
    text[2] = '  "run_id": oops,'  # a bare word: invalid JSON at line 3
    (run / "run.json").write_text("\n".join(text))
    assert_one_line_error(analysis_cli("summary", run), f"{run / 'run.json'}: invalid JSON at line 3")


def test_run_json_with_wrong_type(tmp_path, analysis_cli):
    run = shutil.copytree(SWEEP_RUN, tmp_path / "run")
    data = json.loads((run / "run.json").read_text())
    data["workers_connected"] = "two"
    (run / "run.json").write_text(json.dumps(data))
    assert_one_line_error(
        analysis_cli("summary", run), "run.json", '"workers_connected" should be an integer'
    )


def test_corrupt_history_in_report(tmp_path, analysis_cli):
    run = shutil.copytree(SWEEP_RUN, tmp_path / "run")
    lines = (run / "locust_stats_history.csv").read_text().splitlines(keepends=True)
    lines[3] = "1795290337,12,GET,GET /albums,fast,0.0\r\n"
    (run / "locust_stats_history.csv").write_text("".join(lines))
    assert_one_line_error(
        analysis_cli("report", run, "-o", tmp_path / "o"), "locust_stats_history.csv", "line 4"
    )


def test_one_worker_count_is_a_warning_not_an_error(tmp_path, analysis_cli):
    runs = [p for p in (FIXTURES / "sweep").iterdir() if p.name.endswith("_w2")]
    proc = analysis_cli("report", *runs, "-o", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    warns = proc.stderr.strip().splitlines()
    assert warns and all(w.startswith("analysis: warning: group ") for w in warns)
    assert "only one worker count (N = 2)" in warns[0] and str(runs[0].parent) in warns[0]
    assert json.loads((tmp_path / "o" / "scaling.json").read_text())["groups"][0]["amdahl"] is None


def test_failing_report_leaves_a_previous_report_untouched(tmp_path, analysis_cli):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("report.html", "summary.csv", "scaling.json"):
        (out / name).write_text(f"previous {name}")
    bad = shutil.copytree(SWEEP_RUN, tmp_path / "bad")
    (bad / "run.json").write_text("{")
    assert_one_line_error(analysis_cli("report", FIXTURES / "sweep", bad, "-o", out), "run.json")
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        n: f"previous {n}" for n in ("report.html", "summary.csv", "scaling.json")
    }
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_write_failure_midway_leaves_out_untouched(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("previous")
    with pytest.raises(OSError):
        write_atomically(out, {"summary.csv": b"new", "no/such/dir.png": b"x", "report.html": b"new"})
    assert [p.name for p in out.iterdir()] == ["report.html"]
    assert (out / "report.html").read_text() == "previous"
    assert [p for p in tmp_path.iterdir() if p.name != "out"] == []


def test_out_is_a_file(tmp_path, analysis_cli):
    (tmp_path / "o").write_text("x")
    assert_one_line_error(
        analysis_cli("report", SWEEP_RUN, "-o", tmp_path / "o"), "exists and is not a folder"
    )
