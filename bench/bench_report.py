"""Benchmark: our `python -m analysis report` against a naive script on a 1,000,000-row history.

    python bench/bench_report.py [--rows 1000000] [--repeats 3] [--keep DIR]

Generates, in a temp dir, one run folder in Locust's exact CSV format (the header of a real
Locust 2.47 *_stats_history.csv, CRLF line ends, "N/A" before the first response, 0 percentiles
while the first 10 s window is empty, 4 endpoints + Aggregated per second, consecutive Unix
timestamps) plus a matching *_stats.csv and run.json. Then runs each report in a fresh process,
`--repeats` times, and prints the median wall time and peak RSS (resource.getrusage of a wrapper
process's children, so each measurement is one process tree and nothing else). Also the floor
under any pandas + matplotlib report of the file: the imports alone, and the imports plus reading
the history (no chart, no file): what "N x faster than naive" can reach at most.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REAL_HISTORY = next((ROOT / "tests" / "fixtures" / "analysis" / "sweep").glob("*/locust_stats_history.csv"))
ENDPOINTS = [
    ("GET", "GET /albums"),
    ("GET", "GET /albums/{id}"),
    ("POST", "POST /albums"),
    ("DELETE", "DELETE /albums/{id}"),
]
PCTS = ["50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%"]
START = 1795290000  # 2026-11-21, like the fixtures

# The floor under any pandas + matplotlib report of this file: start Python, import pandas and
# matplotlib's Agg figure, read the history's used columns (our loader, validation included), and
# nothing else: no chart, no table, no file.
FLOOR = (
    "import sys\n"
    "import matplotlib\n"
    "matplotlib.use('Agg')\n"
    "from matplotlib.figure import Figure\n"
    "from matplotlib.backends import backend_agg\n"
    "import pandas\n"
    "if len(sys.argv) > 1:\n"
    "    from swarmbench.analysis.locust_csv import read_history\n"
    "    read_history(__import__('pathlib').Path(sys.argv[1]))\n"
)

# Runs one command and reports its wall time and its process tree's peak RSS (KiB on Linux).
WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "wall = time.perf_counter() - t\n"
    "print(rc, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def header() -> list[str]:
    # Locust's own header, read from a real file: the benchmark cannot drift from the format.
    with open(REAL_HISTORY, newline="") as f:
        return next(csv.reader(f))


def history_rows(rows: int, rng: np.random.Generator):
    per_second = len(ENDPOINTS) + 1
    seconds = rows // per_second
    totals = np.zeros(per_second)
    for s in range(seconds):
        ts = START + s
        users = min(100, 10 * (s + 1))
        rates = np.maximum(rng.normal(250, 25, len(ENDPOINTS)), 1.0) if s >= 2 else np.zeros(len(ENDPOINTS))
        block = [(m, n, r) for (m, n), r in zip(ENDPOINTS, rates, strict=True)] + [
            ("", "Aggregated", rates.sum())
        ]
        for i, (method, name, rps) in enumerate(block):
            totals[i] += rps
            if totals[i] == 0:
                pct = ["N/A"] * len(PCTS)
            elif s < 12:
                pct = ["0"] * len(PCTS)  # the first ~10 s window is empty with --csv-full-history
            else:
                base = rng.gamma(4.0, 2.0)
                pct = [str(int(base * k)) for k in (1, 1.2, 1.4, 1.5, 1.9, 2.4, 3.0, 3.6, 6, 9, 12)]
            yield [
                ts,
                users,
                method,
                name,
                f"{rps:2f}",
                "0.000000",
                *pct,
                int(totals[i]),
                0,
                pct[0] if pct[0] != "N/A" else 0,
                6.4,
                0.7,
                120.5,
                481.2,
            ]


def make_run(folder: Path, rows: int) -> None:
    # Long on purpose: one Locust run folder written column by column, in the files' own order.
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    with open(folder / "locust_stats_history.csv", "w", newline="") as f:
        w = csv.writer(f)  # csv's default line end is \r\n, as in Locust's files
        w.writerow(header())
        w.writerows(history_rows(rows, rng))
    with open(REAL_HISTORY.with_name("locust_stats.csv"), newline="") as f:
        stats_header = next(csv.reader(f))
    with open(folder / "locust_stats.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(stats_header)
        for method, name in [*ENDPOINTS, ("", "Aggregated")]:
            w.writerow(
                [
                    method,
                    name,
                    50_000_000,
                    0,
                    8,
                    9.1,
                    0.7,
                    912.0,
                    481.2,
                    250.0,
                    0.0,
                    8,
                    10,
                    11,
                    12,
                    15,
                    19,
                    24,
                    29,
                    48,
                    72,
                    912,
                ]
            )
    for name, cols in (
        ("locust_failures.csv", "Method,Name,Error,Occurrences,First Seen,Last Seen"),
        ("locust_exceptions.csv", "Count,Message,Traceback,Nodes"),
    ):
        (folder / name).write_bytes(cols.encode() + b"\r\n")
    seconds = rows // (len(ENDPOINTS) + 1)
    manifest = {
        "schema_version": 1,
        "run_id": folder.name,
        "duration_s": float(seconds),
        "host": "http://127.0.0.1:8080",
        "user_classes": ["AlbumsHttpUser"],
        "users": 100,
        "spawn_rate": 10,
        "run_time": seconds,
        "wait_time": "between 0.5 1.5",
        "mode": "local",
        "workers_expected": 0,
        "workers_connected": 0,
        "locust_version": "2.47.0",
        "target": None,
        "git_commit": None,
        "exit_code": 0,
    }
    (folder / "run.json").write_text(json.dumps(manifest, indent=2))


def measure(cmd: list[str], repeats: int) -> tuple[float, float]:
    walls, peaks = [], []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, cwd=ROOT)
        rc, wall, kib = out.stdout.split()
        if rc != "0":
            sys.exit(f"benchmark command failed ({rc}): {' '.join(cmd)}\n{out.stderr}")
        walls.append(float(wall))
        peaks.append(int(kib) / 1024)
    return statistics.median(walls), statistics.median(peaks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="generate into this folder and keep it")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        base = opts.keep or Path(tmp_name)
        run = base / "bench_run"
        if not run.exists():
            t = time.perf_counter()
            make_run(run, opts.rows)
            size = (run / "locust_stats_history.csv").stat().st_size / 2**20
            print(f"generated {opts.rows:,} history rows ({size:.0f} MB) in {time.perf_counter() - t:.1f} s")
        ours = measure(
            [sys.executable, "-m", "analysis", "report", str(run), "-o", str(base / "ours")], opts.repeats
        )
        naive = measure(
            [sys.executable, str(ROOT / "bench" / "naive_report.py"), str(run), str(base / "naive")],
            opts.repeats,
        )
        imports = measure([sys.executable, "-c", FLOOR], opts.repeats)
        floor = measure([sys.executable, "-c", FLOOR, str(run / "locust_stats_history.csv")], opts.repeats)
    print(f"\nmedian of {opts.repeats} runs, each in a fresh process ({opts.rows:,}-row *_stats_history.csv)")
    print(f"{'':28}{'seconds':>10}{'peak MB':>10}")
    print(f"{'ours (analysis report)':28}{ours[0]:>10.2f}{ours[1]:>10.0f}")
    print(f"{'naive (read all, plot all)':28}{naive[0]:>10.2f}{naive[1]:>10.0f}")
    print(f"{'naive / ours':28}{naive[0] / ours[0]:>9.1f}×{naive[1] / ours[1]:>9.1f}×")
    print(f"{'floor: imports only':28}{imports[0]:>10.2f}{imports[1]:>10.0f}")
    print(f"{'floor: imports + read':28}{floor[0]:>10.2f}{floor[1]:>10.0f}")
    print(f"{'naive / floor':28}{naive[0] / floor[0]:>9.1f}×{naive[1] / floor[1]:>9.1f}×")


if __name__ == "__main__":
    main()
