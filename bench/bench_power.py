"""Power and false alarms of the sequential A/B (`make ab` with BUDGET) on REAL runs of the bundled
target on a noisy machine. Prints figures; asserts nothing. Not a test: it takes minutes a trial.

    python bench/bench_power.py [--trials 10] [--budget 5m] [--hog 50] [--run-time 5s] [--cases slower,same]

A background CPU hog (a child process busy-looping HOG % of every 100 ms, as a shared CI runner's
neighbours do) runs through every trial. Each trial is one `swarmbench ab` with LOCAL=1 (the Go
target built once from target/, a Locust master and a worker on 127.0.0.1), BUDGET, and
COMPARE_ARGS="--metrics p95 --names Aggregated" (one gated row: issue 33's goal is stated for p95):

- `slower`: A ALBUMS_DELAY=20ms, B 22ms: about +10 % p95 (the goal: `regressed` in >= 90 % of trials
  within 5 minutes of runs);
- `same`: A and B both 20ms (B with an extra no-op variable, so make ab does not take it for an A/A
  noise floor): identical sides (the goal: `regressed` in <= 5 %).

Per trial: the decision (Aggregated p95's verdict and exit code), the pairs used of K, the time,
and the spread of the per-pair p95 difference (the SD of log(B/A) over the pairs: what a duet
design should shrink, for the side-by-side comparison issue 33 asks for). Then per case: how often
each verdict, the median pairs and time, the median spread.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "slower": ("ALBUMS_DELAY=20ms", "ALBUMS_DELAY=22ms"),
    "same": ("ALBUMS_DELAY=20ms", "ALBUMS_DELAY=20ms BENCH_SIDE=b"),
}
"""Each case's A and B (make ab's NAME=value words): +10 % p95, and identical sides."""

LOAD = {"LOCUST_USERS": "8", "LOCUST_WAIT_TIME": "constant 0.02"}
"""The load: docs/compare.md's noise floor was measured with it."""

HOG_PERIOD_S = 0.1
"""The hog's duty cycle: busy HOG % of every 100 ms, asleep the rest."""

HOG = """
import sys, time
busy = float(sys.argv[1]) * {period}
while True:
    t = time.monotonic()
    while time.monotonic() - t < busy:
        pass
    time.sleep(max(0.0, {period} - busy))
"""


def start_hog(percent: float) -> subprocess.Popen | None:
    """The background CPU hog (None at 0 %)."""
    if percent <= 0:
        return None
    code = HOG.format(period=HOG_PERIOD_S)
    return subprocess.Popen([sys.executable, "-c", code, str(percent / 100)])


def build_target(into: Path) -> Path:
    """The albums target built once from target/ (every trial reuses it)."""
    out = into / "albums"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=ROOT / "target", check=True)
    return out


def trial(case: str, n: int, args: argparse.Namespace, results: Path, binary: Path) -> dict:
    """One `swarmbench ab` of CASE: its decision, pairs, time and the per-pair p95 spread."""
    a, b = CASES[case]
    ab_id = f"{case}-{n}"
    env = {
        **os.environ, **LOAD, "LOCAL": "1", "A": a, "B": b, "BUDGET": args.budget, "RUN_TIME": args.run_time,
        "REPEATS": str(args.repeats), "AB_ID": ab_id, "SWARMBENCH_RESULTS": str(results),
        "SWARMBENCH_TARGET_BIN": str(binary), "COMPARE_ARGS": "--metrics p95 --names Aggregated",
        "PYTHONPATH": str(ROOT),
    }  # fmt: skip
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "swarmbench", "ab"], env=env, cwd=ROOT, capture_output=True,
                         text=True)  # fmt: skip
    took = time.monotonic() - t0
    root = results / ab_id
    try:
        seq = json.loads((root / "ab.json").read_text())["sequential"]
        found = json.loads((root / "compare" / "compare.json").read_text())
    except (OSError, ValueError, KeyError):
        sys.stderr.write(res.stderr[-3000:])
        return {"case": case, "verdict": "error", "code": res.returncode, "pairs": 0, "K": 0, "s": took}
    last = seq["looks"][-1] if seq["looks"] else {"pairs": 0, "rows": []}
    row = next((r for r in found["results"] if (r["name"], r["metric"]) == ("Aggregated", "p95")), {})
    sd = next((r["sd_log"] for r in last["rows"] if r["metric"] == "p95"), None)
    lines = [line for line in res.stderr.splitlines() if ": catches now " in line or "first look" in line]
    return {
        "case": case, "verdict": row.get("verdict", "?"), "code": res.returncode, "pairs": last["pairs"],
        "K": seq["max_pairs"], "s": took, "spread": sd, "stopped": seq["stopped"], "lines": lines,
    }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=10, help="trials per case (default 10)")
    p.add_argument("--budget", default="5m", help="BUDGET of each trial (default 5m)")
    p.add_argument(
        "--hog", type=float, default=50.0, help="background CPU hog, %% of each 100 ms (default 50)"
    )
    p.add_argument("--run-time", default="5s", help="RUN_TIME of each run (default 5s)")
    p.add_argument("--repeats", type=int, default=3, help="REPEATS: the first look (default 3)")
    p.add_argument("--cases", default="slower,same", help="comma-separated, of " + ", ".join(CASES))
    p.add_argument("--keep", action="store_true", help="keep the trials' folders (printed)")
    args = p.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad:
        p.error(f"--cases: unknown {', '.join(bad)}")
    work = Path(tempfile.mkdtemp(prefix="bench-power-"))
    hog = start_hog(args.hog)
    print(
        f"bench_power: {args.trials} trial(s) a case, BUDGET={args.budget}, RUN_TIME={args.run_time}, "
        f"hog {args.hog:g} % of every {HOG_PERIOD_S * 1000:.0f} ms, one gated row (Aggregated p95)"
    )
    found: dict[str, list[dict]] = {c: [] for c in cases}
    try:
        binary = build_target(work)
        for n in range(1, args.trials + 1):
            for case in cases:  # cases alternate: both see the same stretch of the machine's day
                t = trial(case, n, args, work / "results", binary)
                found[case].append(t)
                spread = "-" if t.get("spread") is None else f"{t['spread']:.1%}"
                print(
                    f"  {case:6} trial {n}: {t['verdict']:12} exit {t['code']}, {t['pairs']}/{t['K']} "
                    f"pairs, {t['s']:.0f} s, per-pair p95 SD {spread}, {t.get('stopped')}",
                    flush=True,
                )
                for line in t.get("lines", []):
                    print(f"      {line}")
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\ncase    trials  regressed  no change  improved  inconclusive  median pairs  median s  median SD")
    for case, ts in found.items():
        count = {
            v: sum(t["verdict"] == v for t in ts)
            for v in ("regressed", "no change", "improved", "inconclusive")
        }
        spreads = [t["spread"] for t in ts if t.get("spread") is not None]
        rates = "  ".join(f"{count[v] / len(ts):9.0%}" for v in count)
        pairs, took = statistics.median(t["pairs"] for t in ts), statistics.median(t["s"] for t in ts)
        spread = f"{statistics.median(spreads):9.1%}" if spreads else "        -"
        print(f"{case:7} {len(ts):6}  {rates}  {pairs:12g}  {took:8.0f}  {spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
