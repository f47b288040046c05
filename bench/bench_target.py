"""Benchmark: the albums target's memory and connection bounds, probed as the "Hardening" issue did.

    python3 bench/bench_target.py [--quick] [--baseline-ref REF] [--uncapped]

Builds target/ with `go build` into a temp dir, starts it on a free 127.0.0.1 port (ADDR=127.0.0.1)
with its default settings, and runs these probes against it, in order, each bounded in count and
time, all to 127.0.0.1:

  small POSTs    200,000 small albums over 8 keep-alive connections (--quick: 20,000)
  64KiB POSTs    5,000 bodies of exactly 64 KiB (--quick: 1,000), a 65,000-byte title each
  2KiB POSTs     the largest albums accepted (1 KiB title and artist) until ALBUMS_MAX_BYTES answers
                 507, at most 150,000 (--quick: at most 20,000, with ALBUMS_MAX_BYTES=16MiB)
  list 1000      8 concurrent GET /albums?limit=1000 at the largest albums stored
  list 100       the same with limit=100
  slow bodies    3,000 connections (fewer if `ulimit -n` is lower; the script says so) that send
                 POST headers and 1 body byte, then nothing: did the server close them, and when?

The target's RSS (VmRSS in /proc/PID/status) is sampled every 20 ms: before and after each probe,
and its peak during it. Options add runs, printed side by side:

  --baseline-ref REF  also build target/ as of git commit REF (extracted with `git archive`; the
                      working tree, index and HEAD are not touched) and probe it the same way. A
                      REF whose target listens on every interface is patched to listen on 127.0.0.1.
  --uncapped          also probe this build with ALBUMS_MAX_ALBUMS, ALBUMS_MAX_BYTES and
                      ALBUMS_MAX_CONNS at their maxima (field, page and timeout bounds still apply).

Standard library only. The target is killed at the end whatever happens; a full run takes about
80 s per target on 2 cores (--quick: about 30 s).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _target_helpers import (
    HOST,
    ROOT,
    Result,
    RssSampler,
    Target,
    build,
    extract_ref,
    get_concurrently,
    post_many,
)

SLOW_WANTED = 3000
SLOW_TIMEOUT_S = 15.0  # the target's default ReadHeaderTimeout + ReadTimeout body allowance (5 s + 10 s)
SLOW_WAIT_S = SLOW_TIMEOUT_S + 10.0  # how long the probe waits for the server to close them
BODY_64K = 64 << 10
UNCAPPED = {
    "ALBUMS_MAX_ALBUMS": "1099511627776",
    "ALBUMS_MAX_BYTES": "1024TiB",
    "ALBUMS_MAX_CONNS": "1048576",
}


def slow_bodies(target: Target, n: int, res: Result) -> None:
    """n connections that send POST headers and one body byte, then nothing. Waits up to SLOW_WAIT_S
    for the server to close them; fills res.statuses with what it answered and res.note."""
    head = (
        b"POST /albums HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n{"
    )
    sel = selectors.DefaultSelector()
    opened: dict[socket.socket, float] = {}
    held: list[float] = []
    try:
        for _ in range(n):
            try:
                s = socket.create_connection((HOST, target.port), timeout=5)
                s.sendall(head)
            except OSError:
                res.statuses["connect error"] += 1
                continue
            s.setblocking(False)
            opened[s] = time.monotonic()
            sel.register(s, selectors.EVENT_READ)
        res.sent = len(opened)
        time.sleep(1)
        server_open = target.metrics().get("albums_connections_open")
        deadline = time.monotonic() + SLOW_WAIT_S
        while len(held) < len(opened) and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.5):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data.startswith(b"HTTP/1."):
                    res.statuses[int(data.split()[1])] += 1
                if not data:
                    held.append(time.monotonic() - opened[s])
                    sel.unregister(s)
        still = len(opened) - len(held)
        if still:
            res.statuses["still open"] += still
        res.note = (
            f"{len(held)}/{len(opened)} closed by the server within {SLOW_WAIT_S:.0f} s"
            + (f", after {min(held):.1f}-{max(held):.1f} s" if held else "")
            + (f"; server saw {server_open:.0f} open" if server_open is not None else "")
        )
    finally:
        for s in opened:
            s.close()
        sel.close()


def slow_count() -> tuple[int, str]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = SLOW_WANTED + 200  # sockets, plus the client connections and files of the script
    if soft < want and (hard == resource.RLIM_INFINITY or hard >= want):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    n = min(SLOW_WANTED, soft - 200)
    note = "" if n == SLOW_WANTED else f" (lowered from {SLOW_WANTED}: ulimit -n is {soft})"
    return n, note


def run_probes(label: str, binary: Path, env: dict[str, str], quick: bool, tmp: Path) -> list[Result]:
    """Every memory probe against one target process, in the order the table prints them.
    (Long on purpose: each probe's window must sit inside the one try/finally that stops the target.)"""
    results: list[Result] = []
    target = Target(binary, env, tmp / f"{label.split()[0]}.log")
    sampler = RssSampler(target.proc.pid)
    sampler.start()
    try:
        print(f"\n[{label}] pid {target.proc.pid} on {HOST}:{target.port}, env {target.env}", flush=True)

        n = 20_000 if quick else 200_000
        with sampler.window(Result("small POSTs")) as r:
            t0 = time.monotonic()
            r.sent, r.statuses, _ = post_many(
                target.port,
                lambda i: json.dumps({"title": f"Bench Vol. {i}", "artist": "bench", "price": 1.5}),
                n,
            )
            r.note = f"{r.sent / (time.monotonic() - t0):,.0f} req/s"
        results.append(r)
        print(f"  {r.probe}: done", flush=True)

        n = 1_000 if quick else 5_000
        skeleton = json.dumps({"title": "", "artist": "bench", "price": 1})
        big = json.dumps({"title": "x" * (BODY_64K - len(skeleton)), "artist": "bench", "price": 1})
        assert len(big) == BODY_64K
        with sampler.window(Result("64KiB POSTs")) as r:
            r.sent, r.statuses, first_64k = post_many(target.port, lambda i: big, n)
        results.append(r)
        print(f"  {r.probe}: done", flush=True)

        n = 20_000 if quick else 150_000
        field_1k = "y" * 1024
        body_2k = json.dumps({"title": field_1k, "artist": field_1k, "price": 1})
        with sampler.window(Result("2KiB POSTs")) as r:
            r.sent, r.statuses, first_2k = post_many(target.port, lambda i: body_2k, n, stop_after_507=50)
            m = target.metrics()
            if "albums_store_bytes" in m:
                r.note = (
                    f"store: {m['albums_store_albums']:,.0f} albums, "
                    f"{m['albums_store_bytes'] / 2**20:,.1f} MiB counted"
                )
        results.append(r)
        print(f"  {r.probe}: done", flush=True)

        biggest = first_64k if first_64k is not None else first_2k
        offset = (biggest or 1) - 1
        for limit in (1000, 100):
            with sampler.window(Result(f"list {limit}")) as r:
                r.sent = 8
                r.statuses, size = get_concurrently(target.port, f"/albums?offset={offset}&limit={limit}", 8)
                r.note = f"offset {offset}, largest response {size:,} bytes"
            results.append(r)
        print("  list GETs: done", flush=True)

        n, lowered = slow_count()
        with sampler.window(Result("slow bodies")) as r:
            slow_bodies(target, n, r)
            r.note += lowered
        results.append(r)
        print(f"  {r.probe}: done", flush=True)
    finally:
        sampler.stopped.set()
        target.stop()
    return results


def fmt_statuses(c: collections.Counter) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(c.items(), key=lambda kv: str(kv[0]))) or "-"


def mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def print_table(runs: dict[str, list[Result]]) -> None:
    cols = ("probe", "sent", "statuses", "RSS before", "after", "peak MiB", "notes")
    for label, results in runs.items():
        rows = [
            (
                r.probe,
                f"{r.sent:,}",
                fmt_statuses(r.statuses),
                mib(r.rss_before),
                mib(r.rss_after),
                mib(r.rss_peak),
                r.note,
            )
            for r in results
        ]
        widths = [max(len(str(x)) for x in col) for col in zip(cols, *rows, strict=True)]
        print(f"\n== {label}")
        for row in (cols, *rows):
            print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    if len(runs) > 1:
        labels = list(runs)
        print("\n== peak RSS (MiB) side by side")
        print("  ".join(["probe".ljust(12), *(lab.split()[0].rjust(12) for lab in labels)]))
        for i, r in enumerate(runs[labels[0]]):
            print("  ".join([r.probe.ljust(12), *(mib(runs[lab][i].rss_peak).rjust(12) for lab in labels)]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="about a tenth of the requests")
    ap.add_argument("--baseline-ref", metavar="REF", help="also probe target/ as of this git commit")
    ap.add_argument(
        "--uncapped", action="store_true", help="also probe this build with its caps at the maxima"
    )
    args = ap.parse_args()
    if shutil.which("go") is None:
        print("bench_target: go is not on PATH", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="bench-target-"))
    try:
        plan: list[tuple[str, Path, dict[str, str]]] = []
        binary = tmp / "albums"
        build(ROOT / "target", binary)
        defaults = {"ALBUMS_MAX_BYTES": "16MiB"} if args.quick else {}
        plan.append(
            (
                "hardened (this tree" + (", ALBUMS_MAX_BYTES=16MiB)" if args.quick else ", defaults)"),
                binary,
                defaults,
            )
        )
        if args.uncapped:
            plan.append(("uncapped (this tree, store and connection caps at their maxima)", binary, UNCAPPED))
        if args.baseline_ref:
            src = extract_ref(args.baseline_ref, tmp / "baseline")
            if src is not None:
                build(src, tmp / "albums-baseline")
                plan.append((f"baseline (target/ at {args.baseline_ref})", tmp / "albums-baseline", {}))

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        print(
            f"bench_target: {os.cpu_count()} CPUs, ulimit -n {soft}, "
            f"{subprocess.run(['go', 'version'], capture_output=True, text=True).stdout.strip()}, "
            f"{'quick' if args.quick else 'full'} run, {time.strftime('%Y-%m-%d %H:%M:%S')}"
        )
        started = time.monotonic()
        runs = {label: run_probes(label, b, env, args.quick, tmp) for label, b, env in plan}
        print_table(runs)
        print(f"\nbench_target: {time.monotonic() - started:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
