"""`python -m swarmbench compare` on real runs: real Locust processes against the real Go target.

A/A: the same settings, runs interleaved, 3 repeats per side and one run against one
run: no metric may be called regressed or improved, exit 0. A/B: ALBUMS_DELAY 10 ms against 11 ms,
6 runs a side: p50 regressed with a CI holding +1 ms, exit 3. Plus bad input: one line naming the
path, exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Target, run_locust, run_module

# Verdicts on real runs' latency: run alone (make test-py). Bad input's one line is not timed.
QUIET = pytest.mark.quiet

LOAD = ["-t", "10s", "-u", "4", "-r", "4", "--wait-time", "constant 0.05"]
"""Short and light: 4 users leave the shared CPU idle enough that 10 ms of delay dominates p50."""


def record(target: Target, folder: Path, run_id: str) -> Path:
    res = run_locust(
        "--headless",
        "-H",
        target.url,
        *LOAD,
        "--results-dir",
        str(folder),
        "--run-id",
        run_id,
        "AlbumsHttpUser",
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return folder / run_id


ORDER = "acbcacbcacbc"
"""12 runs for both tests: a and b are the same 10 ms target (A/A, 3 against 3), c is 11 ms. The
A/B compares all six 10 ms runs (folder `ten`: a and b) with the six of c: with 3 against 3, the
t-widened CI's lower end sat 0.1 ms above the 3 % band (Welch df ~4); 6 against 6 (df ~10) puts it
~0.3 ms above. Runs alternate, so a drift over the stretch hits every set alike."""


@pytest.fixture(scope="module")
def runs(albums_binary, tmp_path_factory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("compare-runs")
    ten, eleven = Target(albums_binary, ALBUMS_DELAY="10ms"), Target(albums_binary, ALBUMS_DELAY="11ms")
    try:
        seen = {side: 0 for side in "abc"}
        for side in ORDER:
            seen[side] += 1
            record(eleven if side == "c" else ten, root / side, f"{side}{seen[side]}")
        (root / "ten").mkdir()
        for run in [*(root / "a").iterdir(), *(root / "b").iterdir()]:
            (root / "ten" / run.name).symlink_to(run, target_is_directory=True)
        yield root
    finally:
        ten.stop()
        eleven.stop()


def compare(*args: str | Path) -> tuple[int, dict | None, str]:
    res = run_module("swarmbench", "compare", *args, timeout=120)
    out = Path(args[args.index("-o") + 1]) if "-o" in args else None
    data = json.loads((out / "compare.json").read_text()) if out and (out / "compare.json").exists() else None
    return res.returncode, data, res.stdout + res.stderr


@QUIET
def test_a_a_repeats_and_single_runs_are_never_called_changed(runs, tmp_path):
    a, b = runs / "a", runs / "b"
    code, data, printed = compare(a, b, "-o", tmp_path / "sets")
    assert code == 0, printed
    assert {r["verdict"] for r in data["results"]} <= {"no change", "inconclusive"}, printed
    assert len(data["baseline"]) == len(data["candidate"]) == 3
    code, data, printed = compare(a / "a1", b / "b1", "-o", tmp_path / "single")
    assert code == 0, printed
    assert {r["verdict"] for r in data["results"]} <= {"no change", "inconclusive"}, printed
    assert "one run on a side cannot show run-to-run variance" in printed
    out = tmp_path / "single"
    assert {p.name for p in out.iterdir()} == {"compare.txt", "compare.json", "junit.xml", "compare.html"}
    assert (out / "junit.xml").read_text().count("<testcase") == len(data["results"])


@QUIET
def test_a_b_one_more_millisecond_is_a_p50_regression(runs, tmp_path):
    """1 ms on a p50 of ~13.5 ms (10 ms delay + this shared machine's overhead) is ~7 %: the band is
    3 % so the question is "is a 7 % change seen", not "does it clear the default 5 % band by a
    whole CI" (6 runs of 10 s a side cannot promise that on a busy 2-core machine)."""
    code, data, printed = compare(
        runs / "ten", runs / "c", "-o", tmp_path / "out", "--metrics", "p50,throughput", "--min-effect", "3"
    )
    assert code == 3, printed
    p50 = next(r for r in data["results"] if r["name"] == "Aggregated" and r["metric"] == "p50")
    assert p50["verdict"] == "regressed", printed
    assert p50["ci"][0] <= 1.0 <= p50["ci"][1], printed
    assert any(s["setting"] == "host" for s in data["settings_differ"])  # named, not refused


def test_bad_input_is_one_line_naming_the_path_and_nothing_is_written(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    cases = [
        (tmp_path / "missing", "missing: not a folder"),
        (tmp_path, "no"),
    ]
    for path, expected in cases:
        code, data, printed = compare(path, run, "-o", tmp_path / "out")
        assert code == 2 and data is None
        lines = printed.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and expected in lines[0], printed
    code, _, printed = compare(run, run, "-o", run / "inside")
    assert code == 2 and "inside the run folder" in printed and not (run / "inside").exists()
