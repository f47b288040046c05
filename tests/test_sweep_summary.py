"""The sweep report opens with one summary box (analysis/report.py): each comparison's verdict
with its CI (analysis/comparisons.py, swarmbench compare's statistics), the bottleneck, the runs
left out; the details follow.

Golden tests on the real sweeps (tests/fixtures/analysis/sweep: older folders without histogram
files, whose comparisons use Locust's per-second numbers and say "rounded"; results/examples, with
them: exact). A line's numbers equal what `swarmbench compare` says of the same runs.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from harness import ROOT, run_module

from swarmbench.analysis.comparisons import WORDS, pct

FIXTURE = ROOT / "tests" / "fixtures" / "analysis" / "sweep"
EXAMPLES = ROOT / "results" / "examples"

EXAMPLES_GOLDEN = [
    "w2 vs w1: throughput +25 % [-8.0, +57], inconclusive; p95 -33 % [-99, +26], inconclusive",
    "w2 vs w1: throughput +31 % [+8.1, +54], faster; p95 -33 % [-88, +18], inconclusive",
    "AlbumsFastHttpUser vs AlbumsHttpUser at w1: throughput +205 % [+151, +267], faster; "
    "p95 -78 % [-100, -32], faster",
    "AlbumsFastHttpUser vs AlbumsHttpUser at w2: throughput +192 % [+127, +252], faster; "
    "p95 -78 % [-100, -34], faster",
]
"""results/examples' sweep (20 s, 40 users, 1 and 2 workers, both clients, one repeat; exact
histograms), seed 0."""


def report(analysis_cli, folder: Path, out: Path) -> tuple[str, dict]:
    res = analysis_cli("report", folder, "-o", out)
    assert res.returncode == 0, res.stderr
    return (out / "report.html").read_text(), json.loads((out / "comparisons.json").read_text())


def box(page: str) -> str:
    start = page.index('<div class="summary"')
    return page[start : page.index("</div>", start)]


def lines(page: str) -> list[str]:
    return [html.unescape(x) for x in re.findall(r"<li>(.*?)</li>", box(page))]


def made_once(tmp_path_factory, folder: Path, name: str) -> tuple[str, dict]:
    """FOLDER's report, for a module fixture (its tests only read it)."""
    from swarmbench.cli import analysis_main as main

    out = tmp_path_factory.mktemp(name) / "report"
    assert main(["report", str(folder), "-o", str(out)]) == 0
    return (out / "report.html").read_text(), json.loads((out / "comparisons.json").read_text())


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    return made_once(tmp_path_factory, EXAMPLES, "examples")


@pytest.fixture(scope="module")
def fixture_sweep(tmp_path_factory):
    return made_once(tmp_path_factory, FIXTURE, "fixture-sweep")


def test_the_summary_box_opens_the_report(examples):
    page, _ = examples
    body = page[page.index("<body>") :]
    # Title, the one-line provenance, then the box: before the warnings and every detail.
    assert re.match(r'<body>\n<h1>[^<]*</h1>\n<p class="muted">[^\n]*</p>\n<div class="summary"', body), body[
        :400
    ]
    first_detail = min(body.index(h) for h in ("What was run", "Scaling verdict", "Warnings") if h in body)
    assert body.index('class="summary"') < first_detail


def test_golden_lines_of_the_example_sweep(examples):
    page, found = examples
    assert [line for line in lines(page) if " vs " in line] == EXAMPLES_GOLDEN
    assert [c["latency"] for c in found["comparisons"]] == ["exact"] * len(EXAMPLES_GOLDEN)
    text = html.unescape(box(page))
    assert "Bottleneck" in text and "generator-bound" in text
    assert "Left out</strong>: no run" in text and "Rounded" not in text


def copy_runs(runs: list[Path], to: Path) -> Path:
    to.mkdir()
    for run in runs:
        shutil.copytree(run, to / run.name)
    return to


@pytest.mark.parametrize(
    ("label", "base", "cand", "extra"),
    [
        ("w2 vs w1", "*_AlbumsHttpUser_local", "*_AlbumsHttpUser_w2", []),
        (
            "AlbumsFastHttpUser vs AlbumsHttpUser at w1",
            "*_AlbumsHttpUser_local",
            "*_AlbumsFastHttpUser_local",
            ["--allow-different"],
        ),
    ],
)
def test_a_line_equals_swarmbench_compare_of_the_same_runs(fixture_sweep, tmp_path, label, base, cand, extra):
    """The fixture sweep (2 repeats of HttpUser, 1 of FastHttpUser): its line for LABEL holds the
    numbers `swarmbench compare --metrics throughput,p95` gives for the same runs, verdict included."""
    page, found = fixture_sweep
    a = copy_runs(sorted(FIXTURE.glob(base)), tmp_path / "a")
    b = copy_runs(sorted(FIXTURE.glob(cand)), tmp_path / "b")
    res = run_module(
        "swarmbench", "compare", a, b, "-o", tmp_path / "cmp", "--metrics", "throughput,p95", *extra
    )
    assert res.returncode in (0, 3), res.stderr
    cli = {
        r["metric"]: r
        for r in json.loads((tmp_path / "cmp" / "compare.json").read_text())["results"]
        if r["name"] == "Aggregated"
    }
    ours = next(c for c in found["comparisons"] if c["label"] == label and "AlbumsFast" not in c["context"])
    expected = []
    for metric in ("throughput", "p95"):
        r, mine = cli[metric], ours["results"][metric]
        assert mine["verdict"] == r["verdict"]
        assert mine["diff"] == pytest.approx(r["diff"], abs=1e-5)
        assert mine["ci"] == pytest.approx(r["ci"], abs=1e-5)
        b0, (low, high) = r["baseline"], r["ci"]
        change = f"{pct(r['diff'] / b0)} % [{pct(low / b0)}, {pct(high / b0)}]"
        expected.append(f"{metric} {change}, {WORDS[r['verdict']]}")
    assert f"{label}: {'; '.join(expected)} (rounded)" in lines(page)


def test_a_partial_run_is_named_as_left_out(analysis_cli, tmp_path):
    sweep = tmp_path / "sweep"
    shutil.copytree(FIXTURE, sweep)
    victim = sorted(sweep.glob("*_AlbumsHttpUser_w2"))[0]
    data = json.loads((victim / "run.json").read_text())
    data["status"] = "degraded"
    (victim / "run.json").write_text(json.dumps(data))
    page, found = report(analysis_cli, sweep, tmp_path / "report")
    text = html.unescape(box(page))
    assert f"Left out</strong>: {data['run_id']} (degraded)" in text
    w2 = next(
        c for c in found["comparisons"] if c["label"] == "w2 vs w1" and "AlbumsFast" not in c["context"]
    )
    assert data["run_id"] not in w2["candidate_runs"] and len(w2["candidate_runs"]) == 1
