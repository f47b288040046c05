"""`swarmbench compare A B --sequential K [--first-look F] [--look]`: the sequential A/B's look and its
final comparison (what `make ab` with BUDGET runs), on real run folders: the exact fixtures'
repeat-1 as every A run and repeat-2 (p95 ~28 % higher, p50 ~12 % lower) as every B run, in make
ab's folder names. Bad options: one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import FIXTURES, run_module

from swarmbench.compare.sequential import METHOD

EXACT = FIXTURES / "exact"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "A", tmp_path / "B"
    for k in (1, 2, 3):
        shutil.copytree(EXACT / "repeat-1", a / f"a{k}")
        shutil.copytree(EXACT / "repeat-2", b / f"b{k}")
    return a, b


def look(a: Path, b: Path, *options: str) -> dict:
    res = run_module("swarmbench", "compare", a, b, "--sequential", "6", "--look", *options)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_a_look_pairs_the_runs_and_decides(sides):
    a, b = sides
    found = look(a, b, "--metrics", "p50,p95,error_rate", "--names", "Aggregated")
    assert (found["pairs"], found["max_pairs"], found["first_look"]) == (3, 6, 3)
    # The error rate is the final comparison's: not a sequential row.
    rows = {r["metric"]: r for r in found["rows"]}
    assert set(rows) == {"p50", "p95"} and found["decided"] and found["method"] == METHOD
    assert rows["p95"]["verdict"] == "regressed" and rows["p50"]["verdict"] == "improved"
    assert rows["p95"]["rci"][0] > 0.05 and rows["p95"]["pairs"] == 3
    # A pair whose B run is missing is left out, not paired with a later run: 2 pairs, no look yet.
    shutil.rmtree(b / "b2")
    early = look(a, b, "--metrics", "p95", "--names", "Aggregated")
    assert early["pairs"] == 2 and not early["decided"] and early["rows"][0]["c"] is None


def test_the_final_comparison_records_the_decision(sides, tmp_path):
    a, b = sides
    out = tmp_path / "out"
    res = run_module(
        "swarmbench", "compare", a, b, "-o", out, "--sequential", "6", "--metrics", "p95,error_rate"
    )
    assert res.returncode == 3, res.stdout + res.stderr
    found = json.loads((out / "compare.json").read_text())
    seq = found["sequential"]
    assert seq["pairs"] == 3 and seq["decided"] and {r["metric"] for r in seq["rows"]} == {"p95"}
    by_row = {(r["name"], r["metric"]): r for r in found["results"]}
    agg = by_row[("Aggregated", "p95")]
    (rci,) = [r["rci"] for r in seq["rows"] if r["name"] == "Aggregated"]
    # The gated row's CI is the repeated CI around the baseline's value; the error rate's is the
    # fixed design's bootstrap CI.
    assert agg["ci"] == pytest.approx([agg["baseline"] * rci[0], agg["baseline"] * rci[1]], rel=1e-4)
    assert agg["verdict"] == "regressed" and by_row[("Aggregated", "error_rate")]["verdict"] != "regressed"
    text = (out / "compare.txt").read_text()
    assert "sequential: stopped at the look at pair 3 of 6 (first look 3), every gated row decisive" in text
    assert "sequential: stopped" in (out / "compare.html").read_text()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--look",), "--look is one look of a sequential design: give --sequential K"),
        (("--sequential", "2", "--look"), "--sequential 2 --first-look 3: need 2 <= first look <= K"),
        (("--sequential", "5", "--metrics", "error_rate", "--look"), "--sequential: judges throughput"),
    ],
)
def test_bad_sequential_options_are_one_line(sides, options, expected):
    a, b = sides
    res = run_module("swarmbench", "compare", a, b, *options)
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and expected in lines[0], lines
