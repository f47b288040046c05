"""Duet runs (`DUET=1 make ab`): A and B at once in one Locust run, compared in pairs.

The statistic on synthetic duets with a known answer (interference shared by both sides: a common
random factor per window), then real short duet runs of two real Go targets (LOCAL=1): 10 ms against
30 ms is `regressed` with exit 3, every request name tagged and both sides served alike; A against
A is not. Bad settings: one line, exit 2, nothing created.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import interrupt_when, interruptible, run_module

from swarmbench import RunFolder
from swarmbench.compare import duet, sequential
from swarmbench.compare.stats import Grid, Run, Side
from swarmbench.core.checks import AGGREGATED, INCONCLUSIVE, REGRESSED

QUIET = pytest.mark.quiet  # verdicts on real runs' latency: run alone (make test-py)

# --- the statistic, on synthetic duets with a known answer -----------------------------------------

STEP = 0.003
"""Synthetic buckets: log10-spaced, 0.7 % wide (HDR's are 0.1 %; coarser keeps the test fast)."""
VALUES = 10 ** (STEP * np.arange(1, 1 + int(3 / STEP)))  # 1 ms .. 1 s, each bucket's upper value


def histograms(samples: list[np.ndarray]) -> np.ndarray:
    """Each window's samples (ms) as a row of bucket counts."""
    out = np.zeros((len(samples), len(VALUES)))
    for w, xs in enumerate(samples):
        index = np.clip(np.floor(np.log10(xs) / STEP).astype(int), 0, len(VALUES) - 1)
        out[w] = np.bincount(index, minlength=len(VALUES))
    return out


def interference(rng: np.random.Generator, windows: int, sigma: float = 0.3, rho: float = 0.6) -> np.ndarray:
    """A slow-down factor per window, log-normal and autocorrelated (AR(1)): a neighbour's load that
    lasts seconds, ±30 % -- far more than the change to find."""
    z = np.zeros(windows)
    for w, e in enumerate(rng.standard_normal(windows)):
        z[w] = e if w == 0 else rho * z[w - 1] + math.sqrt(1 - rho * rho) * e
    return np.exp(sigma * z)


def synthetic_duet(
    rng: np.random.Generator, ratio: float, shared: bool, windows: int = 20, per_window: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """A's and B's windows: service times log-normal around 10 ms, B's RATIO times A's, each window
    slowed by a factor: the same one for both sides (SHARED: a duet) or each side its own (runs at
    different times)."""
    fa = interference(rng, windows)
    fb = fa if shared else interference(rng, windows)
    a = [fa[w] * rng.lognormal(math.log(10), 0.3, per_window) for w in range(windows)]
    b = [ratio * fb[w] * rng.lognormal(math.log(10), 0.3, per_window) for w in range(windows)]
    return histograms(a), histograms(b)


def test_paired_windows_cancel_shared_interference_and_the_interval_covers_the_truth():
    # B is 10 % slower; every window of both sides is slowed by the same ±30 % factor. The true
    # ln ratio of the whole-run p95 is ln 1.1 whatever the factors (each window is scaled alike).
    rng = np.random.default_rng(7)
    truth, tries = math.log(1.1), 100
    covered, paired, unpaired = 0, [], []
    for _ in range(tries):
        a, b = synthetic_duet(rng, 1.1, shared=True)
        p = duet.pair(a, b, VALUES, 95.0, rng, replicates=400)
        low, high = duet.interval(p.estimate, p.se, p.df, 0.95)
        covered += low <= truth <= high
        paired.append(p.estimate)
        a, b = synthetic_duet(rng, 1.1, shared=False)  # the same statistic, sides not sharing
        unpaired.append(duet.pair(a, b, VALUES, 95.0, rng, replicates=50).estimate)
    assert covered / tries >= 0.90, covered
    assert abs(np.mean(paired) - truth) < 0.01, np.mean(paired)
    # Measured 0.034 against 0.19 (seed 7: 5.6 times); the goal for real runs is 3 times.
    assert np.std(paired) * 3 < np.std(unpaired), (np.std(paired), np.std(unpaired))


def test_runs_are_combined_by_their_spread_when_they_disagree_more_than_their_errors_say():
    close = [duet.Pair(0.10, 0.02, 20, 6.0), duet.Pair(0.11, 0.02, 20, 6.0)]
    se, df = duet.combine(close)
    assert se == pytest.approx(math.sqrt(2 * 0.02**2) / 2) and df == pytest.approx(12.0)
    apart = [duet.Pair(0.0, 0.01, 20, 6.0), duet.Pair(0.2, 0.01, 20, 6.0), duet.Pair(0.1, 0.01, 20, 6.0)]
    se, df = duet.combine(apart)
    assert se == pytest.approx(0.1 / math.sqrt(3)) and df == 2.0
    assert math.isnan(duet.combine([duet.Pair(math.nan, math.nan, 0)])[0])


def test_windows_where_one_side_has_no_request_are_left_out_of_both():
    a = np.array([[0.0, 2.0], [1.0, 0.0], [0.0, 0.0]])
    b = np.array([[1.0, 1.0], [0.0, 0.0], [3.0, 0.0]])
    assert duet.paired_windows(a, b).tolist() == [0]
    p = duet.pair(a, b, np.array([10.0, 20.0]), 50.0, np.random.default_rng(0))
    assert p.windows == 1 and p.estimate == pytest.approx(math.log(10 / 20)) and math.isnan(p.se)


def test_a_duet_runs_figures_are_its_pair_estimate_and_the_sequential_look_keeps_its_alpha():
    # Each duet run is one pair of a sequential duet: d = ln(B/A) of its whole-run percentiles
    # (run_figures), the estimate of its Pair. On synthetic A/A duets with a ±30 % slow-down shared by
    # both sides, a look after every run from run 3 to 8 calls p95 `regressed` in at most ~5 % of
    # sequences; B 15 % slower is called within 8 runs in nearly all.
    rng = np.random.default_rng(11)
    grid = Grid(["x"], {"x": slice(0, len(VALUES))}, VALUES)
    a, b = synthetic_duet(rng, 1.15, shared=True)
    figures = duet.run_figures(Side([Run(a, *[np.zeros((len(a), 1))] * 2)]),
                               Side([Run(b, *[np.zeros((len(b), 1))] * 2)]), grid, ["p95"])  # fmt: skip
    (fa,), (fb,) = figures[("x", "p95")]
    assert math.log(fb / fa) == pytest.approx(duet.pair(a, b, VALUES, 95.0, rng, 10).estimate)

    def regressed_by(ratio: float, sequences: int, runs: int = 8) -> float:
        alarms = 0
        for _ in range(sequences):
            d = []
            for _ in range(runs):
                a, b = synthetic_duet(rng, ratio, shared=True, per_window=30)
                (fa,), (fb,) = duet.run_figures(
                    Side([Run(a, *[np.zeros((len(a), 1))] * 2)]),
                    Side([Run(b, *[np.zeros((len(b), 1))] * 2)]), grid, ["p95"])[("x", "p95")]  # fmt: skip
                d.append(math.log(fb / fa))
                state = sequential.look({("x", "p95"): d}, max_pairs=runs, alphas={("x", "p95"): 0.05},
                                        min_effect=0.0)  # fmt: skip
                if state.looked and state.rows[0].verdict != INCONCLUSIVE:
                    alarms += state.rows[0].verdict == REGRESSED
                    break
        return alarms / sequences

    # Band 0, so that the design's own alpha (5 %, one-sided) is what is measured.
    # Measured (seed 11): 6.2 % of 400 A/A sequences (Monte Carlo SD 1.1 %), 100 % of 50 at +15 %.
    false_alarms, power = regressed_by(1.0, 400), regressed_by(1.15, 50)
    assert false_alarms <= 0.075, false_alarms  # 5 % + ~2 Monte Carlo SDs
    assert power >= 0.9, power


# --- real duet runs --------------------------------------------------------------------------------

SHORT = {
    "DUET": "1",
    "LOCAL": "1",
    "REPEATS": "1",
    "RUN_TIME": "8s",
    "LOCUST_USERS": "4",
    "LOCUST_WAIT_TIME": "constant 0.05",
}
"""One 8 s duet run, 4 light users: 8 paired windows (blocks of 3)."""


def duet_ab(results: Path, binary: Path | None, timeout: float = 300, **settings: str):
    env = {**os.environ, **SHORT, "SWARMBENCH_RESULTS": str(results), "AB_ID": "ab", **settings}
    if binary:
        env["SWARMBENCH_TARGET_BIN"] = str(binary)
    res = run_module("swarmbench", "ab", env=env, timeout=timeout)
    return res.returncode, res.stdout + res.stderr, results / "ab"


def verdicts(root: Path) -> dict[tuple[str, str], str]:
    data = json.loads((root / "compare" / "compare.json").read_text())
    return {(r["name"], r["metric"]): r["verdict"] for r in data["results"]}


@QUIET
def test_a_duet_of_10_against_30_ms_is_a_regression_with_every_name_tagged(albums_binary, tmp_path):
    code, printed, root = duet_ab(tmp_path, albums_binary, A="ALBUMS_DELAY=10ms", B="ALBUMS_DELAY=30ms")
    assert code == 3, printed
    run = RunFolder.open(root / "duet" / "d1")
    names = [name for (_, name) in run.stats if name != AGGREGATED]
    assert names and all(n.startswith(("[A] ", "[B] ")) for n in names), names
    served = {
        side: sum(r.requests for (_, n), r in run.stats.items() if n.startswith(f"[{side}] "))
        for side in "AB"
    }
    # Each step runs on both sides; the users' last steps in flight when the run ends differ by one.
    assert abs(served["A"] - served["B"]) <= max(4, 0.03 * served["A"]), served
    found = verdicts(root)
    assert {name for name, _ in found} == {"GET /albums", "GET /albums/{id}", "POST /albums", AGGREGATED}
    assert found[(AGGREGATED, "p50")] == found[(AGGREGATED, "p95")] == "regressed", printed
    data = json.loads((root / "compare" / "compare.json").read_text())
    assert data["method"] == duet.METHOD
    p50 = data["duet"]["pairs"][AGGREGATED]["p50"]
    assert 0.9 < p50["ln_ratio"] < 1.3 and p50["se"] > 0, p50  # ln(30/10) = 1.1, plus the target's ~1-2 ms
    assert p50["runs"][0]["windows"] == 8, p50  # every second of the 8 s run, paired
    targets = json.loads((root / "duet" / "targets.json").read_text())["d1"]
    assert (targets["A"]["settings"], targets["B"]["settings"]) == (
        {"ALBUMS_DELAY": "10ms"},
        {"ALBUMS_DELAY": "30ms"},
    )
    assert targets["A"]["target"]["cpu_seconds"] > 0 and targets["B"]["target"]["cpu_seconds"] > 0
    page = (root / "compare" / "compare.html").read_text()
    assert "a duet cannot see contention" in page and "CPU (d1): target A" in page
    assert json.loads((root / "ab.json").read_text())["state"] == "complete"


@QUIET
def test_an_a_a_duet_is_not_a_regression(albums_binary, tmp_path):
    code, printed, root = duet_ab(tmp_path, albums_binary, A="ALBUMS_DELAY=10ms")
    assert code == 0, printed
    assert "regressed" not in set(verdicts(root).values()), printed


GATED = "--metrics p50,p95 --names Aggregated"
"""The budget tests' gated rows: two (each row gated divides the 5 %, docs/compare.md)."""


def sequence(root: Path) -> dict:
    return json.loads((root / "ab.json").read_text())["sequential"]


@QUIET
def test_a_duet_with_a_budget_stops_early_once_10_against_30_ms_is_decided(albums_binary, tmp_path):
    # A duet run for a pair, a look after each: decided at the first look (run 3) or soon after, long
    # before the ~15 runs the 2-minute budget buys (~8 s a duet run of 3 s here).
    ten_thirty = dict(
        A="ALBUMS_DELAY=10ms", B="ALBUMS_DELAY=30ms", BUDGET="2m", RUN_TIME="3s", COMPARE_ARGS=GATED
    )
    code, printed, root = duet_ab(tmp_path, albums_binary, **ten_thirty)
    assert code == 3, printed
    seq = sequence(root)
    done = seq["looks"][-1]["pairs"]
    assert seq["stopped"] == "decided" and seq["budget_s"] == 120 and 3 <= done < seq["max_pairs"], seq
    assert "duet run 1/" in printed and "the first look is at duet run 3" in printed, printed
    # One line per look, as the interleaved sequence prints: what it could catch now, the time to decide.
    lines = re.findall(r"duet run \d+/\d+: catches now p50 ±[\d.]+%, p95 ±[\d.]+%; .*", printed)
    assert len(lines) == done - 2 and lines[-1].endswith("decided (p50 regressed, p95 regressed)"), printed
    runs = sorted(p.name for p in (root / "duet").iterdir() if p.is_dir())
    assert runs == [f"d{i}" for i in range(1, done + 1)], runs
    found = json.loads((root / "compare" / "compare.json").read_text())
    assert found["sequential"]["unit"] == "duet run" and found["sequential"]["pairs"] == done
    assert {r["metric"]: r["verdict"] for r in found["results"]} == {"p50": "regressed", "p95": "regressed"}
    assert "sequential: stopped at the look at duet run" in (root / "compare" / "compare.txt").read_text()
    assert "<failure" in (root / "compare" / "junit.xml").read_text()
    # Offline, on the saved duet runs: the same look.
    res = run_module("swarmbench", "compare", "--duet", root / "duet", "--sequential", str(seq["max_pairs"]),
                     "--look", *GATED.split())  # fmt: skip
    assert res.returncode == 0 and json.loads(res.stdout)["pairs"] == done, res.stdout + res.stderr
    # The same AB_ID again: the sequence ended, nothing runs; compared again (the first kept).
    code, printed, _ = duet_ab(tmp_path, albums_binary, timeout=60, **ten_thirty)
    assert code == 3 and "the sequence ended (decided)" in printed, printed[-2000:]
    assert (root / "compare-2" / "compare.json").is_file()


@QUIET
def test_an_a_a_duet_with_a_budget_is_never_called_regressed(albums_binary, tmp_path):
    # ~5 duet runs in 40 s: `no change` once the repeated CIs are inside the band, else the budget is
    # spent with the rows `inconclusive`; never `regressed` (nor `improved`).
    code, printed, root = duet_ab(
        tmp_path, albums_binary, A="ALBUMS_DELAY=10ms", BUDGET="40s", RUN_TIME="3s", COMPARE_ARGS=GATED
    )
    assert code == 0, printed
    seq = sequence(root)
    assert seq["stopped"] in ("decided", "budget spent", f"all {seq['max_pairs']} duet runs done"), seq
    found = set(verdicts(root).values())
    assert found <= {"no change", "inconclusive"}, printed
    assert found == {"no change"} or seq["stopped"] != "decided", (found, seq)


def test_an_interrupted_duet_with_a_budget_keeps_its_runs_and_resumes_its_sequence(albums_binary, tmp_path):
    # Not quiet: what it asserts is the sequence kept and continued; its verdict is 10 ms against 30.
    settings = dict(
        A="ALBUMS_DELAY=10ms", B="ALBUMS_DELAY=30ms", BUDGET="2m", RUN_TIME="3s", COMPARE_ARGS=GATED
    )
    env = {**os.environ, **SHORT, "SWARMBENCH_RESULTS": str(tmp_path), "AB_ID": "ab", **settings}
    env["SWARMBENCH_TARGET_BIN"] = str(albums_binary)
    root = tmp_path / "ab"

    def state() -> dict:
        path = root / "ab.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    proc = interruptible([sys.executable, "-m", "swarmbench", "ab"], env)
    # Ctrl-C during d2: once d1 is recorded done (K planned from its time) and d2 has its folder.
    err = interrupt_when(
        proc, lambda: (root / "duet" / "d2").exists() and state().get("counts", {}).get("done") == 1, "d2"
    )
    assert proc.returncode == 130 and "1 duet runs kept" in err and "AB_ID=ab" in err, err
    kept = state()
    assert kept["state"] == "interrupted" and kept["sequential"]["max_pairs"] >= 3, kept
    assert [(p["id"], p["status"]) for p in kept["points"]][:2] == [("d1", "done"), ("d2", "interrupted")]
    d1 = (root / "duet" / "d1" / "run.json").stat().st_mtime_ns

    code, printed, _ = duet_ab(tmp_path, albums_binary, timeout=180, **settings)
    assert code == 3, printed[-3000:]
    assert (root / "duet" / "d1" / "run.json").stat().st_mtime_ns == d1, "a finished run was rerun"
    seq = sequence(root)
    assert seq["stopped"] == "decided" and seq["max_pairs"] == kept["sequential"]["max_pairs"], seq
    assert seq["spent_s"] > kept["sequential"]["spent_s"] and state()["state"] == "complete"
    assert (
        json.loads((root / "compare" / "compare.json").read_text())["sequential"]["pairs"]
        == seq["looks"][-1]["pairs"]
    )


@QUIET
def test_a_duet_of_two_hosts_starts_no_target_and_needs_no_local(two_hosts, tmp_path):
    fast, slow = two_hosts
    code, printed, root = duet_ab(tmp_path, None, LOCAL="", A_HOST=fast.url, B_HOST=slow.url)
    assert code == 3, printed
    assert verdicts(root)[(AGGREGATED, "p50")] == "regressed", printed
    targets = json.loads((root / "duet" / "targets.json").read_text())["d1"]
    assert (targets["A"]["host"], targets["B"]["host"]) == (fast.url, slow.url)
    assert RunFolder.open(root / "duet" / "d1").manifest.host == fast.url  # A is Locust's host


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (dict(LOCAL="0"), "DUET=1 runs A and B at once on this machine: set LOCAL=1"),
        (dict(LOCUST_LOCUSTFILE="locustfiles/albums.py"), "unset LOCUST_LOCUSTFILE"),
        (dict(A="ALBUMS_STORE=fast"), "A: ALBUMS_STORE='fast' is not one of"),
        (dict(COMPARE_ARGS="--metrics throughput"), "COMPARE_ARGS: a duet judges p50, p90, p95, p99 only"),
        (dict(BUDGET="5q"), "BUDGET='5q' is not a duration"),
    ],
)
def test_bad_duet_settings_are_one_line_and_nothing_runs(tmp_path, settings, expected):
    code, printed, _ = duet_ab(tmp_path, None, timeout=30, **settings)
    lines = printed.strip().splitlines()
    assert code == 2 and len(lines) == 1 and expected in lines[0], printed
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--look",), "--look is one look of a sequential design: give --sequential K"),
        (("--sequential", "2", "--look"), "--sequential 2 --first-look 3: need 2 <= first look <= K"),
        (
            ("--sequential", "5", "--metrics", "throughput"),
            "--metrics: a duet judges p50, p90, p95, p99 only",
        ),
    ],
)
def test_bad_sequential_duet_options_are_one_line_and_nothing_is_written(tmp_path, options, expected):
    res = run_module("swarmbench", "compare", "--duet", tmp_path, "-o", tmp_path / "out", *options)
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and expected in lines[0], lines
    assert list(tmp_path.iterdir()) == []
