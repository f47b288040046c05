"""Benchmark of the gate against history on real runs (issue 26's goal). Prints figures; asserts nothing.

    python bench/bench_gate.py [--pool DIR] [--runs 16] [--trials 4000]

Goal: with 10 past runs, one new run whose p95 is 10 % higher is called `regressed` in >= 90 % of
trials, an unchanged run in <= 5 % (this machine, the runs recorded in one session).

1. The runs: RUNS identical runs of the bundled target recorded now into a history
   (`swarmbench ab --record`, LOCAL=1, A/A: RUNS/2 + RUNS/2 interleaved runs of 20 s, `make ab`'s
   client AlbumsFastHttpUser, 8 users, constant 0.02 s wait, ALBUMS_DELAY=10ms: bench_compare.py's
   pool settings), kept in DIR (default: a temp folder); --pool DIR reads a history recorded
   before (DIR/history.sqlite) instead. Printed: each metric's run-to-run SD, relative to its mean.
2. Trials on the real runs: a trial draws 10 past runs and 1 other run as the candidate, and
   judges the candidate's Aggregated p95 as the gate does (compare/trend.py: the past runs since
   their last change point, the prediction interval of one new run, core/checks.py's verdict
   against the ±5 % band), once as it is and once times 1.10. Counted: `regressed` of each. The
   same for smaller bands (--min-effect 3, 2) and more past runs where the pool allows. One draw
   goes the whole way through gate_outcome (the store, what `compare --history` runs) as a check
   that the shortcut is the gate.
3. The same on synthetic runs: normal noise of a chosen SD, so that the run-to-run noise the goal
   needs can be read off (at 5 % band and 10 past runs, and with the alternatives above).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_compare import POOL_SETTINGS

from swarmbench.compare.trend import against_history, baseline, gate_outcome
from swarmbench.core.checks import AGGREGATED, MIN_EFFECT, REGRESSED, verdict
from swarmbench.history import open_store

ROOT = Path(__file__).resolve().parent.parent

SHIFT = 1.10
"""The candidate's p95 times this: the 10 % regression of the goal."""

PAST = 10
"""Past runs a trial judges against (the gate's default, compare/trend.py BASELINE_RUNS)."""

BANDS = (MIN_EFFECT, 0.03, 0.02)
"""--min-effect bands tried: the default first."""

NOISES = (0.005, 0.010, 0.013, 0.015, 0.020, 0.030)
"""Run-to-run SDs of p95 (relative) for the synthetic part."""


def record(where: Path, runs: int, delay: str | None) -> Path:
    """RUNS identical runs into WHERE/history.sqlite (module docstring, part 1); the store's path.
    DELAY: the target's ALBUMS_DELAY instead of the pool's 10 ms."""
    store = where / "history.sqlite"
    env = {**os.environ, **POOL_SETTINGS, "REPEATS": str(runs // 2), "SWARMBENCH_RESULTS": str(where),
           "AB_ID": "gate-pool", "SWARMBENCH_HISTORY": str(store),
           "LOCUST_USER_CLASSES": "AlbumsFastHttpUser"}  # fmt: skip
    if delay:
        env["A"] = f"ALBUMS_DELAY={delay}"
    what = f"A/A, {runs} runs of 20 s, {env['A']}"
    print(f"recording: python -m swarmbench ab --record ({what}) -> {store}", flush=True)
    subprocess.run([sys.executable, "-m", "swarmbench", "ab", "--record"], env=env, cwd=ROOT, check=True)
    return store


def pool(store: Path) -> tuple[dict[str, np.ndarray], list, object]:
    """The Aggregated figures of the configuration with the most runs: {metric: values in run
    order}, the runs' records, the configuration."""
    with open_store(store) as opened:
        config = opened.configurations()[0]
        series = opened.series(config.fingerprint, config.host, config.testbed, config.branch)
    values = {m: np.asarray(v) for m, v in series.values[("", AGGREGATED)].items()}
    return values, series.runs, config


def called(past: np.ndarray, value: float, band: float) -> bool:
    """Is VALUE (one new run's p95) `regressed` against PAST, as the gate calls it?"""
    d = against_history(baseline(past, len(past)), [value], 0.95)
    return verdict("p95", d, band) == REGRESSED


def trials(p95: np.ndarray, past: int, band: float, count: int, seed: int = 1) -> tuple[float, float]:
    """(share of shifted candidates called regressed, share of unchanged ones) over COUNT draws of
    PAST runs and one candidate from P95."""
    rng = np.random.default_rng(seed)
    shifted = same = 0
    for _ in range(count):
        order = rng.permutation(len(p95))
        history, candidate = p95[order[:past]], float(p95[order[past]])
        shifted += called(history, candidate * SHIFT, band)
        same += called(history, candidate, band)
    return shifted / count, same / count


def synthetic(noise: float, past: int, band: float, count: int) -> tuple[float, float]:
    """trials() on normal runs of relative SD NOISE around 100 (a fresh draw each trial)."""
    rng = np.random.default_rng(2)
    shifted = same = 0
    for _ in range(count):
        runs = 100 * (1 + noise * rng.standard_normal(past + 1))
        shifted += called(runs[:past], runs[past] * SHIFT, band)
        same += called(runs[:past], runs[past], band)
    return shifted / count, same / count


def end_to_end(store: Path, runs: list, value: float) -> str:
    """The last run through gate_outcome (the store, compare --history's code), its p95 set to
    VALUE: the Aggregated p95 verdict."""
    from swarmbench.history import read_run

    with open_store(store) as opened:
        last = runs[-1]
        folder = next((p for p in store.parent.rglob(last.run_id) if (p / "run.json").is_file()), None)
        if folder is None:
            return "(the run folder is not beside the store: skipped)"
        run = read_run(folder, branch=last.branch)
        stats = tuple(dataclasses.replace(s, p95_ms=value) if s.name == AGGREGATED else s for s in run.stats)
        outcome, _ = gate_outcome(opened, [dataclasses.replace(run, stats=stats)], branch=last.branch,
                                  metrics=["p95"])  # fmt: skip
    if outcome is None:
        return "(too few runs)"
    (row,) = [r for r in outcome.rows if r.name == AGGREGATED]
    return row.verdict


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, help="a folder holding history.sqlite recorded before")
    parser.add_argument("--runs", type=int, default=16, help="runs to record (even; default 16)")
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--keep", type=Path, help="record into this folder (kept) instead of a temp one")
    parser.add_argument(
        "--delay", help="the target's ALBUMS_DELAY for the recorded runs (default the pool's 10ms)"
    )
    args = parser.parse_args(argv)
    if args.pool:
        store = args.pool / "history.sqlite"
    else:
        where = args.keep or Path(tempfile.mkdtemp(prefix="bench-gate-"))
        where.mkdir(parents=True, exist_ok=True)
        store = record(where, args.runs, args.delay)
    values, runs, config = pool(store)
    p95 = values["p95_ms"]
    print(f"{len(runs)} runs of {config.host} on {config.testbed}, branch {config.branch or '-'}")
    print(f"p95 mean {float(np.mean(p95)):.2f} ms")
    sds = {m: float(np.std(v, ddof=1) / np.mean(v)) for m, v in values.items() if np.mean(v) > 0}
    print("run-to-run SD (relative): " + ", ".join(f"{m} {sd:.2%}" for m, sd in sds.items()))
    print(f"p95 of each run (ms): {' '.join(f'{v:.2f}' for v in p95)}")
    print(f"\nreal runs, {args.trials} draws of {PAST} past runs + 1 candidate (goal: >= 90 % / <= 5 %):")
    for past in sorted({PAST, len(p95) - 1}):
        for band in BANDS:
            shift, same = trials(p95, past, band, args.trials)
            print(f"  {past:2d} past runs, band ±{band:.0%}: 10 % p95 shift called regressed {shift:6.1%}, "
                  f"unchanged run {same:5.1%}")  # fmt: skip
    last = float(p95[-1])
    same, moved = end_to_end(store, runs, last), end_to_end(store, runs, last * SHIFT)
    print(f"through gate_outcome (the last run against the others): unchanged {same}, p95 x {SHIFT} {moved}")
    print("\nsynthetic runs (normal noise), 10 % p95 shift called regressed / unchanged called regressed:")
    for noise in NOISES:
        cells = []
        for past, band in ((PAST, MIN_EFFECT), (PAST, 0.03), (20, MIN_EFFECT)):
            shift, same = synthetic(noise, past, band, args.trials)
            cells.append(f"{past} past ±{band:.0%}: {shift:6.1%} / {same:4.1%}")
        print(f"  p95 SD {noise:.1%}:  " + ";  ".join(cells))


if __name__ == "__main__":
    main()
