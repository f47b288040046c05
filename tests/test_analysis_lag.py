"""The generator self-check in the analysis report: the lag chart per run, the warning and the
verdict for a run whose generators inflated its latency, nothing for runs that kept up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import ROOT, run_module

from swarmbench.analysis import columns as C
from swarmbench.analysis import load_runs
from swarmbench.analysis.health import lag_figure, lag_frame
from swarmbench.core import bottleneck
from swarmbench.core.manifest import WorkerLag

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

SWEEP = ROOT / "tests" / "fixtures" / "analysis" / "sweep"
# Two worker counts of one configuration: a sweep report (repeats of one alone get run pages).
SLOW, CALM = "20261121T194539Z_AlbumsHttpUser_w2", "20261121T194551Z_AlbumsHttpUser_w3"


def _lag_section(p99s: list[float], median_ms: float) -> dict:
    per_worker = [
        {"id": f"worker{i}", "n": 900, "p50_ms": 0.2, "p99_ms": p99, "max_ms": p99 * 2,
         "series": [[3.0 * k, 0.2, p99 * k / 3, p99] for k in (1, 2, 3)]}
        for i, p99 in enumerate(p99s)
    ]  # fmt: skip
    return bottleneck.judge_lag([WorkerLag.from_json(w) for w in per_worker], median_ms).to_json()


def _folder(tmp_path: Path) -> Path:
    out = tmp_path / "runs"
    for name, section in ((SLOW, _lag_section([2.0, 400.0], 90.0)), (CALM, _lag_section([1.5, 2.5], 90.0))):
        shutil.copytree(SWEEP / name, out / name)
        path = out / name / C.MANIFEST
        data = json.loads(path.read_text())
        data.pop("bottleneck", None)  # judged again by the analysis, with the lag
        path.write_text(json.dumps({**data, "generator_lag": section}))
    return out


def test_lag_chart_and_the_flag_in_the_report(tmp_path):
    runs = _folder(tmp_path)
    res = run_module("analysis", "report", runs, "-o", tmp_path / "out")
    assert res.returncode == 0, res.stderr[-2000:]
    html = (tmp_path / "out" / "report.html").read_text()
    for name in (SLOW, CALM):
        assert (tmp_path / "out" / f"generator_lag_{name}.png").is_file()
        assert f"Load generator lag over time — {name}" in html
    warning = html.split("What limited each run", 1)[1].split("</div>", 1)[0]
    assert SLOW in warning and CALM not in warning and "p99 400 ms late" in warning
    assert bottleneck.INFLATED.capitalize() in warning


def test_lag_frame_and_figure(tmp_path):
    runs = {r.run_id: r for r in load_runs([_folder(tmp_path)], history=False)}
    frame = lag_frame(runs[SLOW])
    assert sorted(frame["worker"].unique()) == ["worker0", "worker1"] and len(frame) == 6
    ax = lag_figure(runs[SLOW]).axes[0]
    assert bottleneck.INFLATED in ax.get_title() and "kept up" in lag_figure(runs[CALM]).axes[0].get_title()
    bound = [line for line in ax.lines if line.get_label().startswith("bound")]
    assert bound and bound[0].get_ydata()[0] == bottleneck.LAG_FLOOR_MS
