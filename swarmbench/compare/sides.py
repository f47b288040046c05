"""The two sides of a comparison: run folders read into per-window histograms, put on shared bucket
grids, and every setting that differs between them named.

Reading a side of a comparison: a run folder or a folder of run folders, into per-window
histograms (sparse: bucket value in µs -> count) per request name.

Exact runs: locust_latency_windows.csv (every request, HDR buckets of 3 significant digits).
Older runs without it: Locust's per-second history rows, each turned into a coarse histogram with
mass at its recorded percentiles (50 % of the window's requests at its p50, 16 % at its p66, ...):
labelled "rounded" (Locust rounds to 2 significant digits, and its history percentiles are over a
rolling ~10 s window, so they blur).

From the runs read (above) to the statistics' dense matrices (stats.py): one bucket grid per
request name shared by both sides, so a replicate's merged histogram is a weighted sum of rows.

Fair comparisons: every setting that differs between the sides is named; only differences in the
load itself are refused (they change what is measured), unless --allow-different. Differences in
the system under test (host, target settings, git commit, store) are what a user compares: named,
never refused."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from swarmbench.compare.stats import Grid, Run, Side
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import InputError, read_text
from swarmbench.core.folder import (
    HISTORY_CSV,
    LATENCY_WINDOWS_CSV,
    MANIFEST,
    NAME,
    STATS_CSV,
    TIMESTAMP,
    TOTAL_FAILURE_COUNT,
    TOTAL_REQUEST_COUNT,
)
from swarmbench.core.manifest import RunManifest
from swarmbench.core.runfolder import read_table
from swarmbench.latency.histogram import decode, new_histogram
from swarmbench.latency.windows import WINDOW_COLUMNS, WINDOW_S

# --- reading a side -------------------------------------------------------------------------------

SERVICE = "service"
"""The latency kind compared: Locust's own response time (every run has it)."""

HISTORY_PERCENTILES = (50, 66, 75, 80, 90, 95, 98, 99, 99.9, 99.99, 100)
"""Locust's history percentile columns ("50%", ...): the rounded fallback puts each gap's share of a
window's requests at the gap's upper percentile value."""


class CompareWarning(UserWarning):
    """Something a reader should know (a run left out, rounded numbers); the command goes on."""


@dataclass
class Series:
    """One request name of one run: per window, bucket values (µs) and their counts."""

    codes: dict[int, np.ndarray] = field(default_factory=dict)
    counts: dict[int, np.ndarray] = field(default_factory=dict)
    requests: dict[int, float] = field(default_factory=dict)
    failures: dict[int, float] = field(default_factory=dict)

    def add(
        self, window: int, codes: np.ndarray, counts: np.ndarray, requests: float, failures: float
    ) -> None:
        if window in self.codes:
            codes, counts = (
                np.concatenate([self.codes[window], codes]),
                np.concatenate([self.counts[window], counts]),
            )
        self.codes[window], self.counts[window] = codes, counts
        self.requests[window] = self.requests.get(window, 0) + requests
        self.failures[window] = self.failures.get(window, 0) + failures


@dataclass
class RunData:
    """A complete run's manifest and its series (AGGREGATED included), over `windows` full windows."""

    path: Path
    manifest: RunManifest
    windows: int
    exact: bool
    series: dict[str, Series]


@cache
def bucket_values_us() -> np.ndarray:
    """Each HDR counts index's value as HdrHistogram reports a percentile (its highest equivalent
    value), for the histograms swarmbench/latency/histogram.py makes."""
    h = new_histogram()
    return np.array(
        [h.get_highest_equivalent_value(h.get_value_from_index(i)) for i in range(h.counts_len)],
        dtype=np.int64,
    )


def is_run(path: Path) -> bool:
    return (path / MANIFEST).is_file() or (path / STATS_CSV).is_file()


def run_folders(path: Path) -> list[Path]:
    """PATH itself if it is a run folder, else its run folders (dot-folders skipped); InputError
    naming PATH when it is neither."""
    if not path.is_dir():
        raise InputError(path, "not a folder")
    if is_run(path):
        return [path]
    runs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".") and is_run(p))
    if not runs:
        raise InputError(path, "not a run folder or a folder of run folders")
    return runs


def read_side(path: Path) -> list[RunData]:
    """The complete runs of a side; runs not complete are left out with a warning; InputError
    naming PATH when none is left."""
    out = []
    for folder in run_folders(path):
        manifest = RunManifest.read(folder / MANIFEST) if (folder / MANIFEST).is_file() else RunManifest()
        if manifest.partial:
            lost = manifest.master_lost
            why = f" ({lost.reason}: a record written from what survived)" if lost else ""
            warnings.warn(
                f"side {path}: {folder}: partial, left out: status {manifest.status}{why}",
                CompareWarning,
                stacklevel=2,
            )
            continue
        out.append(read_run(folder, manifest))
    if not out:
        raise InputError(path, "no complete run (this side is partial: see the warnings above)")
    return out


def full_windows(manifest: RunManifest, last: int) -> int:
    """Windows of the run's asked length: the stragglers after the run-time limit (a partial last
    window) are left out, or a run with them would seem to have a slower second."""
    length = manifest.run_time or manifest.duration_s
    return max(1, math.floor(length / WINDOW_S)) if length else last + 1


def read_run(folder: Path, manifest: RunManifest) -> RunData:
    if (folder / LATENCY_WINDOWS_CSV).is_file():
        series, exact = read_windows(folder / LATENCY_WINDOWS_CSV), True
    else:
        series = read_history(folder / HISTORY_CSV)
        exact = False
    last = max((w for s in series.values() for w in s.codes), default=0)
    windows = full_windows(manifest, last)
    for s in series.values():
        for store in (s.codes, s.counts, s.requests, s.failures):
            for w in [w for w in store if w >= windows]:
                del store[w]
    series[AGGREGATED] = aggregated(series)
    return RunData(folder, manifest, windows, exact, series)


def aggregated(series: dict[str, Series]) -> Series:
    """Every name's windows added up (histograms concatenated: a bucket listed twice adds)."""
    total = Series()
    for s in series.values():
        for w in s.codes:
            total.add(w, s.codes[w], s.counts[w], s.requests[w], s.failures[w])
    return total


def read_windows(path: Path) -> dict[str, Series]:
    """The service-time rows of a locust_latency_windows.csv, per request name (types merged, as
    the thresholds do); its Aggregated rows are derived, so left out and rebuilt."""
    read_text(path)  # InputError naming the file when it is missing, unreadable or empty
    table = read_table(path)  # core's one CSV reader: RunFolderError naming the file and line
    if table.header != WINDOW_COLUMNS:
        raise InputError(path, f"row 1: expected the columns {', '.join(WINDOW_COLUMNS)}")
    values = bucket_values_us()
    out: dict[str, Series] = {}
    for row_number, row in table.numbered():
        if row.get("kind") != SERVICE or (row.get("name") == AGGREGATED and not row.get("type")):
            continue
        try:
            window, failures = int(row["window_s"]) // WINDOW_S, int(row["failures"])
        except (TypeError, ValueError):
            raise InputError(path, f"row {row_number}: window_s and failures must be whole numbers") from None
        counts = np.ctypeslib.as_array(decode(row["hdr"], path, f"row {row_number}").counts)
        index = np.flatnonzero(counts)
        hits = counts[index].astype(np.float64)
        out.setdefault(row["name"], Series()).add(window, values[index], hits, float(hits.sum()), failures)
    return out


def read_history(path: Path) -> dict[str, Series]:
    """Locust's per-second history rows per request name, as coarse histograms (the module
    docstring); a window's requests are the growth of its cumulative count."""
    if not path.is_file():
        raise InputError(path.parent, f"no {LATENCY_WINDOWS_CSV} and no {HISTORY_CSV}")
    read_text(path)  # InputError naming the file when it is unreadable or empty
    rows = read_table(path).numbered()  # core's one CSV reader: RunFolderError naming file and line
    shares = np.diff(np.array((0, *HISTORY_PERCENTILES), dtype=float)) / 100
    out: dict[str, Series] = {}
    first: float | None = None
    previous: dict[str, tuple[float, float]] = {}
    for row_number, row in rows:
        name = row.get(NAME) or ""
        if name == AGGREGATED:
            continue
        try:
            stamp = float(row[TIMESTAMP])
            total, fails = float(row[TOTAL_REQUEST_COUNT]), float(row[TOTAL_FAILURE_COUNT])
            values = [row[f"{p:g}%"] for p in HISTORY_PERCENTILES]
        except (KeyError, TypeError, ValueError):
            raise InputError(path, f"row {row_number}: not a Locust stats history row") from None
        first = stamp if first is None else first
        before = previous.get(name, (0.0, 0.0))
        previous[name] = (total, fails)
        new, new_fails = total - before[0], fails - before[1]
        if new <= 0 or "N/A" in values:
            continue
        codes = np.array([round(float(v) * 1000) for v in values], dtype=np.int64)
        if not codes[-1]:  # Locust's rolling window was empty: no latency for this second
            continue
        out.setdefault(name, Series()).add(
            int(stamp - first) // WINDOW_S, codes, shares * new, new, new_fails
        )
    return out


# --- the shared bucket grids ----------------------------------------------------------------------


@dataclass
class Names:
    """The request names compared (AGGREGATED last), and those found on one side only."""

    common: list[str]
    baseline_only: list[str]
    candidate_only: list[str]


def names(baseline: list[RunData], candidate: list[RunData], wanted: list[str] | None) -> Names:
    """Names every run of a side has, AGGREGATED last; WANTED (--names) narrows them."""
    base = set.union(*(set(r.series) for r in baseline))
    cand = set.union(*(set(r.series) for r in candidate))
    common = sorted((base & cand) - {AGGREGATED}) + [AGGREGATED]
    if wanted:
        common = [n for n in common if n in wanted]
    return Names(common, sorted(base - cand), sorted(cand - base))


def build(baseline: list[RunData], candidate: list[RunData], chosen: list[str]) -> tuple[Grid, Side, Side]:
    """The shared grid of CHOSEN names and both sides' dense matrices on it."""
    runs = baseline + candidate
    columns: dict[str, slice] = {}
    values = []
    start = 0
    for name in chosen:
        codes = [c for r in runs if name in r.series for c in r.series[name].codes.values()]
        grid = np.unique(np.concatenate(codes)) if codes else np.zeros(1, dtype=np.int64)
        columns[name] = slice(start, start + len(grid))
        values.append(grid)
        start += len(grid)
    grid = Grid(list(chosen), columns, np.concatenate(values) / 1000)
    codes_by_name = dict(zip(chosen, values, strict=True))

    def dense(run: RunData) -> Run:
        return to_matrix(run, grid, codes_by_name)

    return grid, Side([dense(r) for r in baseline]), Side([dense(r) for r in candidate])


def to_matrix(run: RunData, grid: Grid, codes_by_name: dict[str, np.ndarray]) -> Run:
    """RUN's series as (windows x columns) counts and (windows x names) requests and failures."""
    width = grid.columns[grid.names[-1]].stop
    flat_index, flat_counts = [], []
    requests = np.zeros((run.windows, len(grid.names)))
    failures = np.zeros((run.windows, len(grid.names)))
    for i, name in enumerate(grid.names):
        series = run.series.get(name)
        if series is None:
            continue
        offset = grid.columns[name].start
        for window, codes in series.codes.items():
            cols = offset + np.searchsorted(codes_by_name[name], codes)
            flat_index.append(window * width + cols)
            flat_counts.append(series.counts[window])
            requests[window, i] = series.requests[window]
            failures[window, i] = series.failures[window]
    hist = np.zeros(run.windows * width)
    if flat_index:
        hist = np.bincount(
            np.concatenate(flat_index), weights=np.concatenate(flat_counts), minlength=run.windows * width
        )
    return Run(hist.reshape(run.windows, width), requests, failures)


# --- what differs between the sides ---------------------------------------------------------------


def _arrival(m: RunManifest) -> str | None:
    return m.open_model.arrival_rate if m.open_model else None


def _model(m: RunManifest) -> str:
    return "open" if m.open_model else "closed"


def _locustfile(m: RunManifest) -> str | None:
    return f"sha256:{m.locustfile_sha256[:12]}" if m.locustfile_sha256 else m.locustfile


Getter = Callable[[RunManifest], object]

LOAD: dict[str, Getter] = {
    "locustfile": _locustfile,
    "user classes": lambda m: "+".join(m.user_classes) or None,
    "model": _model,
    "users": lambda m: m.users,
    "wait time": lambda m: m.wait_time,
    "arrival rate": _arrival,
    "request mix": lambda m: m.albums_mix,
}
"""The load: a difference here is refused (the sides measured different things)."""

OTHER: dict[str, Getter] = {
    "workers": lambda m: m.workers,
    "host": lambda m: m.host,
    "target store": lambda m: m.store,
    "target cpus": lambda m: m.target.cpus if m.target else None,
    "git commit": lambda m: (m.git_commit or "")[:12] or None,
    "locust version": lambda m: m.locust_version,
    "run time": lambda m: m.run_time,
    "spawn rate": lambda m: m.spawn_rate,
    # Only when on: runs from before the key and runs with it off both counted the ramp-up.
    "reset stats": lambda m: "on" if m.reset_stats else None,
}
"""Named, never refused: the system under test and how the load was generated."""


@dataclass(frozen=True)
class Difference:
    setting: str
    baseline: str
    candidate: str
    load: bool  # a difference in the load itself (refused unless --allow-different)


def values(runs: list[RunData], get: Getter) -> str:
    """The side's value(s) of a setting, e.g. "8" or "8, 16" when its repeats differ."""
    found = sorted({str(get(r.manifest)) for r in runs if get(r.manifest) is not None})
    return ", ".join(found) if found else "-"


def differences(baseline: list[RunData], candidate: list[RunData]) -> list[Difference]:
    """Every setting whose values differ between the sides (unknown on both sides: not named)."""
    out = []
    for settings, load in ((LOAD, True), (OTHER, False)):
        for setting, get in settings.items():
            b, c = values(baseline, get), values(candidate, get)
            if b != c:
                out.append(Difference(setting, b, c, load))
    return out
