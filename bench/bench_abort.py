"""Benchmark of the live thresholds' delay (issue 34): how long after a breach a distributed run stops.
Prints figures; asserts nothing.

    python bench/bench_abort.py [--runs 5] [--workers 2] [--grace 3] [--stagger]

Each run: a master and WORKERS forked workers (`--processes`), 6 users at a constant 0.05 s wait,
against the bundled target made slow (ALBUMS_DELAY=200ms), with LOCUST_CHECKS='p95<100',
LOCUST_ABORT_ON_FAIL=1 and LOCUST_ABORT_GRACE=GRACE: every window breaks the threshold, so the first
window checked (the one starting at GRACE s) is the breach. Printed per run, from run.json: the
window that stopped it, when the master decided (its `check_broken` event, s since the run's start)
and how long the run lasted (ended_at - started_at).

Goal: the run stops within grace + 2 windows of the breach's start, i.e. decided by GRACE + 2 s
(plugin/slo.py: the window GRACE..GRACE+1 is sealed once every worker has reported past its end, a
report every slo.LIVE_REPORT_S, and checked within slo.CHECK_INTERVAL_S).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _target_helpers import ROOT, Target, build, free_port


def one(binary: Path, where: Path, workers: int, grace: int, stagger: list[float] | None) -> dict:
    """One aborted run into WHERE; its window, decision time and duration. STAGGER: the workers
    start as processes of their own, each that many seconds after the one before (the master
    waits for all of them), so their reports fall at other moments of each second."""
    target = Target(binary, {"ALBUMS_DELAY": "200ms"}, where / "target.log")
    try:
        port = str(free_port())
        env = {**os.environ, "LOCUST_CHECKS": "p95<100", "LOCUST_ABORT_ON_FAIL": "true",
               "LOCUST_ABORT_GRACE": f"{grace}s"}  # fmt: skip
        load = ["--headless", "-H", f"http://127.0.0.1:{target.port}", "-u", "6", "-r", "6", "-t", "90s",
                "--wait-time", "constant 0.05", "--results-dir", str(where / "runs"),
                "AlbumsFastHttpUser"]  # fmt: skip
        locust = [sys.executable, "-m", "locust"]
        if stagger is None:
            res = subprocess.run(
                [*locust, "--processes", str(workers), "--master-bind-port", port, "--master-port", port,
                 *load],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=150,
            )  # fmt: skip
            code = res.returncode
        else:
            master = subprocess.Popen(
                [*locust, "--master", "--master-bind-port", port, "--expect-workers", str(workers), *load],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            started = []
            for delay in stagger:
                time.sleep(delay)
                with open(where / f"worker{len(started)}.log", "wb") as log:
                    started.append(subprocess.Popen(
                        [*locust, "--worker", "--master-port", port, "AlbumsFastHttpUser"],
                        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                    ))  # fmt: skip
            code = master.wait(timeout=150)
            for w in started:
                w.wait(timeout=30)
    finally:
        target.stop()
    [run_json] = (where / "runs").glob("*/run.json")
    man = json.loads(run_json.read_text())
    [event] = [e for e in man.get("events", []) if e["kind"] == "check_broken"]
    return {"exit": code, "window": man["aborted"]["window_s"], "decided": event["t_s"],
            "lasted": man["duration_s"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--grace", type=int, default=3)
    parser.add_argument(
        "--stagger", action="store_true",
        help="workers as processes of their own, started 0-1.5 s apart at random (their reports "
        "at other moments of each second than forked workers', which connect as the test starts)",
    )  # fmt: skip
    args = parser.parse_args()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        binary = Path(tmp) / "albums"
        build(ROOT / "target", binary)
        found = []
        for k in range(args.runs):
            where = Path(tmp) / f"run{k}"
            where.mkdir()
            stagger = [rng.uniform(0, 1.5) for _ in range(args.workers)] if args.stagger else None
            r = one(binary, where, args.workers, args.grace, stagger)
            found.append(r)
            after = r["decided"] - r["window"] - 1
            print(f"run {k + 1}: exit {r['exit']}, window {r['window']} s, decided at {r['decided']:.1f} s "
                  f"({after:.1f} s after the window ended), run lasted {r['lasted']:.1f} s",
                  flush=True)  # fmt: skip
    goal = args.grace + 2
    decided = sorted(r["decided"] for r in found)
    within = sum(d <= goal for d in decided)
    median = decided[len(decided) // 2]
    print(f"{args.workers} workers, grace {args.grace} s: decided at {decided[0]:.1f}-{decided[-1]:.1f} s "
          f"(median {median:.1f}); by grace + 2 windows ({goal} s) in {within} of {len(found)}")  # fmt: skip


if __name__ == "__main__":
    main()
