"""A duet run's two sides, read: its run folders split by side tag into A and B on one bucket grid,
and each side's CPU, with what a duet cannot see said in words.

A duet run (locustfiles/duet.py) is one Locust run whose request names carry their side:
`[A] GET /albums`, `[B] GET /albums`. Its exact latency per 1 s window (locust_latency_windows.csv,
read by latency/windows.py `Windows.read_csv`, latency's one reader) gives, per side and name, a
(windows x buckets) matrix; window i of A and window i of B are the same second of the same run.
The sides are compare/stats.py's Side and Grid, so the page's charts (compare/report.py) draw them
as any comparison's.

CPU: run.json has the machine's (host_cpu) and the load generators' (worker_cpu), shared by both
sides; each target's own CPU seconds are in the duet folder's targets.json (TARGETS_JSON), which the
runner (runner/duet.py) scrapes from each bundled target's /metrics before and after each run
(none for A_HOST/B_HOST deploys that are not the bundled target).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from swarmbench import RunFolder
from swarmbench.compare.sides import bucket_values_us, full_windows, run_folders
from swarmbench.compare.stats import Grid, Run, Side
from swarmbench.core import bottleneck
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import InputError
from swarmbench.core.folder import LATENCY_WINDOWS_CSV
from swarmbench.core.manifest import RunManifest, TargetCounters
from swarmbench.latency.windows import Windows

SIDES = ("A", "B")
TAGGED = re.compile(r"^\[(A|B)\] (.+)$")
"""A duet request name: `[A] GET /albums` (locustfiles/duet.py side_tag)."""
SERVICE = "service"
"""The latency kind compared, as compare/sides.py: Locust's own response time."""

TARGETS_JSON = "targets.json"
"""In a folder of duet runs: per run id, each side's target (its settings, host, and the CPU seconds
it used during the run, from its /metrics); written by runner/duet.py."""

CONTENTION = (
    "a duet cannot see contention: A and B share this machine and the load generator, so a change "
    "that makes one side use more CPU slows the other too (the difference is understated), and a "
    "target that saturates the machine shows as both sides slower"
)
"""Said on every duet comparison's table and page (docs/compare.md says it at length)."""


@dataclass
class DuetRun:
    """One duet run: its folder, run.json, and per side {name: {window: (bucket codes µs, counts)}}."""

    path: Path
    manifest: RunManifest
    windows: int
    series: dict[str, dict[str, dict[int, tuple[np.ndarray, np.ndarray]]]] = field(default_factory=dict)
    failures: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)


def read_duet_run(path: Path) -> DuetRun:
    """PATH's exact windows split by side; InputError naming PATH when it is not a duet run."""
    run = RunFolder.open(path)
    manifest = run.manifest or RunManifest()
    if manifest.partial:
        raise InputError(path, f"the duet run is not complete (status {manifest.status})")
    if run.windows_path is None:
        raise InputError(path, f"no {LATENCY_WINDOWS_CSV}: a duet needs the exact latency per window")
    windows = Windows.read_csv(run.windows_path)
    values = bucket_values_us()
    found = sorted(set(windows.piles) | set(windows.sealed))  # reading seals all but the newest few
    out = DuetRun(path, manifest, full_windows(manifest, found[-1] if found else 0))
    out.series = {side: {} for side in SIDES}
    out.failures = {side: {} for side in SIDES}
    for window in found:
        if window >= out.windows:  # the stragglers after the run-time limit (compare/sides.py)
            continue
        for (_, name, kind), hist in windows.decoded(window).items():
            tagged = TAGGED.match(name)
            if kind != SERVICE or not tagged:
                continue
            side, base = tagged.groups()
            counts = np.ctypeslib.as_array(hist.counts)
            index = np.flatnonzero(counts)
            codes, hits = values[index], counts[index].astype(np.float64)
            for key in (base, AGGREGATED):  # types merged per name, as compare does
                before = out.series[side].setdefault(key, {}).get(window)
                if before is not None:
                    codes_all, hits_all = (
                        np.concatenate([before[0], codes]),
                        np.concatenate([before[1], hits]),
                    )
                    out.series[side][key][window] = (codes_all, hits_all)
                else:
                    out.series[side][key][window] = (codes, hits)
    if not out.series["A"] or not out.series["B"]:
        raise InputError(path, "no [A] and [B] request names: not a duet run (locustfiles/duet.py)")
    return out


def read_duet(path: Path) -> list[DuetRun]:
    """PATH, a duet run folder or a folder of them (a DUET=1 make ab's duet/), read."""
    return [read_duet_run(folder) for folder in run_folders(path)]


def names(runs: list[DuetRun], wanted: list[str] | None) -> tuple[list[str], list[str]]:
    """(names both sides of every run have, AGGREGATED last; names only one side has)."""
    both = set.intersection(*(set(r.series["A"]) & set(r.series["B"]) for r in runs))
    every = set.union(*(set(r.series["A"]) | set(r.series["B"]) for r in runs))
    common = sorted(both - {AGGREGATED}) + [AGGREGATED]
    if wanted:
        common = [n for n in common if n in wanted]
    return common, sorted(every - both)


def build(runs: list[DuetRun], chosen: list[str]) -> tuple[Grid, Side, Side]:
    """The shared grid of CHOSEN names and side A's and B's (windows x columns) matrices: run i of
    each side is duet run i, its rows the same seconds."""
    columns: dict[str, slice] = {}
    grids, start = [], 0
    for name in chosen:
        codes = [c for r in runs for s in SIDES for c, _ in r.series[s].get(name, {}).values()]
        grid = np.unique(np.concatenate(codes)) if codes else np.zeros(1, dtype=np.int64)
        columns[name] = slice(start, start + len(grid))
        grids.append(grid)
        start += len(grid)
    g = Grid(list(chosen), columns, np.concatenate(grids) / 1000)

    def matrix(run: DuetRun, side: str) -> Run:
        hist = np.zeros((run.windows, start))
        requests = np.zeros((run.windows, len(chosen)))
        for i, name in enumerate(chosen):
            for window, (codes, hits) in run.series[side].get(name, {}).items():
                cols = columns[name].start + np.searchsorted(grids[i], codes)
                np.add.at(hist[window], cols, hits)
                requests[window, i] = hits.sum()
        return Run(hist, requests, np.zeros_like(requests))

    return g, Side([matrix(r, "A") for r in runs]), Side([matrix(r, "B") for r in runs])


# --- each side's CPU, and whether the machine was saturated -----------------------------------------


def read_targets(folder: Path) -> dict[str, dict[str, dict]]:
    """FOLDER's targets.json ({run id: {side: {...}}}); {} when there is none (a single run folder
    given, or hosts that are not the bundled target)."""
    path = folder / TARGETS_JSON
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(path, f"not JSON ({e})") from None
    return data if isinstance(data, dict) else {}


def target_share(entry: dict | None, duration_s: float | None) -> float | None:
    """The share of its CPUs a side's target used during the run (core/bottleneck.py's formula)."""
    if not entry or not isinstance(entry.get("target"), dict):
        return None
    counters = TargetCounters.from_json(entry["target"], TARGETS_JSON)
    return bottleneck.target_cpu_util(counters, duration_s)


def cpu_lines(runs: list[DuetRun], targets: dict[str, dict[str, dict]]) -> tuple[list[str], list[str], dict]:
    """(notes, warnings, json): per run, each side's target CPU (share of its CPUs), the load
    generators' and the machine's CPU, all from the run's own records; a warning for each run whose
    machine, generator or either target was saturated (core/bottleneck.py's limits)."""
    notes, warnings, found = [], [], {}
    for r in runs:
        m, run_id = r.manifest, r.manifest.run_id or r.path.name
        sides = targets.get(r.path.name, {})
        share = {s: target_share(sides.get(s), m.duration_s) for s in SIDES}
        host = m.host_cpu.mean_percent if m.host_cpu else None
        gen = m.worker_cpu.busiest_mean_percent if m.worker_cpu else None
        found[run_id] = {
            "target_cpu_share": share,
            "host_cpu_mean_percent": host,
            "generator_cpu_busiest_mean_percent": gen,
        }
        said = ", ".join(f"target {s} {_pct(share[s])} of its CPUs" for s in SIDES)
        notes.append(
            f"CPU ({run_id}): {said}; load generator {_pct(gen, 1)} of a core; machine {_pct(host, 1)}"
        )
        busy = [
            f"target {s} at {_pct(share[s])} of its CPUs"
            for s in SIDES
            if (share[s] or 0) >= bottleneck.TARGET_CPU_BUSY
        ]
        if host is not None and host >= bottleneck.HOST_CPU_BUSY_PCT:
            busy.append(f"the machine at {_pct(host, 1)}")
        if gen is not None and gen >= bottleneck.GENERATOR_CPU_LIMIT_PCT:
            busy.append(f"the load generator at {_pct(gen, 1)} of a core")
        if busy:
            warnings.append(
                f"{run_id}: saturated ({'; '.join(busy)}): both sides were slowed by it, so the "
                "difference is understated or blurred; rerun with fewer users or more CPUs"
            )
    return notes, warnings, found


def _pct(value: float | None, scale: float = 100.0) -> str:
    """A share (SCALE 100) or a percentage (SCALE 1) as `42 %`; `?` when unknown."""
    return "?" if value is None else f"{value * scale:.0f} %"
