"""The trend and its check against histories with a known truth, through the command line as CI runs
them (issue 32's goals). Prints counts with 95 % intervals (Wilson); asserts nothing.

    python bench/bench_trend_truth.py [--histories 100] [--cli 20] [--speed-runs 10000]

Each history is a new SQLite store filled through the store's API (Store.add_runs, what `history
add` does after reading a folder): runs of one configuration, 10 request names and Aggregated, 7
metrics each (77 series), every figure times 1 + 3 % x a standard normal draw.

1. Flat (30 runs): how many histories `trend` lists a change point in (goal <= 10 %), and how many
   `trend --check` exits 0 in (goal >= 90 %).
2. Drift: 10 flat runs, then +1 % a run (run 10 is +1 %): the check runs after every run, as CI runs
   it after recording main's run; the first run it exits 3 at, and whether the drift was then under
   +13 % (goal >= 90 % of histories). Two drifts: Aggregated p95 alone (one series of 77: the
   hardest), and every latency figure of every name (the system got slower).
3. Renamed: request name 0 renamed at run 15 of 30 (a new name from there): histories where either
   name shows a change point (filled forward and back, the old trend showed one in 41 % / 54 % of
   such series).
4. Speed: `swarmbench trend --json` and `trend --check` on 10,000 runs x 10 names (bench_history's
   synthetic store: every p99 +8 % at 60 %), a fresh process each, best of 3 (goal <= 2 s).

Most histories are judged in the process, by the functions the command line calls (trend.trend_json,
triage.check_json); the first --cli of each kind also through `python -m swarmbench` in a process of
its own, and the two must agree (printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from swarmbench.compare import triage
from swarmbench.compare.trend import TREND_METRICS, trend_json
from swarmbench.core.folder import utc_iso as iso
from swarmbench.history import NameStats, RunData, open_store, read_run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

NAMES = 10
"""Request names per run (and Aggregated): 77 series."""

NOISE = 0.03
"""Every figure's run-to-run noise (relative SD)."""

SCALE = dict(zip(TREND_METRICS, (400, 5, 9, 12, 20, 40, 80), strict=True))
"""Each metric's level (requests/s, then ms)."""

LATENCY = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")

TEMPLATE = read_run(ROOT / "tests" / "fixtures" / "exact" / "repeat-1", branch="main", testbed="truth")

Factor = Callable[[int, str, str], float]
"""(run, name, metric) -> the known change's factor."""


def runs(count: int, seed: int, factor: Factor | None = None, rename_at: int | None = None) -> list[RunData]:
    rng = np.random.default_rng(seed)
    z = 1 + NOISE * rng.standard_normal((count, NAMES + 1, len(TREND_METRICS)))
    out = []
    for i in range(count):
        stats = []
        for k in range(NAMES + 1):
            name = "Aggregated" if k == NAMES else f"GET /name/{k}"
            if k == 0 and rename_at is not None and i >= rename_at:
                name = "GET /v2/name/0"
            figures = {m: SCALE[m] * z[i, k, j] * (factor(i, name, m) if factor else 1.0)
                       for j, m in enumerate(TREND_METRICS)}  # fmt: skip
            stats.append(NameStats(type="" if k == NAMES else "GET", name=name, requests=10_000, failures=0,
                                   exact=True, hdr=None, **figures))  # fmt: skip
        started = iso(datetime(2027, 1, 1, tzinfo=UTC) + timedelta(minutes=i))
        identity = {"run_key": f"r{i}@{started}", "run_id": f"r{i}", "started_at": started}
        out.append(dataclasses.replace(TEMPLATE, git_commit=f"{i:040x}", stats=tuple(stats), **identity))
    return out


def drift(which: Callable[[str, str], bool], start: int = 10, per: float = 0.01) -> Factor:
    return lambda i, name, metric: 1 + per * (i - start + 1) if i >= start and which(name, metric) else 1.0


def cli(store: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swarmbench", "trend", "--history", store, *args],
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip


def wilson(k: int, n: int) -> str:
    """K of N with its 95 % Wilson interval."""
    if n == 0:
        return "0 of 0"
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{k} of {n} ({100 * p:.1f} %, 95 % CI {100 * (centre - half):.1f}-{100 * (centre + half):.1f} %)"


def flat(histories: int, n_cli: int, where: Path) -> None:
    listed = opened = disagree = 0
    for h in range(histories):
        spec = str(where / f"flat-{h}.sqlite")
        with open_store(spec) as store:
            store.add_runs(runs(30, 10_000 + h))
            found = trend_json(store)
            check = triage.check_json(store)
        listed += bool(found["change_points"])
        opened += bool(check["open"])
        if h < n_cli:
            said = cli(spec, "--json")
            code = cli(spec, "--check").returncode
            disagree += (bool(json.loads(said.stdout)["change_points"]) != bool(found["change_points"])) + (
                code != (3 if check["open"] else 0)
            )
    print(f"flat, 30 runs: `trend` lists a change point in {wilson(listed, histories)} (goal <= 10 %)")
    print(f"flat, 30 runs: `trend --check` exits 0 in {wilson(histories - opened, histories)} (goal >= 90 %)")
    print(f"  the command line on the first {min(n_cli, histories)}: {disagree} disagreement(s)")


def drifting(label: str, factor: Factor, histories: int, n_cli: int, where: Path) -> None:
    caught, at, disagree = 0, [], 0
    for h in range(histories):
        history = runs(30, 20_000 + h, factor)
        spec = str(where / f"drift-{label}-{h}.sqlite")
        first = None
        with open_store(spec) as store:
            store.add_runs(history[:11])
            for i in range(11, 30):
                store.add_runs([history[i]])
                if triage.check_json(store)["open"]:
                    first = i
                    break
        total = None if first is None else first - 9  # % of drift at that run
        at.append(total)
        caught += total is not None and total < 13
        if h < n_cli and first is not None:  # the command line: exit 3 at that run
            disagree += cli(spec, "--check").returncode != 3
    totals = [t for t in at if t is not None]
    print(f"drift +1 %/run ({label}): `trend --check` exits 3 before +13 % in {wilson(caught, histories)} "
          f"(goal >= 90 %); first exit 3 at a drift of median {np.median(totals):.0f} %, "
          f"90th percentile {np.percentile(totals, 90):.0f} %; never in {at.count(None)}")  # fmt: skip
    print(f"  the command line on the first {min(n_cli, histories)}: {disagree} disagreement(s)")


def renamed(histories: int, where: Path) -> None:
    hit = 0
    for h in range(histories):
        with open_store(str(where / f"renamed-{h}.sqlite")) as store:
            store.add_runs(runs(30, 30_000 + h, rename_at=15))
            found = trend_json(store)
        hit += any(p["name"] in ("GET /name/0", "GET /v2/name/0") for p in found["change_points"])
    print(f"renamed at run 15 of 30: either name shows a change point in {wilson(hit, histories)}")


def speed(count: int, where: Path) -> None:
    from bench_history import synthetic_runs

    spec = str(where / "speed.sqlite")
    with open_store(spec) as store:
        all_runs = synthetic_runs(count, NAMES)
        for k in range(0, count, 200):
            store.add_runs(all_runs[k : k + 200])
    for args in (("--json",), ("--check", "--json")):
        best = math.inf
        for _ in range(3):
            t = time.perf_counter()
            res = cli(spec, *args)
            best = min(best, time.perf_counter() - t)
            assert res.returncode in (0, 3), res.stderr
        what = f"`swarmbench trend {' '.join(args)}`, {count:,} runs x {NAMES} names"
        print(f"{what}: {best:.2f} s (a fresh process, best of 3; goal <= 2 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", type=int, default=100)
    parser.add_argument("--cli", type=int, default=20, help="histories of each kind also judged by the CLI")
    parser.add_argument("--speed-runs", type=int, default=10_000)
    parser.add_argument("--only", choices=("flat", "drift", "renamed", "speed"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        where = Path(d)
        if args.only in (None, "flat"):
            flat(args.histories, args.cli, where)
        if args.only in (None, "drift"):
            drifting("Aggregated p95 only", drift(lambda n, m: (n, m) == ("Aggregated", "p95_ms")),
                     args.histories, args.cli, where)  # fmt: skip
            drifting(
                "every latency figure", drift(lambda n, m: m in LATENCY), args.histories, args.cli, where
            )
        if args.only in (None, "renamed"):
            renamed(args.histories, where)
        if args.only in (None, "speed"):
            speed(args.speed_runs, where)


if __name__ == "__main__":
    main()
