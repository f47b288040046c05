"""Power and false alarms of the sequential A/B (`make ab` with BUDGET) on REAL runs of the bundled
target on a noisy machine. Prints figures; asserts nothing. Not a test: it takes minutes a trial.

    python bench/bench_power.py [--trials 10] [--budget 5m] [--hog 50] [--hog-mode bursty]
                                [--run-time 5s] [--cases slower,same,large] [--designs interleaved,duet]

A background CPU hog runs through every trial: one process a core, each busy-looping part of every
100 ms. `--hog-mode steady`: HOG % all the time. `bursty` (the default): a shared CI runner's
neighbours come and go, so each hog holds a share drawn uniformly from 0 to 2 x HOG % (at most
100 %) for a stretch drawn from 1 to 10 s, then draws again (seeded). A steady hog averages out over
a run of seconds (a 50 % one left the per-pair p95 SD at 0.8 %); a bursty one gives runs next to
each other different machines, the noise that makes a single-run A/B `inconclusive`.

Each trial is one `swarmbench ab` with LOCAL=1 (the Go target built once from target/, a Locust
master and a worker on 127.0.0.1), BUDGET, and COMPARE_ARGS="--metrics p95 --names Aggregated" (one
gated row: issue 33's goal is stated for p95):

- `slower`: A ALBUMS_DELAY=20ms, B 22ms: about +10 % p95 (the goal: `regressed` in >= 90 % of trials
  within 5 minutes of runs);
- `same`: A and B both 20ms (B with an extra no-op variable, so make ab does not take it for an A/A
  noise floor): identical sides (the goal: `regressed` in <= 5 %);
- `large`: A 20ms, B 28ms: +40 % (the goal: exit 3 within the budget).

`--designs interleaved,duet` runs every case both ways (DUET=1: A and B at once, each duet run one
pair of the sequential design), trials alternating, so both see the same stretch of the machine.

Per trial: the decision (Aggregated p95's verdict and exit code), the pairs used of K, the time,
and the spread of the per-pair p95 difference (the SD of log(B/A) over the pairs: what a duet
design should shrink, for the side-by-side comparison issue 33 asks for). Then per case: how often
each verdict, exit 3, the median pairs and time, the median spread. docs/compare.md ("On a noisy
machine") has the figures measured here.
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
    "large": ("ALBUMS_DELAY=20ms", "ALBUMS_DELAY=28ms"),
}
"""Each case's A and B (make ab's NAME=value words): +10 % p95, identical sides, and +40 % (issue
33's "a 40 % change like the one above: exit 3 within the budget")."""

DESIGNS = ("interleaved", "duet")
"""`interleaved`: make ab's pairs (A B, B A, ...); `duet`: DUET=1, A and B at once, a duet run for
a pair (both with BUDGET: the sequential design)."""

LOAD = {"LOCUST_USERS": "8", "LOCUST_WAIT_TIME": "constant 0.02"}
"""The load: docs/compare.md's noise floor was measured with it."""

HOG_PERIOD_S = 0.1
"""The hog's duty cycle: busy its share of every 100 ms, asleep the rest."""

HOG_STRETCH_S = (1.0, 10.0)
"""A bursty hog's stretches: each holds one share for a time drawn uniformly from this range."""

HOG = """
import random, sys, time
share, bursty, seed = float(sys.argv[1]), sys.argv[2] == "bursty", int(sys.argv[3])
rng = random.Random(seed)
while True:
    busy = (rng.uniform(0, min(1.0, 2 * share)) if bursty else share) * {period}
    until = time.monotonic() + (rng.uniform(*{stretch}) if bursty else 3600)
    while time.monotonic() < until:
        t = time.monotonic()
        while time.monotonic() - t < busy:
            pass
        time.sleep(max(0.0, {period} - busy))
"""


HOG_MODES = ("bursty", "steady")
"""--hog-mode's choices (bench_duet.py takes the same)."""


def stop_hog(hogs: list[subprocess.Popen]) -> None:
    """The hog's processes ended (start_hog's)."""
    for hog in hogs:
        hog.kill()
        hog.wait()


def start_hog(percent: float, mode: str, seed: int) -> list[subprocess.Popen]:
    """The background CPU hog: a process a core (none at 0 %)."""
    if percent <= 0:
        return []
    code = HOG.format(period=HOG_PERIOD_S, stretch=HOG_STRETCH_S)
    return [
        subprocess.Popen([sys.executable, "-c", code, str(percent / 100), mode, str(seed + i)])
        for i in range(os.cpu_count() or 1)
    ]


def build_target(into: Path) -> Path:
    """The albums target built once from target/ (every trial reuses it)."""
    out = into / "albums"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=ROOT / "target", check=True)
    return out


def trial(case: str, design: str, n: int, args: argparse.Namespace, results: Path, binary: Path) -> dict:
    """One `swarmbench ab` of CASE by DESIGN: its decision, pairs, time and the per-pair p95 spread."""
    a, b = CASES[case]
    ab_id = f"{case}-{design}-{n}"
    env = {
        **os.environ, **LOAD, "LOCAL": "1", "A": a, "B": b, "BUDGET": args.budget, "RUN_TIME": args.run_time,
        "REPEATS": str(args.repeats), "AB_ID": ab_id, "SWARMBENCH_RESULTS": str(results),
        "SWARMBENCH_TARGET_BIN": str(binary), "COMPARE_ARGS": "--metrics p95 --names Aggregated",
        "PYTHONPATH": str(ROOT),
    }  # fmt: skip
    if design == "duet":
        env["DUET"] = "1"
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
        failed = {"verdict": "error", "code": res.returncode, "pairs": 0, "K": 0, "s": took}
        return {"case": case, "design": design, **failed}
    last = seq["looks"][-1] if seq["looks"] else {"pairs": 0, "rows": []}
    row = next((r for r in found["results"] if (r["name"], r["metric"]) == ("Aggregated", "p95")), {})
    sd = next((r["sd_log"] for r in last["rows"] if r["metric"] == "p95"), None)
    lines = [line for line in res.stderr.splitlines() if ": catches now " in line or "first look" in line]
    return {
        "case": case, "design": design, "verdict": row.get("verdict", "?"), "code": res.returncode,
        "pairs": last["pairs"], "K": seq["max_pairs"], "s": took, "spread": sd, "stopped": seq["stopped"],
        "lines": lines,
    }  # fmt: skip


def print_summary(found: dict[tuple[str, str], list[dict]]) -> None:
    """Per case and design: how often each verdict and exit 3, the median pairs, time and spread."""
    print(
        "\ncase   design      trials  regressed  no change  improved  inconclusive  exit 3"
        "  median pairs  median s  median SD"
    )
    for (case, design), ts in found.items():
        count = {
            v: sum(t["verdict"] == v for t in ts)
            for v in ("regressed", "no change", "improved", "inconclusive")
        }
        spreads = [t["spread"] for t in ts if t.get("spread") is not None]
        rates = "  ".join(f"{count[v] / len(ts):9.0%}" for v in count)
        rates += f"  {sum(t['code'] == 3 for t in ts) / len(ts):6.0%}"
        pairs, took = statistics.median(t["pairs"] for t in ts), statistics.median(t["s"] for t in ts)
        spread = f"{statistics.median(spreads):9.1%}" if spreads else "        -"
        print(f"{case:6} {design:11} {len(ts):6}  {rates}  {pairs:12g}  {took:8.0f}  {spread}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=10, help="trials per case (default 10)")
    p.add_argument("--budget", default="5m", help="BUDGET of each trial (default 5m)")
    p.add_argument(
        "--hog", type=float, default=50.0, help="background CPU hog a core, %% of each 100 ms (default 50)"
    )
    p.add_argument("--hog-mode", choices=HOG_MODES, default="bursty", help="(default bursty)")
    p.add_argument("--seed", type=int, default=1, help="the bursty hog's seed (default 1)")
    p.add_argument("--run-time", default="5s", help="RUN_TIME of each run (default 5s)")
    p.add_argument("--repeats", type=int, default=3, help="REPEATS: the first look (default 3)")
    p.add_argument("--cases", default="slower,same", help="comma-separated, of " + ", ".join(CASES))
    p.add_argument("--designs", default="interleaved", help="comma-separated, of " + ", ".join(DESIGNS))
    p.add_argument("--keep", action="store_true", help="keep the trials' folders (printed)")
    args = p.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad:
        p.error(f"--cases: unknown {', '.join(bad)}")
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    if [d for d in designs if d not in DESIGNS]:
        p.error(f"--designs: unknown {', '.join(d for d in designs if d not in DESIGNS)}")
    kinds = [(c, d) for c in cases for d in designs]
    work = Path(tempfile.mkdtemp(prefix="bench-power-"))
    hogs = start_hog(args.hog, args.hog_mode, args.seed)
    print(
        f"bench_power: {args.trials} trial(s) a case, BUDGET={args.budget}, RUN_TIME={args.run_time}, "
        f"{len(hogs)} {args.hog_mode} hog(s) at {args.hog:g} % (of every {HOG_PERIOD_S * 1000:.0f} ms), "
        "one gated row (Aggregated p95)"
    )
    found: dict[tuple[str, str], list[dict]] = {k: [] for k in kinds}
    try:
        binary = build_target(work)
        for n in range(1, args.trials + 1):
            for case, design in kinds:  # they alternate: all see the same stretch of the machine's day
                t = trial(case, design, n, args, work / "results", binary)
                found[case, design].append(t)
                spread = "-" if t.get("spread") is None else f"{t['spread']:.1%}"
                print(
                    f"  {case:6} {design:11} trial {n}: {t['verdict']:12} exit {t['code']}, "
                    f"{t['pairs']}/{t['K']} pairs, {t['s']:.0f} s, per-pair p95 SD {spread}, "
                    f"{t.get('stopped')}",
                    flush=True,
                )
                for line in t.get("lines", []):
                    print(f"      {line}")
    finally:
        stop_hog(hogs)
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_summary(found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
