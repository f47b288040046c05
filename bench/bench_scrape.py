"""Benchmark: what Prometheus scraping /metrics costs the master (plugin/metrics.py).

    python bench/bench_scrape.py [--workers 200] [--names 10] [--seconds 30] [--every 5]

Runs bench/bench_master_scale.py (the Swarmbench master alone, simulated workers on Locust's wire
protocol) twice, one after the other, with the same seed: once with /metrics on and no scraper,
once scraped every --every seconds from this process (as Prometheus would: a fresh connection each
time). Prints each run's master CPU (% of one core over the measured interval: bench_master_scale's
own figure), their difference, and the scrapes' answer times (p50, max, ms) and sizes. The goal
(issue 34): ≤ 2 % of a core more at a scrape every 5 s, 1,000 workers × 10 names; a scrape ≤ 50 ms.
A shared or small machine makes the CPU difference noisy: read it beside the scrape times.

--pin: the master gets the last CPU to itself, the simulated workers and the scraper the others
(BENCH_MASTER_CPUS, bench/_master_scale_procs.py). Unpinned, on 2 cores, the master waits for CPU
that 1,000 simulated workers use beside it, which no real deployment asks of it (its workers run
elsewhere): a scrape's slow answers then measure the bench's own crowding as much as the master.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCALE = ROOT / "bench" / "bench_master_scale.py"
sys.path.insert(0, str(ROOT / "bench"))
from _master_scale_procs import MASTER_CPUS_ENV, keep_off  # noqa: E402

LAST_LINE = re.compile(r"swarmbench_cpu=([\d.]+)%")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scraper(port: int, every: float, stop: threading.Event, out: list[tuple[float, int]]) -> None:
    """Scrape 127.0.0.1:PORT/metrics every EVERY seconds until STOP: (ms, bytes) of each answer."""
    while not stop.wait(every):
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                size = len(r.read())
        except OSError:
            continue  # not up yet, or gone
        out.append(((time.perf_counter() - started) * 1000, size))


def one(args: argparse.Namespace, scrape: bool) -> tuple[float, list[tuple[float, int]]]:
    port = free_port()
    env = {**os.environ, "SWARMBENCH_METRICS_PORT": str(port), "PYTHONPATH": str(ROOT)}
    if args.pin is not None:
        env[MASTER_CPUS_ENV] = str(args.pin)
    cmd = [sys.executable, str(SCALE), "--masters", "swarmbench", "--workers", str(args.workers)]
    cmd += ["--names", str(args.names), "--seconds", str(args.seconds), "--warmup", str(args.warmup)]
    scrapes: list[tuple[float, int]] = []
    stop = threading.Event()
    thread = threading.Thread(target=scraper, args=(port, args.every, stop, scrapes), daemon=True)
    if scrape:
        thread.start()
    try:
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        stop.set()
    found = LAST_LINE.search(res.stdout)
    if res.returncode != 0 or found is None:
        sys.exit(
            f"bench_master_scale failed (exit {res.returncode}):\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
        )
    return float(found[1]), scrapes


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=200)
    p.add_argument("--names", type=int, default=10)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--warmup", type=float, default=15)
    p.add_argument("--every", type=float, default=5.0, help="seconds between scrapes (Prometheus: 5 s here)")
    p.add_argument(
        "--pin", action="store_const", const=max(os.sched_getaffinity(0)),
        help="the master on a CPU of its own (the last), the simulated workers and the scraper on the others",
    )  # fmt: skip
    args = p.parse_args()
    if args.pin is not None:
        others = keep_off({args.pin})  # before the scraper thread starts: it inherits it
        if others is None:
            sys.exit("--pin needs at least 2 CPUs: one for the master, one for the rest")
        print(f"master on CPU {args.pin}; simulated workers and scraper on CPU {sorted(others)}")
    quiet, _ = one(args, scrape=False)
    scraped, scrapes = one(args, scrape=True)
    ms = sorted(m for m, _ in scrapes)
    print(f"workers={args.workers} names={args.names} every={args.every:g}s")
    print(
        f"master CPU: {quiet:.1f} % not scraped, {scraped:.1f} % scraped ({scraped - quiet:+.1f} % of a core)"
    )
    if ms:
        size = statistics.median(b for _, b in scrapes)
        p50 = statistics.median(ms)
        print(f"scrapes: {len(ms)}, answer p50 {p50:.1f} ms, max {ms[-1]:.1f} ms, {size:.0f} bytes")
        # in order, from the master's start (its warm-up included): where the slow ones fall
        print("answers in order, ms: " + " ".join(f"{m:.0f}" for m, _ in scrapes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
