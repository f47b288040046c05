"""One run folder as the history keeps it: its identity, its load fingerprint and, per request name
and Aggregated, the figures a trend or a gate reads. Standard library only: run.json is read as plain
JSON and the HDR histograms are kept as the encoded text the folder holds (no hdrhistogram needed).

Exact figures come from the plugin's locust_latency_hdr.csv (service time) with each name's encoded
histogram from locust_latency_hdr.json; a folder without them (older harness, plain Locust) is
`rounded`: its percentiles are Locust's own 2-digit ones from locust_stats.csv.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from swarmbench.core import folder as col
from swarmbench.core.checks import EXACT, ROUNDED  # a run's precision: HDR histograms, or Locust's
from swarmbench.core.figures import number as _number
from swarmbench.core.folder import LATENCY_HDR_CSV, LATENCY_HDR_JSON
from swarmbench.core.manifest import this_testbed
from swarmbench.core.runfolder import RunFolder, RunFolderError, StatsRow, read_json_object, read_table

PERCENTILES = (("p50_ms", col.P50), ("p90_ms", col.P90), ("p95_ms", col.P95), ("p99_ms", col.P99))
"""Stored percentile -> Locust's stats column for a rounded run (p99.9 and max are added below)."""

METRICS = ("requests", "failures", "rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
"""Per name, what a run stores (the store's column names): counts, throughput (requests/s over the
run, Locust's), percentiles and max of the service time in ms."""

HDR_CSV_COLUMNS = {"p50_ms": "p50_ms", "p90_ms": "p90_ms", "p95_ms": "p95_ms", "p99_ms": "p99_ms",
                   "p999_ms": "p99.9_ms", "max_ms": "max_ms"}  # fmt: skip
"""Stored metric -> locust_latency_hdr.csv's column (latency/histogram.py CSV_COLUMNS; a test checks)."""

SERVICE = "service"
"""The HDR kind kept: Locust's own response time (open-model runs also record `intended`)."""

LOAD_KEYS = ("locustfile", "user_classes", "users", "wait_time", "arrival_rate", "albums_mix",
             "workers", "run_time", "load_shape")  # fmt: skip
"""What makes two runs comparable (the load fingerprint): the load's code (its sha256 where run.json
has it, else its path), user classes, users, wait time or arrival rate, request mix, load
generators, run length (warm-up weighs more in a short run) and step shape."""


FolderError = RunFolderError
"""A run folder that cannot be read: str() is `PATH: problem` (`PATH: line N: problem`), one line
(core/runfolder.py's one error for a run folder)."""


@dataclass(frozen=True)
class NameStats:
    """One request name's (or Aggregated's) figures in one run. `hdr`: its whole-run service-time
    histogram, HdrHistogram's encoding as in locust_latency_hdr.json; None for Aggregated (the sum
    of its names' histograms: HDR histograms add exactly) and for rounded runs."""

    type: str
    name: str
    requests: int
    failures: int
    rps: float | None
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None
    exact: bool
    hdr: str | None = None


@dataclass(frozen=True)
class RunData:
    """A run folder read for the store. `run_key` identifies the run (see read_run)."""

    run_key: str
    run_id: str
    started_at: str  # UTC, 2026-11-24T21:43:23.453Z: sorts as text
    git_commit: str
    branch: str
    host: str
    testbed: str
    locust_version: str
    status: str  # run.json's status; "" when it predates the field (counts as complete)
    duration_s: float | None
    precision: str  # EXACT or ROUNDED
    load: dict[str, Any] = field(default_factory=dict)
    stats: tuple[NameStats, ...] = ()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.load)


def fingerprint(load: dict[str, Any]) -> str:
    """16 hex digits of the sha256 of LOAD's canonical JSON: equal exactly when the loads are."""
    text = json.dumps(load, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_run(folder: Path, *, branch: str | None = None, testbed: str | None = None) -> RunData:
    """FOLDER's run. Its key is `run_id@started_at` (run.json's; a folder without one: the folder's
    name and the first second of locust_stats_history.csv): what names a run in the harness, and
    unchanged when the folder is copied, renamed on import or gains files later (a content hash
    would count a re-analysed folder as a new run). BRANCH: the git branch (else run.json's
    `git_branch`, else ""); TESTBED: a name for the machine (else this machine's CPU model and
    count: add runs where they were made, or name the testbed)."""
    folder = Path(folder)
    run = RunFolder.open(folder)  # core's one reader: RunFolderError naming the file and line
    manifest = run.manifest_json or {}
    run_id = _text(manifest.get("run_id")) or folder.resolve().name
    started = _started_at(folder, manifest)
    exact_rows = _exact_rows(run, manifest)
    stats = tuple(_name_stats(row, exact_rows) for row in run.stats.values())
    return RunData(
        run_key=f"{run_id}@{started}",
        run_id=run_id,
        started_at=started,
        git_commit=_text(manifest.get("git_commit")),
        branch=branch if branch is not None else _text(manifest.get("git_branch")),
        host=_text(manifest.get("host")),
        testbed=testbed or _text(manifest.get("testbed")) or this_testbed(),
        locust_version=_text(manifest.get("locust_version")),
        status=_text(manifest.get("status")),
        duration_s=_number(manifest.get("duration_s")),
        precision=EXACT if exact_rows else ROUNDED,
        load=load_of(manifest),
        stats=stats,
    )


def load_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """The load description (LOAD_KEYS) of a run.json object; {} for a folder without one."""
    if not manifest:
        return {}
    open_model = manifest.get("open_model") if isinstance(manifest.get("open_model"), dict) else {}
    workers = manifest.get("workers_expected")
    load = {
        "locustfile": manifest.get("locustfile_sha256") or manifest.get("locustfile"),
        "user_classes": sorted(str(c) for c in manifest.get("user_classes") or []),
        "users": manifest.get("users"),
        "wait_time": manifest.get("wait_time"),
        "arrival_rate": open_model.get("schedule") or open_model.get("arrival_rate"),
        "albums_mix": manifest.get("albums_mix"),
        "workers": "local" if manifest.get("mode") == "local" else workers,
        "run_time": manifest.get("run_time"),
        "load_shape": manifest.get("load_shape"),
    }
    return {key: load[key] for key in LOAD_KEYS}  # exactly the documented keys


# --- the files --------------------------------------------------------------------------------------


def _name_stats(row: StatsRow, exact_rows: dict[tuple[str, str], dict[str, Any]]) -> NameStats:
    exact = exact_rows.get(row.key)
    if exact is not None and exact["count"] != row.requests:
        exact = None  # the histograms hold part of this name's requests: Locust's figures instead
    if exact is not None:
        figures = {metric: exact[metric] for metric in HDR_CSV_COLUMNS}
    else:
        figures = {metric: getattr(row, metric) for metric, _ in PERCENTILES}
        figures["p999_ms"] = row.p999_ms
        figures["max_ms"] = row.max_ms  # the true max (100% is rounded)
    return NameStats(
        type=row.type,
        name=row.name,
        requests=row.requests,
        failures=row.failures,
        rps=row.rps,
        exact=exact is not None,
        hdr=exact["hdr"] if exact is not None else None,
        **figures,
    )


def _exact_rows(run: RunFolder, manifest: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> the HDR figures and encoded histogram of the service time; {} when the
    folder has no HDR files or run.json says its histograms miss requests (`latency.exact`)."""
    latency = manifest.get("latency")
    if isinstance(latency, dict) and latency.get("exact") is False:
        return {}
    table, encoded = run.path / LATENCY_HDR_CSV, run.path / LATENCY_HDR_JSON
    if not table.is_file() or not encoded.is_file():
        return {}
    hdrs: dict[tuple[str, str], str] = {}
    for entry in read_json_object(encoded).get("histograms") or []:
        if isinstance(entry, dict) and entry.get("kind") == SERVICE and isinstance(entry.get("hdr"), str):
            hdrs[(str(entry.get("type", "")), str(entry.get("name", "")))] = entry["hdr"]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, row in run.exact.items():
        figures: dict[str, Any] = {m: getattr(row, m) for m in HDR_CSV_COLUMNS}
        figures["count"] = row.count
        figures["hdr"] = hdrs.get(key)
        out[key] = figures
    return out


def _started_at(folder: Path, manifest: dict[str, Any]) -> str:
    """run.json's started_at, else the first timestamp of Locust's history CSV, else the stats
    file's modification time; always as `YYYY-MM-DDTHH:MM:SS.mmmZ`."""
    text = _text(manifest.get("started_at"))
    if text:
        try:
            return col.utc_iso(datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError:
            raise FolderError(folder / col.MANIFEST, f"started_at {text!r} is not a time") from None
    history = folder / col.HISTORY_CSV
    if history.is_file():
        for row in read_table(history).rows[:1]:
            seconds = _number(row.get(col.TIMESTAMP))
            if seconds:
                return col.utc_iso(datetime.fromtimestamp(seconds, UTC))
    return col.utc_iso(datetime.fromtimestamp((folder / col.STATS_CSV).stat().st_mtime, UTC))


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
