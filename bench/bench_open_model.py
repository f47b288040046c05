"""Benchmark: Swarmbench's open model (--arrival-rate) against Vegeta, at the same rates, on the same
local target.

    python bench/bench_open_model.py [--rates 100 200 400] [--duration 15] [--users 50]
                                     [--processes 0] [--delay 0ms] [--max-wait 0] [--vegeta PATH]
                                     [--closed]

Builds the bundled target (Go) and Vegeta (`go install github.com/tsenart/vegeta/v12@VEGETA_VERSION`
into a temp GOBIN, from the Go module proxy; or --vegeta PATH), then for each rate starts a fresh
target on 127.0.0.1 and attacks it with each tool for --duration seconds:

  swarmbench  Locust with --arrival-rate R, a pool of --users AlbumsFastHttpUser users (the albums
              journey, 3 GET : 1 POST, each response validated), --processes N workers (0: one
              standalone process); p50/p99 from its HDR histograms: service time (Locust's) and
              from the intended start
  vegeta      `vegeta attack -rate R/s` over the same 3:1 cycle of requests (GET list, GET one,
              POST, GET one); p50/p99 from `vegeta report -type json` (no body validation)
  closed      (--closed) what a closed-loop Locust shows: the same pool with `--wait-time
              'throughput R/users'` (each user paced to its share), Locust's own p50/p99

and prints, side by side: achieved rate, p50/p99 of each tool, Swarmbench's drops. Every load
loop is bounded by --duration; only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from swarmbench.runner.net import free_port
from swarmbench.runner.net import wait_http_or_raise as wait_http

ROOT = Path(__file__).resolve().parent.parent
VEGETA_MODULE = "github.com/tsenart/vegeta/v12"
VEGETA_VERSION = "v12.12.0"
"""Pinned: a benchmark compared across time must compare the same tool."""

USER_CLASS = "AlbumsFastHttpUser"
"""The cheaper of the two Locust clients: the comparison is about pacing, not about requests' CPU."""


class Target:
    """The albums service on a free loopback port, fresh for each measurement."""

    def __init__(self, binary: Path, delay: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PORT": str(self.port)}
        if delay:
            env["ALBUMS_DELAY"] = delay
        self.proc = subprocess.Popen(
            [str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_http(self.url + "/healthz")

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


def build(work: Path, vegeta: str | None) -> tuple[Path, Path]:
    target = work / "albums"
    subprocess.run(["go", "build", "-o", str(target), "."], cwd=ROOT / "target", check=True)
    if vegeta:
        return target, Path(vegeta)
    gobin = work / "gobin"
    env = {**os.environ, "GOBIN": str(gobin)}
    subprocess.run(["go", "install", f"{VEGETA_MODULE}@{VEGETA_VERSION}"], env=env, check=True, cwd=work)
    return target, gobin / "vegeta"


# --- the tools ----------------------------------------------------------------------------------


def run_swarmbench(url: str, rate: float, args: argparse.Namespace, out: Path, closed: bool = False) -> dict:
    run_id = f"{'closed' if closed else 'open'}-{rate:g}"
    cmd = [sys.executable, "-m", "locust", "--headless", "-H", url, "-t", f"{args.duration}s"]
    cmd += ["-u", str(args.users), "-r", str(args.users), "--results-dir", str(out), "--run-id", run_id]
    if closed:
        cmd += ["--wait-time", f"throughput {rate / args.users:g}"]
    else:
        cmd += ["--arrival-rate", f"{rate:g}", "--arrival-max-wait", args.max_wait]
    if args.processes:
        port = str(free_port())
        cmd += ["--processes", str(args.processes), "--master-bind-port", port, "--master-port", port]
    res = subprocess.run(
        [*cmd, USER_CLASS], cwd=ROOT, capture_output=True, text=True, timeout=args.duration + 90
    )  # fmt: skip
    if res.returncode != 0:
        sys.exit(f"bench_open_model: Locust failed at {rate:g}/s:\n{res.stderr[-2000:]}")
    run_dir = out / run_id
    manifest = json.loads((run_dir / "run.json").read_text())
    if closed:
        return closed_figures(run_dir, manifest)
    om = manifest["open_model"]
    with open(run_dir / "locust_latency_hdr.csv", newline="") as f:
        agg = {r["kind"]: r for r in csv.DictReader(f) if r["name"] == "Aggregated"}
    return {
        "achieved": om["achieved_rate"],
        "p50": float(agg["service"]["p50_ms"]),
        "p99": float(agg["service"]["p99_ms"]),
        "ip50": float(agg["intended"]["p50_ms"]),
        "ip99": float(agg["intended"]["p99_ms"]),
        "dropped": om["dropped_iterations"],
        "cpu": (manifest.get("worker_cpu") or {}).get("mean_percent"),
    }


def closed_figures(run_dir: Path, manifest: dict) -> dict:
    with open(run_dir / "locust_stats.csv", newline="") as f:
        agg = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
    return {
        "achieved": manifest["totals"]["requests"] / manifest["duration_s"],
        "p50": float(agg["50%"]),
        "p99": float(agg["99%"]),
        "cpu": (manifest.get("worker_cpu") or {}).get("mean_percent"),
    }


def vegeta_targets(url: str, path: Path) -> None:
    """The albums journey's cycle as Vegeta JSON targets (Vegeta walks them round-robin)."""
    body = base64.b64encode(
        json.dumps({"title": "Bench", "artist": "Vegeta", "price": 9.99}).encode()
    ).decode()
    lines = [
        {"method": "GET", "url": f"{url}/albums?limit=20"},
        {"method": "GET", "url": f"{url}/albums/1"},
        {
            "method": "POST",
            "url": f"{url}/albums",
            "body": body,
            "header": {"Content-Type": ["application/json"]},
        },
        {"method": "GET", "url": f"{url}/albums/2"},
    ]
    path.write_text("".join(json.dumps(t) + "\n" for t in lines))


def run_vegeta(vegeta: Path, url: str, rate: float, args: argparse.Namespace, work: Path) -> dict:
    targets, results = work / "targets.jsonl", work / f"vegeta-{rate:g}.bin"
    vegeta_targets(url, targets)
    attack = [str(vegeta), "attack", "-format=json", f"-targets={targets}", f"-rate={rate:g}/s"]
    attack += [f"-duration={args.duration}s", f"-output={results}", "-timeout=30s"]
    subprocess.run(attack, check=True, timeout=args.duration + 60)
    rep = subprocess.run(
        [str(vegeta), "report", "-type=json", str(results)], check=True, capture_output=True, text=True
    )  # fmt: skip
    r = json.loads(rep.stdout)
    lat = r["latencies"]
    return {
        "achieved": r["rate"],
        "p50": lat["50th"] / 1e6,
        "p99": lat["99th"] / 1e6,
        "success": r["success"],
    }


# --- the table ------------------------------------------------------------------------------------


def row(*cells: object) -> str:
    widths = (7, 11, 10, 9, 9, 12, 12, 9, 8)
    return "  ".join(f"{c!s:>{w}}" for c, w in zip(cells, widths, strict=False))


def fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", type=float, nargs="+", default=[100, 200, 400], help="iterations/s")
    p.add_argument("--duration", type=int, default=15, help="seconds per measurement")
    p.add_argument("--users", type=int, default=50, help="Swarmbench's pool (--users)")
    p.add_argument("--processes", type=int, default=0, help="Locust worker processes (0: standalone)")
    p.add_argument("--delay", default="", help="ALBUMS_DELAY of the target, e.g. 20ms")
    p.add_argument("--max-wait", default="0", help="Swarmbench's --arrival-max-wait, e.g. 1s")
    p.add_argument("--vegeta", help="a vegeta binary to use instead of building the pinned one")
    p.add_argument("--closed", action="store_true", help="also a closed-loop Locust run per rate")
    args = p.parse_args()
    if shutil.which("go") is None:
        sys.exit("bench_open_model: needs Go (the target and Vegeta are built from source)")
    with tempfile.TemporaryDirectory(prefix="bench-open-") as tmp:
        work = Path(tmp)
        target_bin, vegeta = build(work, args.vegeta)
        tool = VEGETA_VERSION if not args.vegeta else args.vegeta
        print(f"target: {'ALBUMS_DELAY=' + args.delay if args.delay else 'no delay'}; Swarmbench pool "
              f"{args.users} {USER_CLASS} users, {args.processes or 'standalone'} worker process(es); "
              f"{args.duration} s per run; vegeta {tool}")  # fmt: skip
        print(
            row(
                "rate/s",
                "tool",
                "achieved/s",
                "p50 ms",
                "p99 ms",
                "int. p50 ms",
                "int. p99 ms",
                "dropped",
                "CPU %",
            )
        )
        for rate in args.rates:
            with Target(target_bin, args.delay) as t:
                s = run_swarmbench(t.url, rate, args, work / "results")
            print(row(f"{rate:g}", "swarmbench", fmt(s["achieved"]), fmt(s["p50"], 2), fmt(s["p99"], 2),
                      fmt(s["ip50"], 2), fmt(s["ip99"], 2), s["dropped"], fmt(s["cpu"])))  # fmt: skip
            with Target(target_bin, args.delay) as t:
                v = run_vegeta(vegeta, t.url, rate, args, work)
            print(row("", "vegeta", fmt(v["achieved"]), fmt(v["p50"], 2), fmt(v["p99"], 2), "", "",
                      f"ok {v['success']:.0%}", ""))  # fmt: skip
            if args.closed:
                with Target(target_bin, args.delay) as t:
                    c = run_swarmbench(t.url, rate, args, work / "results", closed=True)
                print(row("", "closed", fmt(c["achieved"]), fmt(c["p50"], 2), fmt(c["p99"], 2), "", "", "-",
                          fmt(c["cpu"])))  # fmt: skip
            sys.stdout.flush()


if __name__ == "__main__":
    main()
