"""Soak benchmark: a long default-scenario run; does memory stay flat and do the counts stay exact?

    python bench/soak.py [--minutes 10] [--workers 4] [--interval 5]

Builds target/ (or uses SWARMBENCH_TARGET_BIN), starts it on a free 127.0.0.1 port, then a headless
Locust master and WORKERS workers on this machine with the command lines swarmbench.core.launch
builds (the plugin in front of the default scenario, locust.conf's users and pacing), for MINUTES.
Every INTERVAL seconds it samples the resident memory (VmRSS, /proc/PID/status) of the master, each
worker and the target. At the end it prints, per process, the RSS at the end of the warm-up and at
the end of the run and the growth between them (goal <= 10 %), then whether the counts stayed exact:
the run's CSV total == run.json's totals == what the target says it served, and the run folder's
size at the end (goal <= 20 MB).

The target keeps every album the scenario POSTs, so its RSS grows with its data by design; its line
says how many albums it holds. Everything is stopped at the end whatever happens; load goes to
127.0.0.1 only. Not a test: a 10-minute run does not belong in CI.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swarmbench.core import folder, target
from swarmbench.core.launch import Launch
from swarmbench.core.manifest import RunManifest
from swarmbench.runner.points import free_port
from swarmbench.runner.points import wait_http_or_raise as wait_http

ROOT = Path(__file__).resolve().parents[1]
"""The checkout this script is in: not the installed package's folder (site-packages after pip install)."""

WARMUP_SHARE = 0.25
"""The first quarter of the run is warm-up (imports, connection pools, gevent's caches): growth is
measured from its end, so start-up allocation is not mistaken for a leak."""

MIN_WARMUP_S = 30.0
"""At least this much warm-up, so a short (--minutes 2) run still skips the start-up."""

WINDOW = 3
"""Samples whose median is a point's RSS: one sample can catch a transient allocation."""

GOAL_PERCENT = 10.0
"""The issue's goal: no process grows by more than this after warm-up."""

GOAL_FOLDER_MB = 20.0
"""The issue's goal: the run folder (CSV, HDR windows, run.json, logs) stays under this size."""


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def build_target(tmp: str) -> Path:
    prebuilt = os.environ.get("SWARMBENCH_TARGET_BIN")
    if prebuilt:
        return Path(prebuilt)
    binary = Path(tmp) / "albums"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=ROOT / "target", check=True)
    return binary


def start_processes(args: argparse.Namespace, tmp: str) -> tuple[dict[str, subprocess.Popen], str, Path]:
    port, mport = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(Path(tmp) / "soak.log", "w")  # noqa: SIM115 (lives as long as the processes)
    procs = {"target": subprocess.Popen([str(build_target(tmp))], env={**os.environ, "PORT": str(port)},
                                        stdout=log, stderr=subprocess.STDOUT)}  # fmt: skip
    wait_http(url + "/healthz", 20)
    results = Path(tmp) / "results"
    master = Launch(
        role="master", headless=True, workers=args.workers, run_time=f"{int(args.minutes * 60)}s",
        bind_host="127.0.0.1", master_port=mport, host=url, results_dir=str(results), run_id="soak",
    )  # fmt: skip
    worker = Launch(role="worker", master_host="127.0.0.1", master_port=mport)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUST_")}
    locust = [sys.executable, "-m", "locust"]
    procs["master"] = subprocess.Popen([*locust, *master.argv()], cwd=ROOT, env=env, stdout=log, stderr=log)
    for i in range(args.workers):
        procs[f"worker{i + 1}"] = subprocess.Popen(
            [*locust, *worker.argv()], cwd=ROOT, env=env, stdout=log, stderr=log
        )
    return procs, url, results / "soak"


def sample(procs: dict[str, subprocess.Popen], interval: float) -> tuple[list[float], dict[str, list]]:
    """(sample times, {name: [RSS KiB]}) until the master exits."""
    t0, times, rss = time.monotonic(), [], {name: [] for name in procs}
    while procs["master"].poll() is None:
        times.append(time.monotonic() - t0)
        for name, p in procs.items():
            rss[name].append(rss_kib(p.pid))
        time.sleep(interval)
    return times, rss


def growth_table(times: list[float], rss: dict[str, list], run_s: float) -> list[tuple]:
    warmup = max(MIN_WARMUP_S, WARMUP_SHARE * run_s)
    after = [i for i, t in enumerate(times) if warmup <= t <= run_s]
    rows = []
    for name, series in rss.items():
        values = [series[i] for i in after if series[i] is not None]
        if len(values) < 2 * WINDOW:
            rows.append((name, None, None, None))
            continue
        start, end = statistics.median(values[:WINDOW]), statistics.median(values[-WINDOW:])
        rows.append((name, start / 1024, end / 1024, 100.0 * (end - start) / start))
    return rows


def csv_total(run_dir: Path) -> int | None:
    try:
        with open(run_dir / folder.STATS_CSV, newline="") as f:
            for row in csv.DictReader(f):
                if row["Name"] == "Aggregated":
                    return int(row["Request Count"])
    except OSError:
        return None
    return None


def folder_mb(run_dir: Path) -> float:
    """The run folder's size on disk in MB (10**6 bytes), every file under it counted."""
    return sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file()) / 1e6


def report(rows: list[tuple], run_dir: Path, url: str, args: argparse.Namespace) -> int:
    print(f"\nsoak: {args.minutes:g} min, {args.workers} workers, default scenario; RSS after warm-up")
    print(f"{'process':<10} {'warm MiB':>9} {'end MiB':>9} {'growth':>8}")
    worst = 0.0
    for name, start, end, pct in rows:
        if pct is None:
            print(f"{name:<10} {'-':>9} {'-':>9} {'(too few samples)':>8}")
            continue
        worst = max(worst, pct) if name != "target" else worst
        print(f"{name:<10} {start:>9.1f} {end:>9.1f} {pct:>+7.1f}%")
    snap = target.scrape(url)
    served = target.delta(target.TargetSnapshot(), snap).album_requests if snap else None
    posts = snap.requests.get("POST /albums") if snap else None
    path = run_dir / folder.MANIFEST
    m = RunManifest.read(path) if path.is_file() else RunManifest()
    n = csv_total(run_dir)
    exact = n is not None and n == m.requests == served
    print(f"(the target holds the seed albums plus {posts} POSTed ones: its growth is its data)")
    print(f"Locust workers/master worst growth: {worst:+.1f}% (goal <= {GOAL_PERCENT:g}%)")
    verdict = "exact" if exact else "NOT EXACT"
    print(f"counts: CSV {n}, run.json {m.requests}, target served {served}: {verdict}")
    print(f"run.json: status {m.status}, exit code {m.exit_code}")
    size = folder_mb(run_dir) if run_dir.is_dir() else 0.0
    print(f"run folder: {size:.2f} MB (goal <= {GOAL_FOLDER_MB:g} MB)")
    if run_dir.is_dir():
        files = sorted((p for p in run_dir.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
        print("  largest: " + ", ".join(f"{p.name} {p.stat().st_size / 1e6:.2f} MB" for p in files[:4]))
    return 0 if exact and worst <= GOAL_PERCENT and size <= GOAL_FOLDER_MB else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="run length (default 10)")
    ap.add_argument("--workers", type=int, default=4, help="Locust workers (default 4)")
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between RSS samples (default 5)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="swarmbench-soak-")
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs, url, run_dir = start_processes(args, tmp)
        times, rss = sample(procs, args.interval)
        for name, p in procs.items():
            if name != "target":
                p.wait(timeout=60)
        return report(growth_table(times, rss, args.minutes * 60), run_dir, url, args)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
