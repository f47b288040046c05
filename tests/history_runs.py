"""Runs for the history's tests: the real run folders they start from, and synthetic histories made
from one of them with a known noise and a known step.

A synthetic run is a real run folder's record (tests/fixtures/exact/repeat-1, read by the store's
own reader) whose figures are multiplied by chosen factors, one minute after the run before it: the
store, the trend and the gate see real names, histograms and load, and the answer is known.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from harness import FIXTURES, ROOT

from swarmbench.core.folder import utc_iso
from swarmbench.history import RunData, open_store, read_run
from swarmbench.history.record import HDR_CSV_COLUMNS

REPEAT_1 = FIXTURES / "exact" / "repeat-1"
"""A real run folder with the plugin's HDR files: exact figures, one histogram per name."""

EXAMPLES = ROOT / "results" / "examples"
"""The committed example sweep: recorded with today's harness (exact: HDR files)."""

OLD_RUNS = (FIXTURES / "examples-2026-11-21", FIXTURES / "analysis" / "sweep")
"""Real folders of an older harness, without HDR files: the history keeps them `rounded`."""


def folders_under(*roots: Path) -> list[Path]:
    """Every run folder (a locust_stats.csv) under ROOTS, hidden folders skipped: counted here
    without the store's own discovery, so a test can hold that discovery to it."""
    found = []
    for root in roots:
        for stats in root.rglob("locust_stats.csv"):
            if not any(part.startswith(".") for part in stats.parent.relative_to(root).parts):
                found.append(stats.parent)
    return sorted(found)


def loads_of(folders: list[Path]) -> set[tuple[str, object]]:
    """The distinct (user classes, workers) of FOLDERS' run.json: the example sweep's points."""
    out = set()
    for f in folders:
        m = json.loads((f / "run.json").read_text())
        out.add((" ".join(sorted(m.get("user_classes") or [])), m.get("workers_expected")))
    return out


"""The example sweep: 12 run folders from before the HDR files (stored `rounded`)."""

SCALED = ("rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
"""The figures a synthetic run scales (counts stay: the runs have one length)."""

FIRST = datetime(2027, 1, 1, tzinfo=UTC)
"""The first synthetic run's start; run I starts I minutes later."""

Factors = Mapping[tuple[str, str, str], float]
"""(type, name, metric) -> the factor of that figure (1 where absent)."""


def base_run(branch: str = "main", testbed: str = "t") -> RunData:
    return read_run(REPEAT_1, branch=branch, testbed=testbed)


def scaled(
    base: RunData, i: int, factors: Factors, run_id: str | None = None, first: datetime = FIRST
) -> RunData:
    """Run I: BASE's figures times FACTORS, I minutes after FIRST, named RUN_ID (default rI)."""
    started = utc_iso(first + timedelta(minutes=i))
    stats = tuple(
        dataclasses.replace(s, **{m: getattr(s, m) * factors.get((s.type, s.name, m), 1.0) for m in SCALED})
        for s in base.stats
    )
    name = run_id or f"r{i}"
    return dataclasses.replace(
        base, run_key=f"{name}@{started}", run_id=name, started_at=started, stats=stats
    )


def noisy(base: RunData, rng: np.random.Generator, noise: float) -> dict[tuple[str, str, str], float]:
    """Every figure of BASE times 1 + NOISE x a standard normal draw of RNG."""
    return {(s.type, s.name, m): 1 + noise * rng.standard_normal() for s in base.stats for m in SCALED}


def history(
    count: int,
    noise: float,
    *,
    seed: int = 0,
    step: Callable[[int], Factors] | None = None,
    base: RunData | None = None,
) -> list[RunData]:
    """COUNT runs of BASE's load, each figure with relative NOISE (normal), times STEP(i)'s factors."""
    base = base or base_run()
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(count):
        factors = noisy(base, rng, noise)
        for key, f in (step(i) if step else {}).items():
            factors[key] = factors.get(key, 1.0) * f
        runs.append(scaled(base, i, factors))
    return runs


def stored(spec: str | Path, runs: list[RunData]) -> str:
    """RUNS added to the store at SPEC (created); SPEC as text."""
    with open_store(spec) as store:
        store.add_runs(runs)
    return str(spec)


def write_folder(run: RunData, into: Path) -> Path:
    """RUN as a run folder under INTO: REPEAT_1's files with RUN's run id, start, testbed, branch and
    exact percentiles in them (its throughput stays REPEAT_1's). What `swarmbench compare --history`
    reads as a candidate: a folder, as a real run leaves one."""
    folder = into / run.run_id
    shutil.copytree(REPEAT_1, folder)
    manifest = json.loads((folder / "run.json").read_text())
    started = run.started_at.replace("Z", "+00:00")
    manifest.update(run_id=run.run_id, started_at=started, testbed=run.testbed, git_branch=run.branch)
    (folder / "run.json").write_text(json.dumps(manifest, indent=2) + "\n")
    by_name = {(s.type, s.name): s for s in run.stats}
    table = folder / "locust_latency_hdr.csv"
    with open(table, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        s = by_name.get((row["type"], row["name"]))
        if s is not None and row["kind"] == "service":
            for metric, column in HDR_CSV_COLUMNS.items():
                row[column] = repr(getattr(s, metric))
    with open(table, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return folder


def at_mean(spec: str | Path, last: RunData, n: int = 10) -> RunData:
    """A new run (after every stored one, named `new`) whose every figure is the mean of the last N
    stored runs of LAST's configuration: the gate's unchanged candidate, inside every interval."""
    with open_store(spec) as store:
        past = store.series(last.fingerprint, last.host, last.testbed, last.branch, metrics=SCALED, last=n)
    mean = {(t, name, m): float(np.mean(v[m])) for (t, name), v in past.values.items() for m in SCALED}
    factors = {key: value / getattr(s, key[2]) for s in last.stats for key, value in mean.items()
               if key[:2] == (s.type, s.name)}  # fmt: skip
    return scaled(last, 100, factors, run_id="new")
