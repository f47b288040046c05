"""One run folder as the history keeps it: its identity, its load fingerprint and, per request name
and Aggregated, the figures a trend or a gate reads. Standard library only: run.json is read as plain
JSON and the HDR histograms are kept as the encoded text the folder holds (no hdrhistogram needed).

Exact figures come from the plugin's locust_latency_hdr.csv (service time) with each name's encoded
histogram from locust_latency_hdr.json; a folder without them (older harness, plain Locust) is
`rounded`: its percentiles are Locust's own 2-digit ones from locust_stats.csv.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from ipaddress import ip_address
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from swarmbench.core import folder as col
from swarmbench.core.checks import EXACT, ROUNDED  # a run's precision: HDR histograms, or Locust's
from swarmbench.core.figures import number as _number
from swarmbench.core.folder import LATENCY_HDR_CSV, LATENCY_HDR_JSON
from swarmbench.core.runfolder import (
    ExactRow,
    RunFolder,
    RunFolderError,
    StatsRow,
    read_json_object,
    read_table,
)

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


LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
"""Host names that mean this machine (besides the loopback addresses 127.0.0.0/8 and ::1)."""

ANY_PORT = "*"
"""The port a comparable host is stored with when the port is not part of its identity (below)."""

EPHEMERAL_PORTS = 32768
"""The lowest port the system hands out when a process asks for any free one (Linux's default
range 32768-60999; macOS and Windows start at 49152): where LOCAL=1's target port lies. Only for
hosts stored before the rule (legacy_host), which did not record which target they measured."""


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


def read_run(
    folder: Path,
    *,
    branch: str | None = None,
    testbed: str | None = None,
    load: dict[str, Any] | None = None,
) -> RunData:
    """FOLDER's run. Its key is `run_id@started_at` (run.json's): what names a run in the harness,
    unchanged when the folder is copied, renamed on import or gains files later (a hash of the whole
    folder would count a re-analysed folder as a new run). A folder whose run.json lacks either (or
    has no run.json: an older harness, plain Locust) is keyed by its content, the sha256 of
    locust_stats.csv (what Locust wrote once, at the run's end), never by its folder name: a copy
    is the same run. A folder without run.json has no recorded load: LOAD gives it (LOAD_KEYS;
    those not given are None), else it is refused (every such folder would be one configuration).
    BRANCH: the git branch (else run.json's `git_branch`, else ""); TESTBED: a name for the machine
    (else this machine's CPU model and count: add runs where they were made, or name the
    testbed). The host is its identity (host_identity)."""
    folder = Path(folder)
    run = RunFolder.open(folder)  # core's one reader: RunFolderError naming the file and line
    manifest = run.manifest_json or {}
    if not manifest and load is None:
        raise FolderError(
            folder,
            f"no {col.MANIFEST}, so its load is unknown; give it: --load KEY=VALUE ... "
            f"({', '.join(LOAD_KEYS)})",
        )
    run_id = _text(manifest.get("run_id")) or folder.resolve().name
    started = _started_at(folder, manifest)
    if _text(manifest.get("run_id")) and _text(manifest.get("started_at")):
        run_key = f"{run_id}@{started}"
    else:
        run_key = content_key(folder / col.STATS_CSV)
    exact_rows = _exact_rows(run, manifest)
    stats = tuple(_name_stats(row, exact_rows) for row in run.stats.values())
    if not stats:
        raise FolderError(folder / col.STATS_CSV, "no rows")
    return _frozen(  # every field of RunData
        RunData,
        run_key=run_key,
        run_id=run_id,
        started_at=started,
        git_commit=_text(manifest.get("git_commit")),
        branch=branch if branch is not None else _text(manifest.get("git_branch")),
        host=host_identity(_text(manifest.get("host")), bundled=_bundled(manifest)),
        testbed=testbed or _text(manifest.get("testbed")) or _this_testbed(),
        locust_version=_text(manifest.get("locust_version")),
        status=_text(manifest.get("status")),
        duration_s=_number(manifest.get("duration_s")),
        precision=EXACT if exact_rows else ROUNDED,
        load=load_of(manifest) if manifest else _given(folder, load or {}),
        stats=stats,
    )


def _this_testbed() -> str:
    """This machine's testbed name (core/manifest.py's this_testbed), imported only when a run
    needs it: run.json's types are no part of reading a run for the store."""
    from swarmbench.core.manifest import this_testbed

    return this_testbed()


def _given(folder: Path, load: dict[str, Any]) -> dict[str, Any]:
    try:
        return given_load(load)
    except ValueError as e:
        raise FolderError(folder, f"--load: {e}") from None


def content_key(stats_path: Path) -> str:
    """The key of a run that run.json does not name: `sha256:` and 32 hex digits of its
    locust_stats.csv (every count and percentile of every name: two runs never write the same)."""
    try:
        digest = hashlib.sha256(stats_path.read_bytes()).hexdigest()
    except OSError as e:
        raise FolderError(stats_path, f"cannot read ({type(e).__name__})") from None
    return f"sha256:{digest[:32]}"


def given_load(given: dict[str, Any]) -> dict[str, Any]:
    """The load of a folder without run.json from what the user gave (--load KEY=VALUE): every
    LOAD_KEYS key, None where not given, user classes sorted as load_of sorts them; ValueError
    naming a key that is not a load key."""
    unknown = sorted(set(given) - set(LOAD_KEYS))
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a load key (known: {', '.join(LOAD_KEYS)})")
    load = {key: given.get(key) for key in LOAD_KEYS}
    classes = load["user_classes"]
    if isinstance(classes, str):
        classes = [c for c in re.split(r"[\s,]+", classes) if c]
    load["user_classes"] = sorted(str(c) for c in classes or [])
    return load


def host_identity(host: str, *, bundled: bool) -> str:
    """HOST as runs are compared on it: the URL as run.json has it, except that the bundled
    target (BUNDLED: run.json's `target` has its counters) on a loopback address is
    `scheme://address:*`: LOCAL=1 starts it on a free port chosen per process, so its port says
    nothing about the system measured, and keeping it would make no two invocations comparable. Any
    other host keeps its port: a staging deploy's port is part of which service it is."""
    if not bundled:
        return host
    parts = _loopback(host)
    return f"{parts.scheme}://{parts.netloc.rsplit(':', 1)[0]}:{ANY_PORT}" if parts else host


def legacy_host(host: str) -> str:
    """A host stored before host_identity existed (the run's target not recorded) as host_identity
    would give it: a loopback URL whose port is one the system hands out (EPHEMERAL_PORTS and up:
    a LOCAL=1 run of the bundled target) loses its port; a loopback port chosen by someone (8080)
    is a service of theirs and stays."""
    parts = _loopback(host)
    if parts is None or parts.port < EPHEMERAL_PORTS:
        return host
    return host_identity(host, bundled=True)


@functools.lru_cache(maxsize=256)
def _loopback(host: str) -> Any:
    """HOST's urlsplit when it is a URL of this machine with a port, else None. Kept per host: a
    history's runs share a few hosts, and taking one apart costs as much as reading a CSV row."""
    try:
        parts = urlsplit(host)
        port, name = parts.port, parts.hostname
    except ValueError:
        return None
    if port is None or not name or parts.path not in ("", "/"):
        return None
    if name.lower() in LOOPBACK_NAMES:
        return parts
    try:
        return parts if ip_address(name).is_loopback else None
    except ValueError:
        return None


def _bundled(manifest: dict[str, Any]) -> bool:
    """Did the run measure the bundled target? run.json's `target` holds its counters only then
    (core/target.py: any other host has no such /metrics)."""
    target = manifest.get("target")
    return isinstance(target, dict) and bool(target.get("store"))


def load_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """The load description (LOAD_KEYS) of a run.json object; {} for a folder without one (whose
    load, when known, the user gives: given_load)."""
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


def _name_stats(row: StatsRow, exact_rows: dict[tuple[str, str], tuple[ExactRow, str | None]]) -> NameStats:
    exact, hdr = exact_rows.get(row.key) or (None, None)
    if exact is not None and exact.count != row.requests:
        exact = hdr = None  # the histograms hold part of this name's requests: Locust's figures instead
    figures = row if exact is None else exact  # Locust's max_ms is the true max (its 100% is rounded)
    return _frozen(  # in NameStats' field order
        NameStats,
        type=row.type,
        name=row.name,
        requests=row.requests,
        failures=row.failures,
        rps=row.rps,
        p50_ms=figures.p50_ms,
        p90_ms=figures.p90_ms,
        p95_ms=figures.p95_ms,
        p99_ms=figures.p99_ms,
        p999_ms=figures.p999_ms,
        max_ms=figures.max_ms,
        exact=exact is not None,
        hdr=hdr,
    )


Frozen = TypeVar("Frozen")


def _frozen(cls: type[Frozen], **values: Any) -> Frozen:
    """cls(**values) for a frozen dataclass, every field given, without its __init__: that sets each
    field through object.__setattr__, ~20x the cost of this, and read_run makes one NameStats per
    request name of every run a history imports (issue 31: reading no slower than before)."""
    made = object.__new__(cls)
    vars(made).update(values)
    return made


def _exact_rows(
    run: RunFolder, manifest: dict[str, Any]
) -> dict[tuple[str, str], tuple[ExactRow, str | None]]:
    """(type, name) -> the service time's HDR figures and encoded histogram (None where the JSON
    has none for it); {} when the folder has no HDR files or run.json says its histograms miss
    requests (`latency.exact`)."""
    latency = manifest.get("latency")
    if isinstance(latency, dict) and latency.get("exact") is False:
        return {}
    if not (run.path / LATENCY_HDR_CSV).is_file():
        return {}
    encoded = read_json_object(run.path / LATENCY_HDR_JSON, missing_ok=True)
    if encoded is None:
        return {}
    hdrs: dict[tuple[str, str], str] = {}
    for entry in encoded.get("histograms") or []:
        if isinstance(entry, dict) and entry.get("kind") == SERVICE and isinstance(entry.get("hdr"), str):
            hdrs[(str(entry.get("type", "")), str(entry.get("name", "")))] = entry["hdr"]
    return {key: (row, hdrs.get(key)) for key, row in run.exact.items()}


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
