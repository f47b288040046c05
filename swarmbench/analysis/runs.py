"""Run folders found and read into `Run`s: run.json's settings (core's RunManifest) plus Locust's CSVs
as frames.

run.json for the analysis: core's RunManifest, with warnings that name the file.

Find run folders and read each into a `Run`: run.json's settings plus Locust's CSVs as frames.

A run folder is any folder holding a `*_stats.csv` (the harness writes `locust_stats.csv`; a plain
`locust --csv DIR/NAME` run works too). Missing pieces that leave the rest usable (no run.json, no
history, a cut-off last history line) are warnings; unreadable pieces are AnalysisErrors."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import RunLatency, read_latency
from swarmbench.analysis.locust_csv import (
    AnalysisError,
    read_exceptions,
    read_failures,
    read_history,
    read_stats,
    warn,
)
from swarmbench.core.manifest import RunManifest

# --- run.json, with warnings that name the file ---------------------------------------------------


def read_manifest(path: Path) -> RunManifest:
    """Parse and type-check run.json; AnalysisError (naming the file) when it is malformed."""
    return RunManifest.read(path, warn=lambda problem: warn(path, problem))


def manifest_from_dict(data: dict[str, Any], path: Path | str = "run.json") -> RunManifest:
    return RunManifest.from_json(data, path, warn=lambda problem: warn(path, problem))


# --- finding run folders and reading each ---------------------------------------------------------

STATS_SUFFIX = "_stats.csv"


@dataclass
class Run:
    """One headless run. `meta` is empty (all None) when the folder has no run.json."""

    folder: Path
    prefix: str
    meta: RunManifest
    stats: pd.DataFrame
    history: pd.DataFrame | None = None
    failures: pd.DataFrame | None = None
    exceptions: pd.DataFrame | None = None
    has_manifest: bool = True
    warnings: list[str] = field(default_factory=list)
    path_id: str | None = None  # set by load_runs when another folder has the same run id
    latency: RunLatency = field(default_factory=RunLatency)  # the HDR histograms (exact.py), if any
    derived: dict = field(
        default_factory=dict, repr=False
    )  # computed once per run (timeseries' grids, series)

    @property
    def run_id(self) -> str:
        """The run's id; its folder path (relative) when two loaded folders share the id."""
        return self.path_id or self.meta.run_id or self.folder.name

    @property
    def user_class(self) -> str | None:
        return "+".join(self.meta.user_classes) or None

    @property
    def workers(self) -> int | None:
        return self.meta.workers

    @property
    def users(self) -> int | None:
        return self.meta.users

    @property
    def aggregated(self) -> pd.Series:
        """The stats CSV's Aggregated row (read_stats guarantees there is one)."""
        rows = self.stats[self.stats[C.ENDPOINT_NAME] == C.AGGREGATED]
        return rows.iloc[-1]

    @property
    def label(self) -> str:
        """Short name for charts: class, generators and repeat, e.g. "AlbumsHttpUser ×2 #1"."""
        parts = [self.user_class or self.run_id]
        if self.workers is not None:
            parts.append(f"×{self.workers}")
        if self.meta.repeat is not None:
            parts.append(f"#{self.meta.repeat}")
        return " ".join(parts)

    def csv_path(self, suffix: str) -> Path:
        return self.folder / f"{self.prefix}{suffix}"


def discover_runs(paths: Iterable[str | Path]) -> list[Path]:
    """Run folders under each path (recursively), in a stable order; errors name the bad path."""
    found: dict[Path, None] = {}
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise AnalysisError(path, "no such file or directory")
        if path.is_file():
            if path.name.endswith(STATS_SUFFIX) or path.name == C.MANIFEST:
                found[path.parent] = None
                continue
            raise AnalysisError(path, f"not a run folder, a *{STATS_SUFFIX} or a {C.MANIFEST}")
        here = sorted({p.parent for p in path.rglob(f"*{STATS_SUFFIX}") if not _hidden(p, path)})
        if not here:
            raise AnalysisError(path, f"no Locust run found (no *{STATS_SUFFIX} in it or below)")
        found.update(dict.fromkeys(here))
    return list(found)


def _hidden(p: Path, root: Path) -> bool:
    # Skips .git, and the CLI's own half-built .report-tmp-* folders.
    return any(part.startswith(".") for part in p.relative_to(root).parts)


def _prefix(folder: Path) -> str:
    stats = sorted(p.name for p in folder.glob(f"*{STATS_SUFFIX}"))
    if C.STATS_CSV in stats or not stats:
        return C.CSV_PREFIX
    if len(stats) > 1:
        raise AnalysisError(folder, f"several *{STATS_SUFFIX} files ({', '.join(stats)}); which run is it?")
    return stats[0][: -len(STATS_SUFFIX)]


def load_run(folder: str | Path, history: bool = True, say_no_history: bool = True) -> Run:
    """Read one run folder. `history=False` skips the (possibly large) history and windows files;
    SAY_NO_HISTORY False: a missing history is left to the caller to say (load_runs says it once)."""
    folder = Path(folder)
    prefix = _prefix(folder)
    run = Run(
        folder=folder, prefix=prefix, meta=RunManifest(), stats=read_stats(folder / f"{prefix}{STATS_SUFFIX}")
    )
    manifest = folder / C.MANIFEST
    if manifest.exists():
        run.meta = read_manifest(manifest)
    else:
        run.has_manifest = False
    if history and (say_no_history or run.csv_path("_stats_history.csv").exists()):
        run.history = _optional(run, "_stats_history.csv", read_history, "no history: no charts over time")
    run.latency = read_latency(folder, windows=history)
    run.failures = _optional(run, "_failures.csv", read_failures, "failure details unavailable")
    run.exceptions = _optional(run, "_exceptions.csv", read_exceptions, "exception details unavailable")
    if not run.has_manifest:
        _warn_unknowns(run)
    _check_workers(run)
    return run


def _optional(run: Run, suffix: str, reader, consequence: str) -> pd.DataFrame | None:
    path = run.csv_path(suffix)
    if not path.exists():
        run.warnings.append(warn(path, f"missing; {consequence}"))
        return None
    return reader(path)


def _warn_unknowns(run: Run) -> None:
    """No run.json: say exactly what is unknown; take the user count from the history, and say so."""
    peak = int(run.history[C.USERS].max()) if run.history is not None and len(run.history) else 0
    unknown = "user class, worker count, mode, host, wait time, Locust version"
    note = ""
    if peak > 0:
        run.meta = RunManifest(run_id=run.folder.name, users=peak)
        note = f"; users = {peak} taken from the history's peak User Count"
    else:
        unknown += ", users"
    run.warnings.append(
        warn(
            run.folder / C.MANIFEST,
            f"missing; unknown: {unknown}{note}; this run is left out of scaling fits",
        )
    )


def _check_workers(run: Run) -> None:
    meta = run.meta
    if meta.mode in ("distributed", "processes"):
        expected, connected = meta.workers_expected, meta.workers_connected
        if not connected:
            run.warnings.append(warn(run.folder / C.MANIFEST, f"mode {meta.mode} but no worker connected"))
        elif expected and connected < expected:
            run.warnings.append(
                warn(
                    run.folder / C.MANIFEST,
                    f"only {connected} of {expected} workers connected; using {connected}",
                )
            )


def load_runs(paths: Iterable[str | Path], history: bool = True) -> list[Run]:
    """Every run under `paths`, ordered by start time (then run id)."""
    runs = [load_run(folder, history=history, say_no_history=False) for folder in discover_runs(paths)]
    _tell_apart(runs)
    runs.sort(key=lambda r: (r.meta.started_at or "", r.run_id))
    if history:
        _say_no_history(runs)
    return runs


def has_series(run: Run) -> bool:
    """The run has per-second numbers: its exact windows, or Locust's history (what a comparison
    between runs bootstraps over, and what the charts over time draw)."""
    return (run.folder / C.LATENCY_WINDOWS_CSV).is_file() or run.csv_path("_stats_history.csv").is_file()


def _say_no_history(runs: list[Run]) -> None:
    """One warning for every run without a history file (a folder copied without it, a plain
    `locust --csv` run): what is left out, and for which runs."""
    bare = [r for r in runs if not run_has_history(r) and not has_series(r)]
    windows_only = [r for r in runs if not run_has_history(r) and has_series(r)]
    if bare:
        ids = ", ".join(r.run_id for r in bare)
        note = warn(
            bare[0].folder.parent if len(bare) > 1 else bare[0].folder,
            f"{len(bare)} run(s) have neither {C.LATENCY_WINDOWS_CSV} nor {C.HISTORY_CSV}, no per-second "
            f"numbers: their charts over time and the comparisons between runs are left out ({ids})",
        )
        for r in bare:
            r.warnings.append(note)
    for r in windows_only:
        r.warnings.append(warn(r.csv_path("_stats_history.csv"), "missing; no users over time"))


def run_has_history(run: Run) -> bool:
    return run.csv_path("_stats_history.csv").exists()


def _tell_apart(runs: list[Run]) -> None:
    """Runs that share a run id (two sweeps copied under one folder: ids like r1-w1-... repeat) are
    named by their folder path below the folders' common parent instead, so every table, chart and
    fit keys them apart. Paths are distinct: discover_runs lists each folder once. One warning."""
    by_id: dict[str, list[Run]] = {}
    for run in runs:
        by_id.setdefault(run.run_id, []).append(run)
    shared = [same for same in by_id.values() if len(same) > 1]
    where: Path | None = None
    for same in shared:
        folders = [r.folder.resolve() for r in same]
        common = Path(os.path.commonpath(folders))
        where = where or common
        for run, folder in zip(same, folders, strict=True):
            rel = folder.relative_to(common).as_posix()
            run.path_id = folder.as_posix() if rel == "." else rel
    if where:
        example = " and ".join(str(r.path_id) for r in shared[0])
        warn(
            where,
            f"{len(shared)} run id(s) appear in more than one folder (two sweeps under one path?); "
            f"those runs are named by their paths, e.g. {example}",
        )
