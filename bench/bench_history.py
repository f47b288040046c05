"""Benchmark of the history store, the trend and the gate (issue 26's goals). Prints figures; asserts nothing.

    python bench/bench_history.py [--runs 10000] [--names 10] [--seeds 2000] [--store PATH_OR_URL]
    python bench/bench_history.py --commands-only --store PATH  # part 2's commands, on a kept store

1. The store: RUNS runs of NAMES request names (+ Aggregated) into a new SQLite file (or --store:
   a postgresql:// URL, or a file path kept afterwards): in chunks of 200 runs a transaction (a
   backfill) and one run a transaction (CI adding its run), then the bytes a run costs: the file's
   size over the runs, and without the HDR histograms. Each name's histogram is a real one, the
   encoded text of tests/fixtures/exact (what a real run folder holds, ~450-650 bytes).
2. The answers on that store (issue 32's goal, 10,000 runs x 10 names: `trend` <= 2 s, the gate
   <= 1 s): in the process, the trend (every name's series of 7 metrics read back, then change
   points on each: compare/trend.py trend()) and the gate (gate_outcome: the newest run against
   the runs before it), best of 3; then the whole commands as a user runs them, each in a fresh
   process, imports included, COMMAND_REPEAT times alternating, wall time and user CPU (median,
   min-max):
       swarmbench trend --history STORE
       swarmbench compare --history STORE RUN -o OUT   (RUN: candidate_folder, a real run folder)
   The user CPU is the figure to compare on a shared machine (the wall time is what the other jobs
   leave). Python's bytecode cache is written for them (an installed package has one; without it,
   PYTHONDONTWRITEBYTECODE=1, every process compiles the package again: ~0.5 s more).
3. The statistics on synthetic series, over SEEDS seeds: +8 % at run 25 of 50 with 3 % noise found
   at all and within one run; false change points on flat 50-run series; the prediction interval's
   coverage (n = 10, 95 %).
The gate's power on real runs: bench/bench_gate.py.

Measured on 2 cores shared with 5-6 other jobs (load average 11-16: wall times 2-7x the CPU's),
`swarmbench trend` on 10,000 runs x 10 names, 5 fresh processes alternating with the code before
issue 32's speed work: user CPU median 4.29 s (4.10-4.48) before, 3.33 s (3.18-3.59) after; the
gate's 0.56 s (0.47-0.61) either way. This script's part 2 alone: trend 3.0 s user (2.7-3.5), wall
6.3 s (4.7-6.7); the gate 0.59 s user (0.48-0.64), wall 1.29 s (0.92-1.44).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from swarmbench.compare.trend import TREND_METRICS, change_points, gate_outcome, prediction_interval, trend
from swarmbench.core.folder import utc_iso
from swarmbench.history import NameStats, RunData, open_store, read_run

ROOT = Path(__file__).resolve().parent.parent

CHUNK = 200
"""Runs per transaction in the backfill part (history/store.py CHUNK)."""

SINGLE_ADDS = 200
"""Runs added one transaction each, after the backfill (what a CI job does once per run)."""

COMMAND_REPEAT = 5
"""Fresh processes per command timed in part 2 (median and range)."""

FIRST_START = datetime(2027, 1, 1, tzinfo=UTC)
"""The synthetic history's first run (then one every 2 minutes: 10,000 runs span two weeks)."""


def synthetic_runs(count: int, names: int, seed: int = 0) -> list[RunData]:
    """COUNT runs of one configuration, every name's p99 stepping +8 % at 60 % of the history
    (noise 3 %), each name with a real encoded histogram."""
    template = read_run(ROOT / "tests" / "fixtures" / "exact" / "repeat-1", branch="main", testbed="bench")
    hdrs = [s.hdr for s in template.stats if s.hdr]
    rng = np.random.default_rng(seed)
    noise = 1 + 0.03 * rng.standard_normal((count, names + 1, 7))
    noise[int(count * 0.6) :, :, 4] *= 1.08
    scale = dict(zip(TREND_METRICS, (400, 5, 9, 12, 20, 40, 80), strict=True))
    runs = []
    for i in range(count):
        stats = []
        for k in range(names + 1):
            aggregated = k == names
            figures = {m: scale[m] * noise[i, k, j] for j, m in enumerate(TREND_METRICS)}
            stats.append(NameStats(type="" if aggregated else "GET",
                                   name="Aggregated" if aggregated else f"GET /name/{k}",
                                   requests=12_000, failures=3, exact=True,
                                   hdr=None if aggregated else hdrs[k % len(hdrs)], **figures))  # fmt: skip
        started = utc_iso(FIRST_START + timedelta(minutes=2 * i))
        identity = {"run_key": f"bench-{i}@{started}", "run_id": f"bench-{i}", "started_at": started}
        runs.append(dataclasses.replace(template, git_commit=f"{i:040x}", stats=tuple(stats), **identity))
    return runs


def bench_store(spec: str, runs: list[RunData]) -> dict[str, float]:
    """Add RUNS, backfill-style then one by one; the times and (SQLite) the bytes a run costs."""
    backfill, singles = runs[:-SINGLE_ADDS], runs[-SINGLE_ADDS:]
    out: dict[str, float] = {}
    with open_store(spec) as store:
        t0 = time.perf_counter()
        for start in range(0, len(backfill), CHUNK):
            store.add_runs(backfill[start : start + CHUNK])
        out["backfill_runs_per_s"] = len(backfill) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for run in singles:
            store.add_runs([run])
        out["single_add_ms"] = (time.perf_counter() - t0) / len(singles) * 1000
        t0 = time.perf_counter()
        out["already_there"] = float(sum(not added for added in store.add_runs(runs[:CHUNK])))
        out["dedupe_check_ms_per_run"] = (time.perf_counter() - t0) / CHUNK * 1000
    if "://" not in spec:
        out["bytes_per_run"] = file_bytes(Path(spec)) / len(runs)
    return out


def file_bytes(path: Path) -> int:
    """The SQLite file's size with its write-ahead log folded in."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.stat().st_size


def bytes_without_hdr(runs: list[RunData]) -> float:
    """Bytes a run costs in a store without histograms (the numbers alone)."""
    bare = [
        dataclasses.replace(r, stats=tuple(dataclasses.replace(s, hdr=None) for s in r.stats)) for r in runs
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bare.sqlite"
        with open_store(path) as store:
            for start in range(0, len(bare), CHUNK):
                store.add_runs(bare[start : start + CHUNK])
        return file_bytes(path) / len(runs)


def bench_answers(spec: str, new: RunData, repeat: int = 3) -> dict[str, float]:
    """Best of REPEAT, in seconds: the series read back alone, the trend (read + change points),
    the gate of NEW (a run after every stored one); and what the trend found on the synthetic step."""
    best: dict[str, float] = {}
    with open_store(spec) as store:
        (config,) = store.configurations()
        for _ in range(repeat):
            t0 = time.perf_counter()
            whole = store.series(config.fingerprint, config.host, config.testbed, config.branch,
                                 metrics=TREND_METRICS)  # fmt: skip
            t1 = time.perf_counter()
            changes = trend(store, config)
            t2 = time.perf_counter()
            outcome, comparable = gate_outcome(store, [new])
            t3 = time.perf_counter()
            for name, value in (("trend_read_s", t1 - t0), ("trend_s", t2 - t1), ("gate_s", t3 - t2)):
                best[name] = min(best.get(name, float("inf")), value)
    n, series = len(whole.runs), len(whole.values) * len(TREND_METRICS)
    step = int(n * 0.6)  # synthetic_runs: every name's p99 steps there, the rest is flat
    p99 = [c for c in changes if c.metric == "p99_ms" and abs(c.point.index - step) <= 1]
    best["series"], best["gate_comparable_runs"] = float(series), float(comparable)
    best["gate_rows"] = float(len(outcome.rows)) if outcome else 0.0
    best["p99_step_found_within_one_run"] = len({(c.type, c.name) for c in p99}) / len(whole.values)
    flat = [c for c in changes if c.metric != "p99_ms"]
    best["flat_false_change_points_per_1000_runs"] = len(flat) / (series - len(whole.values)) * 1000 / n
    return best


def candidate_folder(where: Path, after: int) -> Path:
    """A run folder for the gate: tests/fixtures/exact/repeat-1 (the load of synthetic_runs') on
    testbed bench, started after the AFTER synthetic runs, its 3 request names renamed to the
    history's GET /name/0 .. 2 (with Aggregated: 4 names in common, the other 7 only in the history)."""
    folder = where / "candidate"
    shutil.copytree(ROOT / "tests" / "fixtures" / "exact" / "repeat-1", folder)
    renames = {"POST,POST /albums": "GET,GET /name/2", "GET /albums/{id}": "GET /name/1",
               "GET /albums": "GET /name/0", "POST /albums": "GET /name/2", '"POST"': '"GET"'}  # fmt: skip
    for path in folder.iterdir():
        if path.suffix in (".csv", ".json") and path.name != "run.json":
            text = path.read_text()
            for old, new in renames.items():
                text = text.replace(old, new)
            path.write_text(text)
    run = json.loads((folder / "run.json").read_text())
    started = FIRST_START + timedelta(minutes=2 * after)
    run.update(run_id="candidate", testbed="bench", started_at=utc_iso(started),
               ended_at=utc_iso(started + timedelta(seconds=8)))  # fmt: skip
    (folder / "run.json").write_text(json.dumps(run, indent=2))
    return folder


def bench_commands(spec: str, candidate: Path, where: Path, repeat: int = COMMAND_REPEAT) -> dict[str, float]:
    """`swarmbench trend` and the gate of CANDIDATE, as part 2 of the module docstring says: wall
    time and user CPU per command, median, min and max of REPEAT fresh processes (alternating)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    commands = {
        "trend": lambda i: ["trend", "--history", spec],
        "gate": lambda i: ["compare", "--history", spec, str(candidate), "-o", str(where / f"gate-{i}")],
    }
    taken: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in commands}
    for i in range(-1, repeat):  # -1: a first run, untimed, writes the bytecode cache
        for name, args in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "swarmbench", *args(i)], cwd=ROOT, env=env,
                                  capture_output=True, text=True)  # fmt: skip
            wall = time.perf_counter() - t0
            if done.returncode not in (0, 3):
                raise SystemExit(f"swarmbench {' '.join(args(i))}: exit {done.returncode}\n{done.stderr}")
            if i >= 0:
                taken[name][0].append(wall)
                taken[name][1].append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before)
    out = {}
    for name, (walls, users) in taken.items():
        for what, values in (("wall", walls), ("user", users)):
            out[f"{name}_cli_{what}_median_s"] = statistics.median(values)
            out[f"{name}_cli_{what}_min_s"], out[f"{name}_cli_{what}_max_s"] = min(values), max(values)
    return out


def rates(seeds: int) -> dict[str, float]:
    """The statistics' rates on synthetic series (the module docstring, part 3)."""
    step_found = step_hits = flat_false = covered = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        x = 100 * (1 + 0.03 * rng.standard_normal(50))
        flat_false += bool(change_points(x))
        x[25:] *= 1.08
        found = change_points(x)
        step_found += bool(found)
        step_hits += any(abs(cp.index - 25) <= 1 for cp in found)
        past, new = rng.normal(100, 3, 10), rng.normal(100, 3)
        low, high = prediction_interval(past)
        covered += low <= new <= high
    counts = {
        "step_found": step_found,
        "step_found_within_one_run": step_hits,
        "flat_false_change_point_rate": flat_false,
        "prediction_interval_coverage_95": covered,
    }
    return {name: value / seeds for name, value in counts.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--names", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--store", help="a postgresql:// URL or a file path (kept); default a temp file")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--commands-only", action="store_true",
                        help="time part 2's commands alone on --store, a store part 1 built")  # fmt: skip
    args = parser.parse_args(argv)
    figures: dict[str, float] = {"runs": float(args.runs), "names": float(args.names)}
    with tempfile.TemporaryDirectory() as folder:
        spec = args.store or str(Path(folder) / "history.sqlite")
        if not args.commands_only:
            runs = synthetic_runs(args.runs + 1, args.names)
            stored, new = runs[:-1], runs[-1]
            figures.update(bench_store(spec, stored))
            if "://" not in spec:
                figures["bytes_per_run_without_hdr"] = bytes_without_hdr(stored)
            figures.update(bench_answers(spec, new))
        figures.update(bench_commands(spec, candidate_folder(Path(folder), args.runs + 1), Path(folder)))
    if not args.commands_only and args.seeds > 0:  # --seeds 0: the store and the commands alone
        figures.update(rates(args.seeds))
    for name, value in figures.items():
        print(f"{name:40s} {value:12.4g}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
