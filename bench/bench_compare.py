"""Benchmark of `swarmbench compare` (issue 19's goals). Prints figures; asserts nothing.

    python bench/bench_compare.py [--pool DIR] [--calibration-pool DIR] [--trials 200] [--skip-timing]

1. Power and false alarms on REAL windows. A pool of identical real runs (an A/A `make ab` folder,
   or recorded now: LOCAL=1, 6 + 6 interleaved runs of 20 s, AlbumsFastHttpUser (`make ab`'s
   class), 8 users, constant 0.02 s wait, ALBUMS_DELAY=10ms: the load DEFAULT_NOISE was measured
   with; --user-class AlbumsHttpUser for the noisier client). A trial draws
   3 runs for A and 3 other runs for B from the pool (so both sides carry the real run-to-run and
   window-to-window noise of this machine); for the shift, every latency of B is scaled by 1.10 (each
   recorded bucket moved to the HDR bucket of 1.1 x its value: p95 shifts by 10 % up to the grid's
   0.1 %). Counted: how often Aggregated p95 is called `regressed`, with and without the shift;
   then the same trials with an A/A calibration both sides pool with (stats.pooled): of the runs
   the trial did not draw, or of --calibration-pool (identical runs recorded at another time, as a
   user calibrates once and compares later).
   Why resample runs: the runs ARE this machine's noise, nothing is modelled; the limit is the pool
   (12 runs give C(12,3) x C(9,3) = 18,480 splits; 8 runs only 560, and the rates were rough).
2. The same on SYNTHETIC runs calibrated to the measured noise: windows as tests/test_compare_stats.py
   makes them (lognormal latencies, AR(1) window factors), each run's latencies times exp(N(0, s)),
   s the pool's calibrated p95 run-to-run noise, and also quieter machines (s = 2 %, 5 %): it shows
   how quiet a machine must be for the goals (>= 90 % power, <= 5 % false alarms) to hold.
3. Time to compare two 10-minute runs: a pool run's windows tiled to 600 s (real histograms), both
   sides; read + bootstrap in-process, the HTML page, and the whole CLI in a fresh process (goal: 2 s).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from swarmbench.compare import noise, sides, stats
from swarmbench.compare.sides import bucket_values_us, read_side
from swarmbench.core.checks import AGGREGATED, COMPARE_METRICS, MIN_EFFECT, REGRESSED, verdict

ROOT = Path(__file__).resolve().parent.parent

SHIFT = 1.10
PER_SIDE = 3
POOL_SETTINGS = {
    "LOCAL": "1",
    "REPEATS": "6",
    "RUN_TIME": "20s",
    "LOCUST_USERS": "8",
    "LOCUST_WAIT_TIME": "constant 0.02",
    "A": "ALBUMS_DELAY=10ms",
}


def record_pool(where: Path, user_class: str) -> Path:
    env = {**os.environ, **POOL_SETTINGS, "SWARMBENCH_RESULTS": str(where), "AB_ID": "pool"}
    env["LOCUST_USER_CLASSES"] = user_class
    print(
        f"recording the pool: python -m swarmbench ab (A/A, 6 + 6 runs of 20 s, {user_class}) ...", flush=True
    )
    subprocess.run([sys.executable, "-m", "swarmbench", "ab"], env=env, cwd=ROOT, check=True)
    return where / "pool"


def pool_runs(pool: Path):
    sides = [pool / s for s in ("A", "B") if (pool / s).is_dir()] or [pool]
    return [r for side in sides for r in read_side(side)]


def shifted(run, factor: float):
    """RUN with every latency times FACTOR (each bucket moved to the bucket of its scaled value)."""
    values = bucket_values_us()
    out = type(run)(run.path, run.manifest, run.windows, run.exact, {})
    for name, s in run.series.items():
        new = type(s)()
        for w, codes in s.codes.items():
            moved = values[np.minimum(np.searchsorted(values, np.ceil(codes * factor)), len(values) - 1)]
            new.add(w, moved, s.counts[w], s.requests[w], s.failures[w])
        out.series[name] = new
    return out


def p95_difference(a, b, seed: int, calibration: list | None = None):
    """Aggregated p95 of B against A; CALIBRATION: other identical runs whose A/A calibration (as
    `make ab` with B = A writes it) both sides pool with (stats.pooled)."""
    g, sa, sb = sides.build(a, b, [AGGREGATED])
    if calibration:
        gc, cal, _ = sides.build(calibration, calibration[:1], [AGGREGATED])
        level = noise.calibrate(cal, gc, seed)
        for side in (sa, sb):
            side.noise, side.noise_runs = level, len(calibration)
    return stats.compare(sa, sb, g, ["p95"], 0.95, seed)["p95"][AGGREGATED]


def real_trials(runs, trials: int, calibration: list | None = None) -> None:
    """CALIBRATION: identical runs recorded apart from RUNS (--calibration-pool) for the calibrated
    trials; without it, the runs a trial does not draw."""
    rng = np.random.default_rng(1)
    per_side = min(PER_SIDE, len(runs) // 2)
    moved = {id(r): shifted(r, SHIFT) for r in runs}
    hits = {"shift": 0, "same": 0, "covered": 0, "shift_cal": 0, "same_cal": 0, "covered_cal": 0}
    half, rel, half_cal = [], [], []  # A/A: the CI's half-width and the difference, relative to the baseline
    rest = len(calibration) if calibration else len(runs) - 2 * per_side
    for t in range(trials):
        order = rng.permutation(len(runs))
        a = [runs[i] for i in order[:per_side]]
        b = [runs[i] for i in order[per_side : 2 * per_side]]
        others = calibration or ([runs[i] for i in order[2 * per_side :]] if rest >= 2 else None)
        b_moved = [moved[id(r)] for r in b]
        same = p95_difference(a, b, t)
        hits["same"] += verdict("p95", same, MIN_EFFECT) == REGRESSED
        hits["covered"] += same.low <= 0 <= same.high
        half.append((same.high - same.low) / 2 / same.baseline)
        rel.append(same.diff / same.baseline)
        hits["shift"] += verdict("p95", p95_difference(a, b_moved, t), MIN_EFFECT) == REGRESSED
        if others:
            same = p95_difference(a, b, t, others)
            hits["same_cal"] += verdict("p95", same, MIN_EFFECT) == REGRESSED
            hits["covered_cal"] += same.low <= 0 <= same.high
            half_cal.append((same.high - same.low) / 2 / same.baseline)
            hits["shift_cal"] += (
                verdict("p95", p95_difference(a, b_moved, t, others), MIN_EFFECT) == REGRESSED
            )
    print(
        f"real windows ({len(runs)}-run pool, {per_side} vs {per_side} runs, {trials} trials): "
        f"10 % p95 shift called regressed {hits['shift'] / trials:.0%} (goal >= 90 %); "
        f"identical sides {hits['same'] / trials:.1%} (goal <= 5 %)"
    )
    # Is the CI calibrated? On identical sides the true difference is 0: a 95 % CI should hold it
    # in ~95 % of draws, and its half-width should be ~1.96 x the SD of the draws' differences.
    print(
        f"  A/A p95 CI: holds 0 in {hits['covered'] / trials:.0%} of draws (95 % CI); mean half-width "
        f"{statistics.mean(half):.1%} vs 1.96 x SD of the differences {1.96 * statistics.pstdev(rel):.1%} "
        "(draws overlap: rough)"
    )
    if half_cal:
        print(
            f"  with an A/A calibration of {rest} {'runs recorded apart' if calibration else 'other runs'} "
            "(`make ab` with B = A, then --noise): "
            f"10 % p95 shift called regressed {hits['shift_cal'] / trials:.0%}; identical sides "
            f"{hits['same_cal'] / trials:.1%}; A/A CI holds 0 in {hits['covered_cal'] / trials:.0%}, "
            f"mean half-width {statistics.mean(half_cal):.1%}"
        )


def synthetic_run(rng, scale: float, windows: int, per_window: int, values) -> stats.Run:
    """One run's (windows x used buckets) histogram: lognormal latencies around 14 ms, AR(1) window
    factors (SD 4 %, lag-1 0.3: this machine's windows), times SCALE."""
    e = np.empty(windows)
    e[0] = rng.normal(0, 0.04)
    for i in range(1, windows):
        e[i] = 0.3 * e[i - 1] + rng.normal(0, 0.04 * math.sqrt(1 - 0.09))
    lat = 14_000 * np.exp(rng.normal(0, 0.3, (windows, per_window))) * np.exp(e)[:, None] * scale
    idx = np.searchsorted(values, np.ceil(lat))
    hist = np.zeros((windows, len(values)))
    np.add.at(hist, (np.repeat(np.arange(windows), per_window), idx.ravel()), 1)
    req = np.full((windows, 1), float(per_window))
    return stats.Run(hist, req, np.zeros((windows, 1)))


def synthetic_trials(sigma: float, trials: int, per_window: int) -> tuple[float, float]:
    rng = np.random.default_rng(2)
    values = bucket_values_us()
    used = slice(int(np.searchsorted(values, 2_000)), int(np.searchsorted(values, 120_000)))
    vals = values[used]
    g = stats.Grid([AGGREGATED], {AGGREGATED: slice(0, len(vals))}, vals / 1000)
    hits = {"shift": 0, "same": 0}
    for t in range(trials):

        def side(shift: float) -> stats.Side:
            return stats.Side(
                [
                    synthetic_run(rng, shift * math.exp(rng.normal(0, sigma)), 20, per_window, vals)
                    for _ in range(3)
                ]
            )

        base = side(1.0)
        for key, shift in (("same", 1.0), ("shift", SHIFT)):
            d = stats.compare(base, side(shift), g, ["p95"], 0.95, t)["p95"][AGGREGATED]
            hits[key] += verdict("p95", d, MIN_EFFECT) == REGRESSED
    return hits["shift"] / trials, hits["same"] / trials


def tiled(run: Path, to: Path, seconds: int) -> Path:
    """RUN's windows repeated up to SECONDS (real histograms), its run.json saying that long."""
    shutil.copytree(run, to)
    rows = list(csv.DictReader((run / "locust_latency_windows.csv").read_text().splitlines()))
    length = max(int(r["window_s"]) for r in rows) + 1
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for k in range(math.ceil(seconds / length)):
        for r in rows:
            if int(r["window_s"]) + k * length < seconds:
                w.writerow({**r, "window_s": int(r["window_s"]) + k * length})
    (to / "locust_latency_windows.csv").write_text(buf.getvalue())
    manifest = json.loads((run / "run.json").read_text())
    manifest["run_time"], manifest["duration_s"] = float(seconds), float(seconds)
    (to / "run.json").write_text(json.dumps(manifest))
    return to


def timing(pool: Path, repeats: int = 3) -> None:
    runs = sorted(p for side in ("A", "B") for p in (pool / side).iterdir() if (p / "run.json").is_file())
    tmp = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    try:
        a, b = tiled(runs[0], tmp / "a", 600), tiled(runs[1], tmp / "b", 600)
        core, page, whole = [], [], []
        for i in range(repeats):
            t0 = time.perf_counter()
            ra, rb = read_side(a), read_side(b)
            names = sides.names(ra, rb, None).common
            g, sa, sb = sides.build(ra, rb, names)
            sa.noise = sb.noise = dict(noise.DEFAULT_NOISE)
            found = stats.compare(sa, sb, g, list(COMPARE_METRICS))
            t1 = time.perf_counter()
            from swarmbench.compare import report

            outcome = report.Outcome(
                [str(a)],
                [str(b)],
                report.rows(found, MIN_EFFECT),
                sides.names(ra, rb, None),
                [],
                {"min_effect": MIN_EFFECT, "confidence": 0.95, "seed": 0},
                sa.noise,
                "-",
                False,
            )
            report.page(outcome, g, sa, sb)
            t2 = time.perf_counter()
            cmd = [sys.executable, "-m", "swarmbench", "compare", str(a), str(b), "-o", str(tmp / f"out{i}")]
            subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True)
            t3 = time.perf_counter()
            core.append(t1 - t0)
            page.append(t2 - t1)
            whole.append(t3 - t2)
        print(
            f"two 10-minute runs ({len(names)} series, 600 windows each), median of {repeats}: "
            f"read + bootstrap {statistics.median(core):.2f} s, HTML page {statistics.median(page):.2f} s "
            f"(in-process, SVG), whole CLI in a fresh process "
            f"{statistics.median(whole):.2f} s (goal <= 2 s)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pool", type=Path, help="an A/A `make ab` folder (or a folder of identical runs)")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument(
        "--calibration-pool", type=Path, help="identical runs recorded apart: the trials' calibration"
    )
    p.add_argument("--user-class", default="AlbumsFastHttpUser", help="the pool's class, when recorded")
    p.add_argument("--skip-timing", action="store_true")
    args = p.parse_args()
    tmp = None
    if args.pool is None:
        tmp = Path(tempfile.mkdtemp(prefix="bench-pool-"))
        args.pool = record_pool(tmp, args.user_class)
    runs = pool_runs(args.pool)
    print(f"pool: {len(runs)} runs from {args.pool}")
    g, side, _ = sides.build(runs, runs[:1], [AGGREGATED])
    level = noise.calibrate(side, g)
    print("pool's run-to-run noise (calibrated): " + ", ".join(f"{m} {v:.1%}" for m, v in level.items()))
    real_trials(runs, args.trials, pool_runs(args.calibration_pool) if args.calibration_pool else None)
    per_window = round(
        np.mean([r.series[AGGREGATED].requests[w] for r in runs for w in r.series[AGGREGATED].requests])
    )
    for sigma in sorted({level["p95"], 0.02, 0.05}):
        power, alarms = synthetic_trials(sigma, args.trials, int(per_window))
        print(
            f"synthetic, per-run p95 noise {sigma:.1%}, {per_window} req/s, 3 x 20 s per side: 10 % shift "
            f"called regressed {power:.0%}; identical sides {alarms:.1%}"
        )
    if not args.skip_timing:
        timing(args.pool)
    if tmp:
        print(f"(the pool is kept in {args.pool}: --pool {args.pool} reruns without recording)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
