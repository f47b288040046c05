"""Benchmark of the gate against history on real runs (issues 26 and 32). Prints figures; asserts nothing.

    python bench/bench_gate.py [--pool DIR] [--runs 16] [--delay 100ms,10ms] [--trials 2000]

Goal: the whole gate (every request name x metric, the exit code) fails an unchanged run in <= 5 %
of trials and a run whose p95 is 10 % higher (every name's) in >= 90 %, with the runs of this
machine recorded in one session, at 100 ms and at 10 ms service time (ALBUMS_DELAY).

1. The runs, per delay: RUNS identical runs of the bundled target recorded now into a history
   (`swarmbench ab --record`, LOCAL=1, A/A: RUNS/2 + RUNS/2 interleaved runs of 20 s, `make ab`'s
   client AlbumsFastHttpUser, 8 users, constant 0.02 s wait: bench_compare.py's pool settings with
   ALBUMS_DELAY set), kept in DIR/<delay> (default: a temp folder); --pool DIR reads histories
   recorded before (DIR/<delay>/history.sqlite, or DIR/history.sqlite) instead. Printed: each
   metric's run-to-run noise (Aggregated: the gate's robust SD on the log scale, and the plain
   relative SD), and every run's p95.
2. Trials on the real runs: a trial draws min(20, RUNS - 1) past runs and 1 other run as the
   candidate, and judges every row as the gate does (compare/trend.py _differences: the same
   code as `compare --history`, each row at its share of the gate's 5 %), once as it is and once
   with every name's p95 x 1.10. Counted: trials with any row `regressed` (exit 3), and those with
   Aggregated p95 `regressed`. One draw goes the whole way through gate_outcome (the store) as a
   check that the shortcut is the gate.
3. The same on synthetic runs (log-normal noise of a chosen SD in every figure, 10 names +
   Aggregated): the p95 noise the goal needs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_compare import POOL_SETTINGS

from swarmbench.compare import history_stats
from swarmbench.compare.report import rows as report_rows
from swarmbench.compare.trend import BASELINE_RUNS, _differences, gate_outcome
from swarmbench.core.checks import AGGREGATED, COMPARE_METRICS, MIN_EFFECT, REGRESSED, verdict
from swarmbench.history import NameStats, open_store

ROOT = Path(__file__).resolve().parent.parent

SHIFT = 1.10
"""Every name's p95 times this: the 10 % regression of the goal."""

DELAYS = ("100ms", "10ms")
"""ALBUMS_DELAY of the two pools: the service's own time dominating p95, and bench_compare's pool."""

NOISES = (0.005, 0.010, 0.015, 0.020, 0.030, 0.050)
"""Run-to-run SDs (relative, every figure) for the synthetic part."""


def record(where: Path, runs: int, delay: str | None) -> Path:
    """RUNS identical runs into WHERE/history.sqlite (module docstring, part 1); the store's path.
    DELAY: the target's ALBUMS_DELAY instead of the pool's 10 ms."""
    store = where / "history.sqlite"
    env = {**os.environ, **POOL_SETTINGS, "REPEATS": str(runs // 2), "SWARMBENCH_RESULTS": str(where),
           "AB_ID": "gate-pool", "SWARMBENCH_HISTORY": str(store),
           "LOCUST_USER_CLASSES": "AlbumsFastHttpUser"}  # fmt: skip
    if delay:
        env["A"] = f"ALBUMS_DELAY={delay}"
    what = f"A/A, {runs} runs of 20 s, {env['A']}"
    print(f"recording: python -m swarmbench ab --record ({what}) -> {store}", flush=True)
    subprocess.run([sys.executable, "-m", "swarmbench", "ab", "--record"], env=env, cwd=ROOT, check=True)
    return store


def pool(store: Path):
    """The series of the configuration with the most runs (every name and figure), and it."""
    with open_store(store) as opened:
        config = opened.configurations()[0]
        series = opened.series(config.fingerprint, config.host, config.testbed, config.branch)
    return series, config


def candidate(series, i: int, p95: float = 1.0) -> list[NameStats]:
    """Run I of SERIES as the gate's candidate: its stored figures, every name's p95 times P95."""
    out = []
    for (type_, name), per in series.values.items():
        figures = {m: per[m][i] for m in ("rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")}
        figures["p95_ms"] *= p95
        out.append(
            NameStats(type_, name, int(per["requests"][i]), int(per["failures"][i]), exact=True, **figures)
        )
    return out


def gate_calls(
    series, past: list[int], cand: list[NameStats] | list[list[NameStats]], looks: int = 1
) -> tuple[bool, bool]:
    """(any row regressed: exit 3; Aggregated p95 regressed) of CAND (one run, or several: repeats)
    against the PAST runs of SERIES, as gate_outcome judges them (its _differences, each row at its
    share of 5 % / LOOKS: BASELINE=history with BUDGET gates each look at 5 % over its K looks)."""
    names = sorted({n for _, n in series.values} - {AGGREGATED}) + [AGGREGATED]
    runs = cand if cand and isinstance(cand[0], list) else [cand]
    by_name = {(s.type, s.name): [r[i] for r in runs] for i, s in enumerate(runs[0])}
    alphas = history_stats.row_alphas(names, COMPARE_METRICS, 0.05 / looks)
    found, *_ = _differences(series, sorted(past), None, by_name, names, COMPARE_METRICS, alphas, MIN_EFFECT)
    rows = report_rows(found, MIN_EFFECT)
    agg = next(r for r in rows if (r.name, r.metric) == (AGGREGATED, "p95"))
    return any(r.verdict == REGRESSED for r in rows), agg.verdict == REGRESSED


def trials(
    series, past: int, count: int, seed: int = 1, repeats: int = 1, looks: int = 1
) -> dict[str, float]:
    """Shares of COUNT draws (PAST runs + REPEATS candidate runs from SERIES): the whole gate failed
    by the unchanged candidate and by the p95 x SHIFT one; Aggregated p95 called on each. LOOKS:
    the gate at 5 % / LOOKS, as a look of BASELINE=history with BUDGET (K = LOOKS) is."""
    rng = np.random.default_rng(seed)
    n = len(series.runs)
    hits = dict.fromkeys(("gate_same", "gate_shift", "p95_same", "p95_shift"), 0)
    for _ in range(count):
        order = rng.permutation(n)
        chosen, cs = [int(i) for i in order[:past]], [int(i) for i in order[past : past + repeats]]
        gate, p95 = gate_calls(series, chosen, [candidate(series, c) for c in cs], looks)
        hits["gate_same"] += gate
        hits["p95_same"] += p95
        gate, p95 = gate_calls(series, chosen, [candidate(series, c, SHIFT) for c in cs], looks)
        hits["gate_shift"] += gate
        hits["p95_shift"] += p95
    return {k: v / count for k, v in hits.items()}


def synthetic(noise: float, count: int, past: int = BASELINE_RUNS, names: int = 10) -> tuple[float, float]:
    """(whole gate failed by a p95 x SHIFT candidate, by an unchanged one) over COUNT synthetic
    histories: NAMES names + Aggregated, every figure log-normal with relative SD NOISE."""
    rng = np.random.default_rng(2)
    rows = [*(f"n{k}" for k in range(names)), AGGREGATED]
    metrics = ("throughput", "p50", "p90", "p95", "p99")
    alphas = history_stats.row_alphas(rows, COMPARE_METRICS, 0.05)
    shifted = same = 0
    for _ in range(count):
        x = np.exp(noise * rng.standard_normal((past + 1, len(rows), len(metrics))))
        called = {False: False, True: False}
        for j, name in enumerate(rows):
            for k, metric in enumerate(metrics):
                level = history_stats.level(x[:past, j, k])
                for moved in (False, True):
                    value = x[past, j, k] * (SHIFT if moved and metric == "p95" else 1.0)
                    d = history_stats.log_difference(level, [value], alphas[(name, metric)])
                    called[moved] |= verdict(metric, d, MIN_EFFECT) == REGRESSED
        shifted += called[True]
        same += called[False]
    return shifted / count, same / count


def with_repeats(series, count: int, k: int, looks: int) -> None:
    """Print the gate's shares with K candidate runs at 5 %/LOOKS (a look of BASELINE=history BUDGET)."""
    past_k = min(BASELINE_RUNS, len(series.runs) - k)
    found = trials(series, past_k, count, repeats=k, looks=looks)
    print(
        f"  {count} draws of {past_k} past runs + {k} candidate runs at 5 %/{looks} "
        f"(a look of BASELINE=history BUDGET with K={looks}): unchanged fails in {found['gate_same']:.1%}, "
        f"a 10 % p95 shift in {found['gate_shift']:.1%}; Aggregated p95 alone: "
        f"{found['p95_same']:.1%} / {found['p95_shift']:.1%}"
    )


def end_to_end(store: Path, series, factor: float) -> str:
    """The last run through gate_outcome (the store, compare --history's code), every name's p95
    times FACTOR: its exit code and Aggregated p95 verdict, and whether the shortcut (gate_calls on
    the same runs) says the same."""
    from swarmbench.history import read_run

    last = series.runs[-1]
    folder = next((p for p in store.parent.rglob(last.run_id) if (p / "run.json").is_file()), None)
    if folder is None:
        return "(the run folder is not beside the store: skipped)"
    run = read_run(folder, branch=last.branch)
    stats = tuple(dataclasses.replace(s, p95_ms=s.p95_ms * factor) if s.p95_ms else s for s in run.stats)
    with open_store(store) as opened:
        outcome, _ = gate_outcome(opened, [dataclasses.replace(run, stats=stats)], branch=last.branch)
    if outcome is None:
        return "(too few runs)"
    code = 3 if outcome.count(REGRESSED) else 0
    (row,) = [r for r in outcome.rows if (r.name, r.metric) == (AGGREGATED, "p95")]
    n = len(series.runs)
    short = gate_calls(
        series, list(range(max(0, n - 1 - BASELINE_RUNS), n - 1)), candidate(series, n - 1, factor)
    )
    agrees = (
        "the shortcut agrees" if short == (code == 3, row.verdict == REGRESSED) else "THE SHORTCUT DIFFERS"
    )
    return f"exit {code}, Aggregated p95 {row.verdict} ({agrees})"


def noise_of(series) -> str:
    """Aggregated's run-to-run noise per figure: the gate's (robust SD on the log scale) / plain."""
    agg = series.values[("", AGGREGATED)]
    cells = []
    for metric, column in (("throughput", "rps"), ("p50", "p50_ms"), ("p95", "p95_ms"), ("p99", "p99_ms")):
        values = np.asarray(agg[column], dtype=float)
        level = history_stats.level(values)
        robust = f"{level.spread:.2%}" if level else "-"
        cells.append(f"{metric} {robust} / {float(np.std(values, ddof=1) / np.mean(values)):.2%}")
    return ", ".join(cells)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, help="a folder of histories recorded before (DIR/<delay>/)")
    parser.add_argument("--runs", type=int, default=16, help="runs to record per delay (even; default 16)")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--keep", type=Path, help="record into this folder (kept) instead of a temp one")
    parser.add_argument(
        "--delay", default=",".join(DELAYS), help="ALBUMS_DELAYs, comma-separated (default 100ms,10ms)"
    )
    parser.add_argument("--synthetic", type=int, default=1000, help="synthetic histories per noise (0: skip)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="candidate runs per draw besides the single run: the gate with BUDGET at this many runs",
    )
    parser.add_argument(
        "--looks", type=int, default=10, help="with --repeats: the K looks its 5 %% is split over"
    )
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-gate-"))
    for delay in [d.strip() for d in args.delay.split(",") if d.strip()]:
        if args.pool:
            store = args.pool / delay / "history.sqlite"
            store = store if store.exists() else args.pool / "history.sqlite"
        else:
            (root / delay).mkdir(parents=True, exist_ok=True)
            store = record(root / delay, args.runs, delay)
        series, config = pool(store)
        p95 = np.asarray(series.values[("", AGGREGATED)]["p95_ms"], dtype=float)
        past = min(BASELINE_RUNS, len(series.runs) - 1)
        head = f"{len(series.runs)} runs of {config.host} on {config.testbed}, {len(series.values)} names"
        print(f"\nALBUMS_DELAY={delay}: {head} (with Aggregated); p95 mean {float(np.mean(p95)):.2f} ms")
        print(f"  run-to-run noise, Aggregated (the gate's robust log SD / plain SD): {noise_of(series)}")
        print(f"  p95 of each run (ms): {' '.join(f'{v:.2f}' for v in p95)}")
        found = trials(series, past, args.trials)
        print(
            f"  {args.trials} draws of {past} past runs + 1 candidate: the whole gate fails an unchanged run "
            f"in {found['gate_same']:.1%} (goal <= 5 %), a 10 % p95 shift in {found['gate_shift']:.1%} "
            f"(goal >= 90 %); Aggregated p95 alone: {found['p95_same']:.1%} / {found['p95_shift']:.1%}"
        )
        if args.repeats > 1:
            with_repeats(series, args.trials, args.repeats, args.looks)
        same, moved = end_to_end(store, series, 1.0), end_to_end(store, series, SHIFT)
        print(
            f"  through gate_outcome, the last run against the rest: unchanged {same}; p95 x {SHIFT} {moved}"
        )
    if args.synthetic:
        print(
            f"\nsynthetic histories ({BASELINE_RUNS} past runs, 10 names + Aggregated, log-normal noise in "
            "every figure): the whole gate fails a 10 % p95 shift / an unchanged run"
        )
        for noise in NOISES:
            shift, same = synthetic(noise, args.synthetic)
            print(f"  noise {noise:.1%}: {shift:6.1%} / {same:4.1%}")


if __name__ == "__main__":
    main()
