"""Benchmark of the gate's truth on synthetic histories (issue 32's goals), fed through the store and the
command line as CI would. Prints figures; asserts nothing.

    python bench/bench_gate_truth.py [--histories 200] [--cli 20] [--speed-runs 10000]

Each history: 10 request names + Aggregated, every figure log-normal around a real run's (tests/
fixtures/exact/repeat-1's load, host and figures), stored with the store's API (history/store.py
add_runs: what `swarmbench history add` does), then a candidate judged by gate_outcome in the
process (compare/trend.py, what `swarmbench compare --history` computes). A subset of --cli histories
per case goes through the command line whole: the candidate written as a run folder (run.json,
locust_stats.csv, locust_latency_hdr.csv), `python -m swarmbench compare --history STORE FOLDER`,
its exit code; and the in-process exit code of the same candidate, read back from its folder, must
be the same (printed: how many agree).

Cases (goal in brackets; each rate with its count and a 95 % Wilson interval):
  A. 30 runs at 3 % noise, an unchanged candidate: exit 3 [<= 5 %]
  B. the same at 10 % noise [<= 5 %]
  C. 20 runs at 3 % noise, one of them +40 % (a busy machine): a +15 % candidate exits 3 [>= 80 %]
  D. the same, an unchanged candidate exits 0 [>= 90 %]
  E. 30 clean runs but one failure in main's newest, a candidate with 2 % failures: exit 3 [always]
  (C and D at 10 % noise too, for what the gate can and cannot see there.)
Speed: SPEED_RUNS runs x 10 names in one SQLite store, the gate of one new run in the process
(best of 3) and `swarmbench compare --history` whole in a fresh process [<= 1 s for the gate].
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from swarmbench.compare.history_stats import wilson
from swarmbench.compare.trend import gate_outcome
from swarmbench.core.checks import AGGREGATED, REGRESSED
from swarmbench.core.folder import utc_iso as iso
from swarmbench.history import NameStats, RunData, open_store, read_run

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "fixtures" / "exact" / "repeat-1"
NAMES = 10
FIRST = datetime(2027, 1, 1, tzinfo=UTC)
LATENCY = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
BASE = {"rps": 30.0, "p50_ms": 7.2, "p90_ms": 20.3, "p95_ms": 27.0, "p99_ms": 41.4, "p999_ms": 59.7,
        "max_ms": 63.7}  # fmt: skip
"""One name's figures (repeat-1's GET /albums, rounded); Aggregated: 10 x the requests and rps."""
REQUESTS = 1_000
"""Requests per name per run (Aggregated: NAMES x this)."""


SHARED = 0.0
"""The part of each figure's noise variance common to its whole run (--shared; 0: every figure on
its own, as the issue's synthetic histories; 1: a run is slower or faster as a whole)."""


def figures(
    rng: np.random.Generator, noise: float, latency: float = 1.0, common: float = 0.0
) -> dict[str, float]:
    """One name's figures in one run: log-normal with relative NOISE (COMMON: the run's shared
    standard normal draw, weighted by SHARED), latencies times LATENCY (and throughput divided by
    it: a slower service serves fewer requests), to µs as the files keep them."""

    def z() -> float:
        return math.sqrt(SHARED) * common + math.sqrt(1 - SHARED) * rng.standard_normal()

    out = {m: v * np.exp(noise * (z() if m in LATENCY else -z())) for m, v in BASE.items()}
    out = {m: v * latency if m in LATENCY else v / latency for m, v in out.items()}
    return {m: round(v, 3) for m, v in out.items()}


def run(template: RunData, rng: np.random.Generator, i: int, noise: float, *, latency: float = 1.0,
        failures: dict[str, int] | None = None, run_id: str | None = None) -> RunData:  # fmt: skip
    """Run I of a history: NAMES names + Aggregated, I minutes after FIRST."""
    failures = failures or {}
    common = rng.standard_normal()
    stats = []
    for k in range(NAMES):
        name = f"GET /n{k}"
        stats.append(NameStats("GET", name, REQUESTS, failures.get(name, 0), exact=True,
                               **figures(rng, noise, latency, common)))  # fmt: skip
    agg = figures(rng, noise, latency, common)
    agg["rps"] = round(agg["rps"] * NAMES, 3)
    stats.append(NameStats("", AGGREGATED, REQUESTS * NAMES, sum(failures.values()), exact=True, **agg))
    started = iso(FIRST + timedelta(minutes=i))
    name = run_id or f"{template.testbed}-r{i}"  # the store keeps one run per run_id@started_at
    return dataclasses.replace(template, run_key=f"{name}@{started}", run_id=name, started_at=started,
                               stats=tuple(stats))  # fmt: skip


def case_runs(
    case: str, rng: np.random.Generator, template: RunData, noise: float
) -> tuple[list[RunData], RunData]:
    """A history and its candidate for CASE (module docstring)."""
    if case in ("C", "D"):
        bad = int(rng.integers(20))
        past = [run(template, rng, i, noise, latency=1.4 if i == bad else 1.0) for i in range(20)]
        return past, run(template, rng, 20, noise, latency=1.15 if case == "C" else 1.0, run_id="cand")
    past = [run(template, rng, i, noise) for i in range(30)]
    if case == "E":
        past[-1] = run(template, rng, 29, noise, failures={"GET /n3": 1})
        failing = {f"GET /n{k}": round(0.02 * REQUESTS) for k in range(NAMES)}
        return past, run(template, rng, 30, noise, failures=failing, run_id="cand")
    return past, run(template, rng, 30, noise, run_id="cand")


def exit_of(store, candidate: RunData) -> int:
    """The exit code `compare --history` gives CANDIDATE (3: a row regressed; no verdict: 0)."""
    outcome, _ = gate_outcome(store, [candidate])
    return 3 if outcome is not None and outcome.count(REGRESSED) else 0


def write_folder(candidate: RunData, folder: Path) -> Path:
    """CANDIDATE as a run folder the real reader reads back: TEMPLATE's run.json with its identity,
    locust_stats.csv and locust_latency_hdr.csv with its names and figures."""
    folder.mkdir(parents=True)
    manifest = json.loads((TEMPLATE / "run.json").read_text())
    manifest.update(run_id=candidate.run_id, started_at=candidate.started_at.replace("Z", "+00:00"),
                    testbed=candidate.testbed, git_branch="pr")  # fmt: skip
    manifest["latency"]["requests"] = REQUESTS * NAMES
    (folder / "run.json").write_text(json.dumps(manifest))
    with open(TEMPLATE / "locust_stats.csv", newline="") as f:
        header = next(csv.reader(f))
    with open(folder / "locust_stats.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s in candidate.stats:
            row = dict.fromkeys(header, "0")
            row.update({"Type": s.type, "Name": s.name, "Request Count": s.requests,
                        "Failure Count": s.failures, "Requests/s": s.rps})  # fmt: skip
            w.writerow([row[h] for h in header])
    with open(folder / "locust_latency_hdr.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["type", "name", "kind", "count", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99.9_ms",
                    "p99.99_ms", "max_ms"])  # fmt: skip
        for s in candidate.stats:
            w.writerow([s.type, s.name, "service", s.requests, s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms,
                        s.p999_ms, s.max_ms, s.max_ms])  # fmt: skip
    (folder / "locust_latency_hdr.json").write_text('{"histograms": []}')
    return folder


def cli_exit(store: Path, folder: Path, out: Path) -> int:
    res = subprocess.run([sys.executable, "-m", "swarmbench", "compare", "--history", str(store), str(folder),
                          "-o", str(out)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    if res.returncode not in (0, 3):
        raise SystemExit(f"compare --history failed ({res.returncode}): {res.stderr[-2000:]}")
    return res.returncode


def rate(hits: int, count: int) -> str:
    low, high = wilson(hits, count, 1.96)
    return f"{hits}/{count} = {hits / count:5.1%} (95 % CI {low:.1%}-{high:.1%})"


def truth(histories: int, cli: int, noises: tuple[float, ...], which: str = "ABCDE") -> None:
    template = read_run(TEMPLATE, branch="main")
    cases = [("A", 0.03), ("B", 0.10), ("C", 0.03), ("D", 0.03), ("E", 0.03), ("C", 0.10), ("D", 0.10)]
    goals = {"A": "exit 3, goal <= 5 %", "B": "exit 3, goal <= 5 %",
             "C": "+15 % after a +40 % run: exit 3, goal >= 80 %",
             "D": "unchanged after a +40 % run: exit 0, goal >= 90 %",
             "E": "2 % failures vs 1 in main's newest: exit 3, goal 100 %"}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="gate-truth-") as tmp:
        where = Path(tmp)
        for case, noise in cases:
            if noise not in noises or case not in which:
                continue
            rng = np.random.default_rng(100 * "ABCDE".index(case) + round(noise * 100))  # fixed seeds
            store_path = where / f"{case}-{noise}.sqlite"
            hits, agree, added, t0 = 0, 0, 0, time.perf_counter()
            with open_store(store_path) as store:
                for h in range(histories):
                    testbed = f"truth-{h}"  # one configuration per history: they never compare
                    t = dataclasses.replace(template, testbed=testbed)
                    past, candidate = case_runs(case, rng, t, noise)
                    added += sum(store.add_runs(past))
                    if h < cli:
                        folder = write_folder(candidate, where / f"{case}-{noise}-{h}" / "cand")
                        candidate = read_run(folder)
                        code = exit_of(store, candidate)
                        agree += cli_exit(store_path, folder, folder.parent / "out") == code
                        shutil.rmtree(folder.parent)
                    else:
                        code = exit_of(store, candidate)
                    hits += code == 3 if case != "D" else code == 0
            took = time.perf_counter() - t0
            assert added == histories * len(past), added  # every history stored whole
            print(f"{case} noise {noise:.0%}: {goals[case]}: {rate(hits, histories)}; CLI agrees with "
                  f"the process on {agree}/{min(cli, histories)} ({took:.0f} s)", flush=True)  # fmt: skip


def speed(runs: int) -> None:
    """The gate on a long history (module docstring)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_history import synthetic_runs

    history = synthetic_runs(runs + 1, NAMES)
    with tempfile.TemporaryDirectory(prefix="gate-speed-") as tmp:
        path = Path(tmp) / "h.sqlite"
        with open_store(path) as store:
            for start in range(0, runs, 200):
                store.add_runs(history[start : min(start + 200, runs)])
            best = []
            for _ in range(3):
                t0 = time.perf_counter()
                outcome, found = gate_outcome(store, [history[-1]])
                best.append(time.perf_counter() - t0)
        assert outcome is not None
        print(f"speed: {runs} runs x {NAMES} names: gate_outcome {min(best):.3f} s (best of 3; "
              f"{len(outcome.rows)} rows, {found} comparable runs)")  # fmt: skip
        folder = write_folder(history[-1], Path(tmp) / "cand")
        t0 = time.perf_counter()
        code = cli_exit(path, folder, Path(tmp) / "out")
        took = time.perf_counter() - t0
        print(f"speed: `swarmbench compare --history` whole, a fresh process: {took:.2f} s (exit {code})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=200, help="histories per case (default 200)")
    parser.add_argument("--cli", type=int, default=20, help="of them through the command line (default 20)")
    parser.add_argument("--speed-runs", type=int, default=10_000, help="runs of the speed part (0: skip)")
    parser.add_argument("--noise", default="0.03,0.10", help="the noises to run (default both)")
    parser.add_argument("--shared", type=float, default=SHARED, help="SHARED (default 0)")
    parser.add_argument("--cases", default="ABCDE", help="the cases to run (default all)")
    args = parser.parse_args(argv)
    globals()["SHARED"] = args.shared
    print(f"noise shared by a run's figures: {args.shared:.0%} of its variance")
    truth(args.histories, args.cli, tuple(float(n) for n in args.noise.split(",")), args.cases)
    if args.speed_runs:
        speed(args.speed_runs)


if __name__ == "__main__":
    main()
