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
              from the intended start; and the start lag: how late each iteration's first
              request went out after its intended start (run.json open_model start_lag), over
              all worker processes and the worst one's: the generator's share of that latency
  vegeta      `vegeta attack -rate R/s` over the same 3:1 cycle of requests (GET list, GET one,
              POST, GET one); p50/p99 from `vegeta report -type json` (no body validation)
  closed      (--closed) what a closed-loop Locust shows: the same pool with `--wait-time
              'throughput R/users'` (each user paced to its share), Locust's own p50/p99

and prints, side by side: achieved rate, p50/p99 of each tool, Swarmbench's drops, and the ratio
of Swarmbench's intended-start p99 to Vegeta's p99. Each figure is the median of --repeats runs
(default 3) with their range [min-max]; the ratio is the median of each repeat's own ratio.

    python bench/bench_open_model.py --rates 1000 --repeats 10 --against c12f531 [--no-vegeta]

also runs COMMIT's Swarmbench (its tree from `git archive`: its plugin, locustfiles and
locust.conf, with this checkout's Python and Locust) beside this checkout's, alternating which goes
first in each repeat, a fresh target for every run, and prints the pair: each side's median and
range, and the median of the paired ratios (this / COMMIT) of each figure.

    python bench/bench_open_model.py --capacity [--repeats 3] [--users 100] [--duration 15]

measures what the open model costs a load generator, in requests per core: one Locust process
pinned to one CPU (the target on another, where there are two), saturated. It alternates a
closed-loop run without think time (`--wait-time 'constant 0'`, Locust's most requests per core)
and an open-model run offered more than that, --repeats times, and prints each run's requests per
CPU-second (the process's own CPU seconds during the test, run.json `worker_cpu`) and the median
ratio. Then the highest rate the open model holds (< 1 % dropped) on that core, tried at 80-95 %
of the closed-loop median.

Every load loop is bounded by --duration; only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import base64
import csv
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from swarmbench.core import folder
from swarmbench.core.manifest import OpenModel, RunManifest
from swarmbench.runner.points import free_port
from swarmbench.runner.points import wait_http_or_raise as wait_http

ROOT = Path(__file__).resolve().parent.parent
VEGETA_MODULE = "github.com/tsenart/vegeta/v12"
VEGETA_VERSION = "v12.12.0"
"""Pinned: a benchmark compared across time must compare the same tool."""

RUNS = itertools.count(1)
"""Numbers the runs' folders (the same rate may run more than once)."""

USER_CLASS = "AlbumsFastHttpUser"
"""The cheaper of the two Locust clients: the comparison is about pacing, not about requests' CPU."""


class Target:
    """The albums service on a free loopback port, fresh for each measurement."""

    def __init__(self, binary: Path, delay: str, cpus: Cpus = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PORT": str(self.port)}
        if delay:
            env["ALBUMS_DELAY"] = delay
        self.proc = subprocess.Popen(
            [str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=pin(cpus),
        )  # fmt: skip
        wait_http(self.url + "/healthz")

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


Cpus = set[int] | None
"""CPUs to confine a process to (None: anywhere)."""


def pin(cpus: Cpus):  # noqa: ANN201 (a preexec_fn or None)
    """A preexec_fn that confines the child to CPUS (None: run anywhere)."""
    return None if cpus is None else lambda: os.sched_setaffinity(0, cpus)


def split_cpus() -> tuple[Cpus, Cpus]:
    """(Locust's CPU, the target's CPUs): one core for the generator, the others for the target,
    so 'requests per core' is measured on one core that nothing else shares. None on one CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    return ({cpus[0]}, set(cpus[1:])) if len(cpus) > 1 else (None, None)


def build_target(work: Path) -> Path:
    target = work / "albums"
    subprocess.run(["go", "build", "-o", str(target), "."], cwd=ROOT / "target", check=True)
    return target


def build(work: Path, vegeta: str | None) -> tuple[Path, Path]:
    target = build_target(work)
    if vegeta:
        return target, Path(vegeta)
    gobin = work / "gobin"
    env = {**os.environ, "GOBIN": str(gobin)}
    subprocess.run(["go", "install", f"{VEGETA_MODULE}@{VEGETA_VERSION}"], env=env, check=True, cwd=work)
    return target, gobin / "vegeta"


# --- the tools ----------------------------------------------------------------------------------


def run_swarmbench(
    url: str,
    rate: float,
    args: argparse.Namespace,
    out: Path,
    mode: str = "open",
    cpus: Cpus = None,
    tree: Path = ROOT,
) -> dict:
    """One Locust run. MODE: open (--arrival-rate RATE), paced (closed loop, each user paced to its
    share of RATE) or unpaced (closed loop, no think time: as many requests as the core allows).
    TREE: whose Swarmbench runs (its plugin, locustfiles and locust.conf; --against COMMIT's)."""
    run_id = f"{mode}-{rate:g}-{next(RUNS)}"
    cmd = [sys.executable, "-m", "locust", "--headless", "-H", url, "-t", f"{args.duration}s"]
    cmd += ["-u", str(args.users), "-r", str(args.users), "--results-dir", str(out), "--run-id", run_id]
    if mode == "paced":
        cmd += ["--wait-time", f"throughput {rate / args.users:g}"]
    elif mode == "unpaced":
        cmd += ["--wait-time", "constant 0"]
    else:
        cmd += ["--arrival-rate", f"{rate:g}", "--arrival-max-wait", args.max_wait]
    if args.processes:
        port = str(free_port())
        cmd += ["--processes", str(args.processes), "--master-bind-port", port, "--master-port", port]
    env = {**os.environ, "PYTHONPATH": str(tree)}  # its swarmbench package, not the installed one
    res = subprocess.run(
        [*cmd, USER_CLASS], cwd=tree, env=env, capture_output=True, text=True, timeout=args.duration + 90,
        preexec_fn=pin(cpus),
    )  # fmt: skip
    if res.returncode != 0:
        sys.exit(f"bench_open_model: Locust failed ({mode}, {rate:g}/s, {tree}):\n{res.stderr[-2000:]}")
    run_dir = out / run_id
    manifest = RunManifest.read(run_dir / folder.MANIFEST)
    cpu = manifest.worker_cpu.mean_percent if manifest.worker_cpu else None
    requests, duration = manifest.requests or 0, manifest.duration_s or 1.0
    figures = {
        "requests_per_s": requests / duration,
        "cpu": cpu,
        # the process's own CPU seconds during the test (plugin/generator.py), not its start-up
        "per_cpu_s": requests / (duration * cpu / 100) if cpu else None,
    }
    if mode != "open":
        return {**figures, "achieved": figures["requests_per_s"], **locust_percentiles(run_dir)}
    return {**figures, **open_figures(run_dir, manifest.open_model or OpenModel())}


def open_figures(run_dir: Path, om: OpenModel) -> dict:
    """An open-model run's figures: both latencies' p50/p99 (its HDR files), the start lag, drops."""
    with open(run_dir / "locust_latency_hdr.csv", newline="") as f:
        agg = {r["kind"]: r for r in csv.DictReader(f) if r["name"] == "Aggregated"}
    # the generator's own share (run.json open_model start_lag; None from a commit without it)
    lag = om.latency_ms.start_lag if om.latency_ms else None
    each = [w.start_lag.p99 for w in om.per_worker.values() if w.start_lag and w.start_lag.p99 is not None]
    return {
        "lag50": lag.p50 if lag else None,
        "lag99": lag.p99 if lag else None,
        "lag99_worst": max(each) if each else None,
        "achieved": om.achieved_rate,
        "p50": float(agg["service"]["p50_ms"]),
        "p99": float(agg["service"]["p99_ms"]),
        "ip50": float(agg["intended"]["p50_ms"]),
        "ip99": float(agg["intended"]["p99_ms"]),
        "dropped": om.dropped_iterations,
        "dropped_ratio": om.dropped_ratio or 0.0,
    }


def locust_percentiles(run_dir: Path) -> dict:
    """A closed-loop run's p50/p99 as Locust reports them (its Aggregated row)."""
    with open(run_dir / "locust_stats.csv", newline="") as f:
        agg = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
    return {"p50": float(agg["50%"]), "p99": float(agg["99%"])}


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


# --- the tables -----------------------------------------------------------------------------------


def fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def spread(values: list[float | None], digits: int = 2) -> str:
    """The median of VALUES with their range: '12.34 [11.90-13.02]' ('-' when none is known)."""
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    if len(known) == 1:
        return f"{known[0]:.{digits}f}"
    return f"{statistics.median(known):.{digits}f} [{min(known):.{digits}f}-{max(known):.{digits}f}]"


FIGURES = (("achieved", "achieved/s", 1), ("p50", "p50 ms", 2), ("p99", "p99 ms", 2),
           ("ip50", "int. p50 ms", 2), ("ip99", "int. p99 ms", 2), ("cpu", "CPU %", 1),
           ("lag50", "start lag p50 ms", 3), ("lag99", "start lag p99 ms", 3),
           ("lag99_worst", "worst generator's start lag p99 ms", 3))  # fmt: skip
"""Swarmbench's figures the table prints: (key, heading, decimals). The start lag is how late each
iteration's first request went out after its intended start: the generator's own share of the
intended-start latency (the rest is the request's service time)."""


def source_tree(commit: str, work: Path) -> Path:
    """COMMIT's files (git archive) in WORK, for --against: one line and exit 2 when it is no commit."""
    got = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True)
    if got.returncode != 0:
        why = got.stderr.decode().strip() or "not a commit here"
        sys.exit(f"bench_open_model: --against {commit}: {why}")
    tree = work / f"against-{commit}"
    tree.mkdir()
    subprocess.run(["tar", "-x", "-C", str(tree)], input=got.stdout, check=True)
    return tree


def compare(args: argparse.Namespace, target_bin: Path, vegeta: Path | None, work: Path) -> None:
    """Swarmbench and Vegeta at each rate, side by side, --repeats times (and a closed-loop Locust
    with --closed); with --against COMMIT, COMMIT's Swarmbench too, alternating first in each repeat."""
    tool = "not run" if vegeta is None else VEGETA_VERSION if not args.vegeta else args.vegeta
    print(f"target: {'ALBUMS_DELAY=' + args.delay if args.delay else 'no delay'}; Swarmbench pool "
          f"{args.users} {USER_CLASS} users, {args.processes or 'standalone'} worker process(es); "
          f"{args.duration} s per run, {args.repeats} repeat(s), median [min-max]; "
          f"vegeta {tool}")  # fmt: skip
    sides = [("this", ROOT)]
    if args.against:
        sides.append((args.against, source_tree(args.against, work)))
    for rate in args.rates:
        found: dict[str, list[dict]] = {label: [] for label, _ in sides}
        veg: list[dict] = []
        closed: list[dict] = []
        for i in range(args.repeats):
            for label, tree in sides if i % 2 == 0 else sides[::-1]:  # alternate who goes first
                with Target(target_bin, args.delay) as t:
                    found[label].append(run_swarmbench(t.url, rate, args, work / "results", tree=tree))
            if vegeta is not None:
                with Target(target_bin, args.delay) as t:
                    veg.append(run_vegeta(vegeta, t.url, rate, args, work))
            if args.closed:
                with Target(target_bin, args.delay) as t:
                    closed.append(run_swarmbench(t.url, rate, args, work / "results", mode="paced"))
            print(f"  {rate:g}/s: repeat {i + 1} of {args.repeats} done", file=sys.stderr, flush=True)
        print(f"\nrate {rate:g}/s")
        for label, runs in found.items():
            cells = [f"{h} {spread([r[k] for r in runs], d)}" for k, h, d in FIGURES]
            dropped = sum(r["dropped"] or 0 for r in runs)
            print(f"  swarmbench ({label}): " + "; ".join(cells) + f"; dropped {dropped} in all")
            if veg:
                ratios = [r["ip99"] / v["p99"] for r, v in zip(runs, veg, strict=True)]
                print(f"    int. p99 / vegeta's p99: {spread(ratios, 3)}")
        if veg:
            cells = [f"{h} {spread([v[k] for v in veg], d)}" for k, h, d in FIGURES[:3]]
            ok = min(v["success"] for v in veg)
            print("  vegeta: " + "; ".join(cells) + f"; success at least {ok:.0%}")
        if closed:
            cells = [f"{h} {spread([c[k] for c in closed], d)}" for k, h, d in FIGURES[:3]]
            print("  closed loop (this): " + "; ".join(cells))
        if args.against:
            mine, theirs = found["this"], found[args.against]
            for key, heading, _ in (*FIGURES[1:5], *FIGURES[6:8]):
                ratios = [a[key] / b[key] for a, b in zip(mine, theirs, strict=True) if a[key] and b[key]]
                pairs = f"(paired, {len(ratios)} pairs)"
                print(f"  this / {args.against}, {heading}: {spread(ratios, 3)} {pairs}")
        sys.stdout.flush()


def capacity(args: argparse.Namespace, target_bin: Path, work: Path) -> None:
    """Requests per core: closed loop without think time vs the open model offered more than that."""
    gen, tgt = split_cpus()
    where = f"Locust on CPU {sorted(gen)}, target on {sorted(tgt)}" if gen else "one CPU, nothing pinned"
    print(f"capacity: {args.users} {USER_CLASS} users, one process, {args.duration} s per run; {where}")
    print(f"{'run':>4}  {'mode':>8}  {'offered/s':>9}  {'requests/s':>10}  {'CPU %':>6}  {'req/CPU-s':>9}  "
          "dropped")  # fmt: skip
    closed, opened = [], []
    for i in range(1, args.repeats + 1):
        with Target(target_bin, args.delay, tgt) as t:
            c = run_swarmbench(t.url, 0, args, work / "results", mode="unpaced", cpus=gen)
        closed.append(c["per_cpu_s"])
        offered = 1.5 * c["requests_per_s"]  # beyond what the core can start: saturated
        with Target(target_bin, args.delay, tgt) as t:
            o = run_swarmbench(t.url, round(offered), args, work / "results", cpus=gen)
        opened.append(o["per_cpu_s"])
        print(f"{i:>4}  {'closed':>8}  {'-':>9}  {c['requests_per_s']:>10.0f}  {fmt(c['cpu']):>6}  "
              f"{fmt(c['per_cpu_s'], 0):>9}  -")  # fmt: skip
        print(f"{i:>4}  {'open':>8}  {offered:>9.0f}  {o['requests_per_s']:>10.0f}  {fmt(o['cpu']):>6}  "
              f"{fmt(o['per_cpu_s'], 0):>9}  {o['dropped_ratio']:.1%}")  # fmt: skip
        sys.stdout.flush()
    base, mine = statistics.median(closed), statistics.median(opened)
    print(f"median requests per CPU-second: closed {base:.0f}, open {mine:.0f}: "
          f"the open model keeps {mine / base:.1%} (costs {1 - mine / base:.1%})")  # fmt: skip
    for share in (0.80, 0.85, 0.90, 0.95):
        with Target(target_bin, args.delay, tgt) as t:
            o = run_swarmbench(t.url, round(share * base), args, work / "results", cpus=gen)
        held = "held" if o["dropped_ratio"] < 0.01 else "not held"
        print(f"open at {share:.0%} of the closed loop ({share * base:.0f}/s): achieved "
              f"{o['achieved']:.0f}/s, {o['dropped_ratio']:.2%} dropped, CPU {fmt(o['cpu'])} %: "
              f"{held}")  # fmt: skip
        sys.stdout.flush()


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
    p.add_argument("--capacity", action="store_true", help="requests per core, closed vs open (no Vegeta)")
    p.add_argument("--repeats", type=int, default=3, help="runs per point (median); --capacity: pairs")
    p.add_argument("--against", help="also run this commit's Swarmbench, paired with this checkout's")
    p.add_argument("--no-vegeta", action="store_true", help="leave Vegeta out (e.g. --against alone)")
    args = p.parse_args()
    if args.repeats < 1:
        sys.exit(f"bench_open_model: --repeats {args.repeats}: at least 1")
    if shutil.which("go") is None:
        sys.exit("bench_open_model: needs Go (the target and Vegeta are built from source)")
    if args.capacity and args.processes:
        sys.exit("bench_open_model: --capacity measures one process; leave out --processes")
    with tempfile.TemporaryDirectory(prefix="bench-open-") as tmp:
        work = Path(tmp)
        if args.capacity:
            target_bin = build_target(work)
            capacity(args, target_bin, work)
        else:
            if args.no_vegeta:
                compare(args, build_target(work), None, work)
            else:
                target_bin, vegeta = build(work, args.vegeta)
                compare(args, target_bin, vegeta, work)


if __name__ == "__main__":
    main()
