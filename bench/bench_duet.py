"""Duet against interleaved, same machine, same minutes (issue 33's goal: the spread of the p95
difference at least 3 times smaller with duet). Prints figures; asserts nothing.

    python bench/bench_duet.py [--tries 3] [--run-time 20s] [--hog 0] [--hog-mode bursty] [--out DIR]

A/A at a 10 ms service time (ALBUMS_DELAY=10ms, LOCAL=1, AlbumsFastHttpUser, 8 users, constant 0.02 s
wait): TRIES times, one duet run (`DUET=1 make ab`, REPEATS=1: A and B at once) then one interleaved
pair (`make ab`, REPEATS=1: an A run, then a B run), so both designs share the same minutes of this
machine's noise. Per try, the p95 difference as ln(B / A) of the whole-run exact Aggregated p95:
the duet's from its comparison (compare.json's duet pairs), the pair's from each run's
locust_latency_hdr.csv. Printed: each try's differences, their SD per design and the ratio. With 3
tries each SD rests on 2 degrees of freedom: a ratio of 3 measured is "about 3", no more.
`--hog PERCENT` runs bench_power.py's background CPU hog through every try (bursty by default: one
process a core, a share from 0 to 2 x PERCENT held for 1 to 10 s at a time), the noise of a shared
runner.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_power import HOG_MODES, start_hog, stop_hog  # bench/ is this script's folder: the same hog

from swarmbench import RunFolder
from swarmbench.core.checks import AGGREGATED

ROOT = Path(__file__).resolve().parent.parent

LOAD = {
    "LOCAL": "1",
    "REPEATS": "1",
    "LOCUST_USERS": "8",
    "LOCUST_WAIT_TIME": "constant 0.02",
    "A": "ALBUMS_DELAY=10ms",
}
"""The A/A load: bench/bench_compare.py's pool settings, one run (or duet run) a side."""


def ab(results: Path, ab_id: str, run_time: str, binary: Path, duet: bool) -> Path:
    """One `swarmbench ab` (A/A), its folder; exits when it fails."""
    env = {**os.environ, **LOAD, "RUN_TIME": run_time, "AB_ID": ab_id, "SWARMBENCH_RESULTS": str(results)}
    env["SWARMBENCH_TARGET_BIN"] = str(binary)
    env["PYTHONPATH"] = str(ROOT)
    if duet:
        env["DUET"] = "1"
    res = subprocess.run(
        [sys.executable, "-m", "swarmbench", "ab"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if res.returncode not in (0, 3):
        sys.exit(f"{ab_id}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return results / ab_id


def p95(folder: Path) -> float:
    row = RunFolder.open(folder).exact[("", AGGREGATED)]
    assert row.p95_ms is not None
    return row.p95_ms


def duet_difference(root: Path) -> float:
    data = json.loads((root / "compare" / "compare.json").read_text(encoding="utf-8"))
    return data["duet"]["pairs"][AGGREGATED]["p95"]["ln_ratio"]


def pair_difference(root: Path) -> float:
    return math.log(p95(root / "B" / "b1") / p95(root / "A" / "a1"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--run-time", default="20s")
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--hog", type=float, default=0.0, help="CPU hog a core, %% (default 0: none)")
    parser.add_argument("--hog-mode", choices=HOG_MODES, default="bursty")
    args = parser.parse_args()
    results = args.out or Path(tempfile.mkdtemp(prefix="bench-duet-"))
    binary = results / "albums"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=ROOT / "target", check=True)
    duet, pairs = [], []
    hogs = start_hog(args.hog, args.hog_mode, 1)
    try:
        for i in range(1, args.tries + 1):
            duet.append(duet_difference(ab(results, f"duet-{i}", args.run_time, binary, duet=True)))
            pairs.append(pair_difference(ab(results, f"pair-{i}", args.run_time, binary, duet=False)))
            print(f"try {i}: p95 ln(B/A)  duet {duet[-1]:+.4f}  interleaved {pairs[-1]:+.4f}", flush=True)
    finally:
        stop_hog(hogs)
    sd_duet, sd_pair = statistics.stdev(duet), statistics.stdev(pairs)
    hog = f", {len(hogs)} {args.hog_mode} hog(s) at {args.hog:g} %" if hogs else ""
    print(f"A/A, {args.tries} tries of {args.run_time}, ALBUMS_DELAY=10ms, 8 users, constant 0.02 s{hog}")
    print(f"SD of the p95 difference  duet {sd_duet:.4f} ({math.expm1(sd_duet):.1%})")
    print(f"                          interleaved {sd_pair:.4f} ({math.expm1(sd_pair):.1%})")
    print(f"interleaved / duet: {sd_pair / sd_duet:.1f} x (goal: >= 3)  runs in {results}")


if __name__ == "__main__":
    main()
