"""Benchmark of the run page (swarmbench/page/run.py): how long a 10-minute run's report.html takes to
make, the goal being well under a second (the plugin makes it at every run's end). Prints figures;
asserts nothing.

    python bench/bench_page.py [--windows 600] [--names 10] [--workers 4] [--rounds 7] [--keep DIR]

A synthetic folder of the files a real run leaves, made with the real writers (latency/windows.py,
latency/histogram.py, core/manifest.py): WINDOWS 1 s windows x NAMES request names, ~60 requests
per name and window (lognormal latencies), Locust's stats and full history CSVs, a run.json with
WORKERS generators' CPU and an event-loop lag series (one point per 3 s report). Side by side, in
the same process, in turns: the whole page (read + render), and the floor under any page of these
files: reading them (the windows CSV parsed row by row, the whole-run histograms decoded, the other
CSVs and run.json loaded) with nothing drawn. Medians of ROUNDS.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from swarmbench.core import folder
from swarmbench.core.manifest import (
    Event,
    GeneratorCpu,
    GeneratorLag,
    RunManifest,
    Totals,
    WorkerCpu,
    WorkerLag,
)
from swarmbench.latency.histogram import LatencyBook, new_histogram, percentile_columns
from swarmbench.latency.windows import Windows, ship
from swarmbench.page import run as run_page

STATS_HEAD = [
    folder.TYPE, folder.NAME, folder.REQUEST_COUNT, folder.FAILURE_COUNT, folder.MEDIAN_RT, folder.AVG_RT,
    folder.MIN_RT, folder.MAX_RT, folder.AVG_SIZE, folder.RPS, folder.FAILURES_PER_S,
    folder.P50, folder.P95, folder.P99,
]  # fmt: skip
HISTORY_HEAD = [
    folder.TIMESTAMP, folder.USER_COUNT, folder.TYPE, folder.NAME, folder.CURRENT_RPS,
    folder.CURRENT_FAILURES_PER_S, folder.P50, folder.P95, folder.TOTAL_REQUEST_COUNT,
    folder.TOTAL_FAILURE_COUNT,
]  # fmt: skip


def make_folder(where: Path, windows: int, names: int, workers: int, seed: int = 0) -> Path:
    """The synthetic run folder (see the module docstring)."""
    rng = random.Random(seed)
    where.mkdir(parents=True, exist_ok=True)
    book = Windows()
    counts = {f"GET /item/{i}": 0 for i in range(names)}
    start = int(datetime(2026, 11, 16, tzinfo=UTC).timestamp())  # run.json's started_at
    with open(where / folder.HISTORY_CSV, "w", newline="") as f:
        history = csv.writer(f)
        history.writerow(HISTORY_HEAD)
        for w in range(windows):
            entries = []
            for name in counts:
                hist = new_histogram()
                n = rng.randint(40, 80)
                for _ in range(n):
                    hist.record_value(int(rng.lognormvariate(9.3, 0.5)))  # ~11 ms, in µs
                counts[name] += n
                entries.append(ship((w, "GET", name, "service"), hist, 0))
                history.writerow([start + w, 50, "GET", name, n, 0, 11, 25, counts[name], 0])
            book.merge(entries)
            history.writerow([start + w, 50, "", "Aggregated", sum(counts.values()) / (w + 1), 0, 11, 25,
                              sum(counts.values()), 0])  # fmt: skip
    book.write_csv(where / folder.LATENCY_WINDOWS_CSV)
    totals: LatencyBook = book.totals()
    totals.write_csv(where / folder.LATENCY_HDR_CSV)
    (where / folder.LATENCY_HDR_JSON).write_text(json.dumps(totals.to_json()))
    with open(where / folder.STATS_CSV, "w", newline="") as f:
        stats = csv.writer(f)
        stats.writerow(STATS_HEAD)
        for name, n in [*counts.items(), ("Aggregated", sum(counts.values()))]:
            hist = totals.aggregated("service", name)
            p = percentile_columns(hist)
            stats.writerow(["" if name == "Aggregated" else "GET", name, n, 0, round(p["p50_ms"]), 12.0, 1.0,
                            p["max_ms"], 100, n / windows, 0, round(p["p50_ms"]), round(p["p95_ms"]),
                            round(p["p99_ms"])])  # fmt: skip
    for name in (folder.FAILURES_CSV, folder.EXCEPTIONS_CSV):
        (where / name).write_text("Method,Name,Error,Occurrences\n")
    folder.write_json_atomic(
        where / folder.MANIFEST, manifest(workers, windows, sum(counts.values())).to_json()
    )
    return where


def manifest(workers: int, windows: int, requests: int) -> RunManifest:
    ids = [f"host{i}_{i:032x}" for i in range(workers)]
    lag = [
        WorkerLag(id=i, n=windows // 3, p50_ms=0.2, p99_ms=3.0, max_ms=9.0,
                  series=[[float(t), 0.2, 3.0 + (t % 7), 9.0] for t in range(3, windows, 3)])
        for i in ids
    ]  # fmt: skip
    return RunManifest(
        schema_version=2, run_id="bench", started_at="2026-11-16T00:00:00.000Z", duration_s=float(windows),
        host="http://127.0.0.1:8080", user_classes=("AlbumsHttpUser",), users=50, mode="distributed",
        workers_expected=workers, workers_connected=workers, status="complete", started_from="headless",
        worker_cpu=GeneratorCpu(per_worker=[WorkerCpu(id=i, mean_percent=40.0, max_percent=60.0)
                                            for i in ids]),
        generator_lag=GeneratorLag(series_columns=["t_s", "p50_ms", "p99_ms", "max_ms"], bound_ms=20.0,
                                   per_worker=lag, worst_p99_ms=9.0, inflated=False),
        totals=Totals(requests=requests, failures=0),
        events=[Event(t_s=0.0, kind="users_spawned", detail="50 users running")],
    )  # fmt: skip


def floor(run_dir: Path) -> None:
    """What any page of these files must do: read them, draw nothing."""
    with open(run_dir / folder.LATENCY_WINDOWS_CSV, newline="") as f:
        for _row in csv.reader(f):
            pass
    LatencyBook.read(run_dir / folder.LATENCY_HDR_JSON)
    for name in (folder.STATS_CSV, folder.HISTORY_CSV, folder.LATENCY_HDR_CSV):
        with open(run_dir / name, newline="") as f:
            list(csv.DictReader(f))
    RunManifest.read(run_dir / folder.MANIFEST)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=600)
    parser.add_argument("--names", type=int, default=10)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="make the folder here and keep it (for a look)")
    args = parser.parse_args()
    if args.keep:
        measure(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
            measure(args, Path(tmp) / "run")


def measure(args: argparse.Namespace, where: Path) -> None:
    t = time.perf_counter()
    run_dir = make_folder(where, args.windows, args.names, args.workers)
    size = sum(p.stat().st_size for p in run_dir.iterdir()) / 1e6
    print(f"folder: {args.windows} windows x {args.names} names, {args.workers} workers, {size:.1f} MB "
          f"(made in {time.perf_counter() - t:.1f} s): {run_dir}")  # fmt: skip
    pages, floors = [], []
    for _ in range(args.rounds):  # in turns: a drift of the machine hits both alike
        t = time.perf_counter()
        html = run_page.render(run_dir)
        pages.append(time.perf_counter() - t)
        t = time.perf_counter()
        floor(run_dir)
        floors.append(time.perf_counter() - t)
    page_ms, floor_ms = statistics.median(pages) * 1000, statistics.median(floors) * 1000
    print(f"run page (read + render): {page_ms:.0f} ms per page, {len(html) / 1e3:.0f} kB of HTML")
    print(f"floor (read the files, draw nothing): {floor_ms:.0f} ms")
    print(f"page / floor: {page_ms / floor_ms:.2f}x; goal: well under 1000 ms per page")


if __name__ == "__main__":
    main()
