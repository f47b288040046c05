"""run.json: the record of how a run was made and how it went (what Locust's CSVs cannot say): its
words, its typed sections, one reader and one writer.

The words run.json uses for how a run went: its status, who started it, and its event kinds.

Named once here (standard library, no imports): the plugin decides them (core/health.py), the
exit codes follow them (core/exits.py), the runner and the analysis read them back.

Typed JSON records: one dataclass per object of run.json, its key table derived from its fields.

A `Record` is a dataclass whose fields are the object's keys, in the order written. Its type hints
are the schema: reading checks every key that is present against its field's type (nested records,
lists and string-keyed maps included) and raises InputError naming the file and the key path
(`worker_cpu.per_worker[0].mean_percent`), because a run filed under the wrong worker count would
silently bend a scaling fit. A missing key reads as the field's default (older harness versions,
hand-made folders); a key this version does not know is kept in `extra` and written back unchanged.

There is no second list of keys to keep equal by hand: the dataclass is the one list. Standard
library only (the plugin, the runner and the analysis all read and write through it).

run.json's sections: one small typed record per object, defined once (the typed records above
read and write them).

Each class is the object under one run.json key (`RunManifest` in manifest.py lists the keys). The
plugin fills them, the runner and the analysis read them; no module outside core spells one of
these keys as a string. A field is None where the run did not measure it.

run.json: Swarmbench's record of how a run was made (what Locust's CSVs cannot say).

`RunManifest` is the one schema: the plugin fills it and writes it with `to_json()`, the runner
and the analysis read it back with `from_json()`/`read()`. Keys this version does not know (a newer
harness, a hand-added note) are kept in `extra` and written back unchanged.

Every field is optional when reading (older harness versions, hand-made folders), but a field that
is present must have the right type: a run filed under the wrong worker count would silently bend a
scaling fit, so a malformed run.json is an InputError naming the file.

The commit a run was made from, recorded in run.json and sweep.json.

The locustfile's content hash recorded in run.json: two runs with the same hash ran the same code
(a comparison refuses to compare runs of different locustfiles; swarmbench/compare/sides.py)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self

from swarmbench.core import exits
from swarmbench.core.exits import InputError, read_text

# --- the words for how a run went -----------------------------------------------------------------

COMPLETE = "complete"
"""Ran as asked."""
INTERRUPTED = "interrupted"
"""Stopped by a signal (Ctrl-C, SIGTERM, the stack stopped) before its end."""
DEGRADED = "degraded"
"""A load generator went missing or quit early, fewer than expected were connected for part of the
run, or the target stopped answering for part of it."""
FAILED = "failed"
"""Nothing or almost nothing was served."""
ABORTED = "aborted"
"""A threshold checked live (--abort-on-fail) was broken in a sealed window: stopped early, saved whole."""

STATUSES = (COMPLETE, INTERRUPTED, DEGRADED, FAILED, ABORTED)
"""run.json `status` (core/health.py decides; docs/results.md "Run status")."""

HEADLESS = "headless"
UI = "ui"
STARTED_FROM = (HEADLESS, UI)
"""Who started the run: a headless command line, or Start in the web UI (each Start->Stop is a run)."""

LOCAL = "local"
DISTRIBUTED = "distributed"
PROCESSES = "processes"
MODES = (LOCAL, DISTRIBUTED, PROCESSES)
"""local: one process; distributed: a master + workers; processes: Locust's --processes N."""

# Event kinds (run.json `events[].kind`), in the order a run meets them.
WORKER_JOINED = "worker_joined"
USERS_SPAWNED = "users_spawned"
WORKER_MISSING = "worker_missing"
WORKER_REJOINED = "worker_rejoined"
WORKER_QUIT = "worker_quit"
SIGNAL = "signal_received"
TARGET_UNREACHABLE = "target_unreachable"
TARGET_BACK = "target_answering"
STATS_RESET = "stats_reset"
CHECK_BROKEN = "check_broken"
RUN_END = "run_end"
MASTER_LOST = "master_lost"  # written by the runner (core/salvage.py): the master died first
EVENT_KINDS = (
    WORKER_JOINED,
    USERS_SPAWNED,
    WORKER_MISSING,
    WORKER_REJOINED,
    WORKER_QUIT,
    SIGNAL,
    TARGET_UNREACHABLE,
    TARGET_BACK,
    STATS_RESET,
    CHECK_BROKEN,
    RUN_END,
    MASTER_LOST,
)


def run_exit_code(run_status: str, signum: int | None, allow_degraded: bool, base: int) -> int:
    """The exit code of a run with run.json STATUS; BASE is what Locust and the thresholds decided
    (0, 1, 3, ...). SIGNUM is the signal that interrupted it, if any."""
    if run_status == INTERRUPTED and signum:
        return exits.interrupted(signum)
    if run_status == FAILED:
        return exits.RUN_FAILED
    if run_status == ABORTED:
        return exits.THRESHOLDS_BROKEN
    if run_status == DEGRADED and not allow_degraded:
        return exits.DEGRADED
    return base


# --- typed JSON records ---------------------------------------------------------------------------

CHOICES = "choices"
"""Field metadata: the strings a field may hold (run status, mode, ...)."""

MINIMUM = "minimum"
"""Field metadata: the smallest number a field may hold (counts are never negative)."""


def choice(values: tuple[str, ...], default: Any = None) -> Any:
    """A string field that must be one of VALUES when present."""
    return field(default=default, metadata={CHOICES: values})


def count(default: Any = None) -> Any:
    """An integer field that must not be negative when present."""
    return field(default=default, metadata={MINIMUM: 0})


@dataclass
class Record:
    """Base of every run.json object; subclasses are dataclasses whose fields all have defaults."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False)
    """Keys this version does not know, kept as read and written back after the known ones."""

    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()
    """Keys left out of the JSON when None (optional sections); every other key is always written."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None and f.name in self.OMIT_WHEN_NONE:
                continue
            out[f.name] = _dump(value)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str | Path = "run.json", path: str = "") -> Self:
        """DATA type-checked against the fields; InputError naming WHERE and the key PATH."""
        if not isinstance(data, dict):
            raise InputError(where, f"{_at(path)}should be an object, got {_show(data)}")
        known, plan = _plan(cls)
        values: dict[str, Any] = {}
        get = data.get
        for name, load, check in plan:
            value = get(name)
            if value is None:
                continue
            key = f"{path}.{name}" if path else name
            value = load(value, where, key)
            if check is not None:
                check(value, where, key)
            values[name] = value
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra)


Loader = Callable[[Any, "str | Path", str], Any]
"""A type check of one JSON value: (value, where, path) -> the value as read; InputError naming
WHERE and the key PATH where it does not fit."""

Plan = tuple[frozenset[str], tuple[tuple[str, Loader, Loader | None], ...]]
"""A record's fields, once: their names, and per field (name, its type's Loader, its metadata's check)."""


def _hints(cls: type) -> dict[str, Any]:
    """The fields' types, resolved once per class (annotations are strings under __future__)."""
    cached = cls.__dict__.get("_hints_cache")
    if cached is None:
        cached = typing.get_type_hints(cls)
        cls._hints_cache = cached  # type: ignore[attr-defined]
    return cached


def _plan(cls: type) -> Plan:
    """CLS's fields (but `extra`) as from_json walks them, worked out once per class: reading a
    run.json checks a few hundred values, and asking each field its type and metadata again for
    every value cost more than the checks themselves."""
    cached = cls.__dict__.get("_plan_cache")
    if cached is None:
        hints = _hints(cls)
        plan = tuple(
            (f.name, _loader(hints[f.name]), _metadata_check(f.metadata))
            for f in fields(cls)
            if f.name != "extra"
        )
        cached = (frozenset(name for name, _, _ in plan), plan)
        cls._plan_cache = cached  # type: ignore[attr-defined]
    return cached


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def _at(path: str) -> str:
    return f'"{path}" ' if path else ""


def _show(value: Any) -> str:
    return json.dumps(value)[:40]


_DESCRIBE = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _load(value: Any, hint: Any, where: str | Path, path: str) -> Any:
    """VALUE checked against the type HINT (None already handled by the caller)."""
    return _loader(hint)(value, where, path)


_LOADERS: dict[Any, Loader] = {}
"""Each type hint's Loader, made once (_make_loader)."""


def _loader(hint: Any) -> Loader:
    """HINT's Loader (made on first use, then kept: the few types of run.json's fields)."""
    loader = _LOADERS.get(hint)
    if loader is None:
        loader = _LOADERS[hint] = _make_loader(hint)
    return loader


def _make_loader(hint: Any) -> Loader:
    """The check of a value against the type HINT, HINT taken apart once: a Union, Any, a Record, a
    list, tuple or dict of a type, float, int, str or bool.

    (Long on purpose: one branch per kind of hint, each returning its closure, so that the rules a
    run.json value is held to read top to bottom in one place, as the old per-value check did.)"""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        nullable = type(None) in args  # None inside a list or map (a missing figure)
        options = [_loader(a) for a in args if a is not type(None)]
        if len(options) == 1:
            (only,) = options

            def one_of(value: Any, where: str | Path, path: str) -> Any:
                return None if value is None and nullable else only(value, where, path)

            return one_of

        def first_of(value: Any, where: str | Path, path: str) -> Any:
            if value is None and nullable:
                return None
            for option in options:  # e.g. int | str: the first that fits
                try:
                    return option(value, where, path)
                except InputError:
                    continue
            raise InputError(where, f"{_at(path)}has an unexpected type, got {_show(value)}")

        return first_of
    if hint is Any:
        return lambda value, where, path: value
    if isinstance(hint, type) and issubclass(hint, Record):
        return lambda value, where, path: hint.from_json(value, where, path)
    if origin in (list, tuple):
        item = _loader(args[0] if args else Any)
        as_tuple = origin is tuple

        def items(value: Any, where: str | Path, path: str) -> Any:
            if not isinstance(value, list):
                raise InputError(where, f"{_at(path)}should be a list, got {_show(value)}")
            loaded = [item(v, where, f"{path}[{i}]") for i, v in enumerate(value)]
            return tuple(loaded) if as_tuple else loaded

        return items
    if origin is dict:
        entry = _loader(args[1] if len(args) == 2 else Any)

        def entries(value: Any, where: str | Path, path: str) -> Any:
            if not isinstance(value, dict):
                raise InputError(where, f"{_at(path)}should be an object, got {_show(value)}")
            return {str(k): entry(v, where, f"{path}.{k}") for k, v in value.items()}

        return entries
    if hint is float:

        def a_number(value: Any, where: str | Path, path: str) -> Any:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(where, f"{_at(path)}should be a number, got {_show(value)}")
            return float(value)

        return a_number
    if hint in (int, str, bool):
        is_bool = hint is bool

        def a_scalar(value: Any, where: str | Path, path: str) -> Any:
            # bool is an int in Python; `"users": true` is still a malformed file.
            if isinstance(value, bool) != is_bool or not isinstance(value, hint):
                raise InputError(where, f"{_at(path)}should be {_DESCRIBE[hint]}, got {_show(value)}")
            return value

        return a_scalar

    def unsupported(value: Any, where: str | Path, path: str) -> Any:
        raise TypeError(f"schema: unsupported type {hint!r} at {path}")  # a programming error, not input

    return unsupported


def _metadata_check(meta: Any) -> Loader | None:
    """The check of a field's metadata (CHOICES, MINIMUM) on its value; None where it has none."""
    if meta.get(CHOICES) is None and meta.get(MINIMUM) is None:
        return None
    return lambda value, where, path: _check_metadata(meta, value, where, path)


def _check_metadata(meta: Any, value: Any, where: str | Path, path: str) -> None:
    allowed = meta.get(CHOICES)
    if allowed is not None and value not in allowed:
        raise InputError(where, f'"{path}" should be one of {", ".join(allowed)}, got "{value}"')
    low = meta.get(MINIMUM)
    if low is not None and value < low:
        raise InputError(where, f'"{path}" should not be negative, got {value}')


# --- run.json's sections --------------------------------------------------------------------------

# --- load generators and the machine ---------------------------------------------------------------


@dataclass
class CpuLimit(Record):
    """The CPUs a process may use, read from its own cgroup (plugin/generator.py): quota or cpuset, else
    the machine's cores; `source` says which."""

    cpus: float | None = None
    source: str | None = None


@dataclass
class WorkerCpu(Record):
    """One load generator's CPU, measured by the process itself (plugin/generator.py), % of one core."""

    id: str | None = None
    mean_percent: float | None = None  # CPU seconds / wall seconds over the run
    max_percent: float | None = None  # the busiest report interval (>= 1 s)
    samples: int | None = count()
    locust_reported_mean_percent: float | None = None  # Locust's own 10 s samples, for comparison
    locust_reported_max_percent: float | None = None
    cpu_limit: CpuLimit | None = None
    mean_percent_of_limit: float | None = None  # of min(1 core, cpu_limit): what it may use
    max_percent_of_limit: float | None = None


@dataclass
class GeneratorCpu(Record):
    """`worker_cpu`: every load generator's CPU; mean of their means, max over all."""

    mean_percent: float | None = None
    max_percent: float | None = None
    max_mean_percent_of_limit: float | None = None  # the busiest worker's mean, of its own limit
    per_worker: list[WorkerCpu] = field(default_factory=list)

    @property
    def busiest_mean_percent(self) -> float | None:
        """The busiest generator's mean, % of one core."""
        means = [w.mean_percent for w in self.per_worker if w.mean_percent is not None]
        return max(means) if means else None

    @property
    def busiest_of_limit(self) -> WorkerCpu | None:
        """The generator with the highest mean share of its own limit (what the verdict judges)."""
        known = [w for w in self.per_worker if w.mean_percent_of_limit is not None]
        return max(known, key=lambda w: w.mean_percent_of_limit or 0.0, default=None)


@dataclass
class HostCpu(Record):
    """`host_cpu`: the whole machine's CPU while the test ran (all cores, %, 1 s samples)."""

    cpus: int | None = None
    mean_percent: float | None = None
    max_percent: float | None = None
    samples: int | None = count()


@dataclass
class TargetCounters(Record):
    """`target`: what the bundled target served during the run (core/target.py scrapes /metrics)."""

    store: str | None = None  # its ALBUMS_STORE strategy
    cpus: float | None = None  # its Go scheduler's CPUs (GOMAXPROCS)
    cpu_limit: float | None = None  # its own cgroup's limit, from its /metrics
    cpu_limit_source: str | None = None
    cpu_seconds: float | None = None
    cpu_share_of_limit: float | None = None  # cpu_seconds / (duration x the smaller of cpus, cpu_limit)
    requests: dict[str, int] = field(default_factory=dict)  # by route, every status code
    album_requests: int | None = count()  # the routes the scenario drives (core/target.ALBUM_ROUTES)


@dataclass
class Totals(Record):
    """`totals`: Locust's final counts, as the master received them (= locust_stats.csv's Aggregated)."""

    requests: int | None = count()
    failures: int | None = count()


# --- what the experiment varied --------------------------------------------------------------------


@dataclass
class SweepMembership(Record):
    """`sweep`: which sweep, mode, repeat and point a run belongs to (python -m swarmbench sweep)."""

    id: str | None = None
    mode: str | None = None  # core/experiment.SWEEP_MODES
    repeat: int | None = None
    point: str | None = None


@dataclass
class LoadShape(Record):
    """`load_shape`: a step load's users START, START+STEP, ... up to MAX, SECONDS per step."""

    kind: str | None = None  # "step"
    start: int | None = None
    step: int | None = None
    seconds: float | None = None
    max: int | None = None


@dataclass
class ClassPacing(Record):
    """`pacing[user class]`: the waits the class's users actually took (plugin/pacing.py)."""

    users: int | None = count()  # the peak number of its users
    waits: int | None = count()
    mean_wait_s: float | None = None  # None: its users never called the class's wait_time
    wait_time_option_used: bool | None = None  # False: the class paced itself (its own wait_time)
    open_loop: bool | None = None  # constant_pacing/constant_throughput: a rate, not a think time


# --- outcomes --------------------------------------------------------------------------------------


@dataclass
class CheckOutcome(Record):
    """`checks[]`: one threshold (core/checks.py grammar) and what it measured."""

    expr: str | None = None
    name: str | None = None  # the request name it applies to (Aggregated: all)
    metric: str | None = None
    op: str | None = None
    limit: float | None = None
    measured: float | None = None  # None: nothing to measure (no such request name)
    passed: bool | None = None
    exact: bool | None = None  # latency metrics: True from the HDR histograms, False Locust's rounded

    OMIT_WHEN_NONE = frozenset({"exact"})  # not a latency metric


@dataclass
class Abort(Record):
    """`aborted`: the live threshold that stopped the run (--abort-on-fail), where it broke."""

    expr: str | None = None  # the threshold (core/checks.py grammar)
    name: str | None = None  # the request name it applies to (Aggregated: all)
    metric: str | None = None
    limit: float | None = None
    window_s: int | None = None  # the sealed window that broke it, seconds from the test start
    measured: float | None = None  # that window's exact merged figure (ms, a ratio, req/s)
    line: str | None = None  # as the terminal, the page and junit.xml say it


@dataclass
class PacingClassInputs(Record):
    """One user class's pacing as the verdict used it (core/bottleneck.py): `cap` is the tasks/s its
    users can start at most (None: no cap known)."""

    name: str | None = None
    users: int | None = None
    waits: int | None = None
    mean_wait_s: float | None = None
    own_wait_time: bool | None = None
    open_loop: bool | None = None
    cap: float | None = None


@dataclass
class VerdictInputs(Record):
    """The numbers a verdict rests on (core/bottleneck.py), recorded next to it: every number the
    reason quotes is one of these."""

    rps: float | None = None  # Locust's Requests/s (the plugin passes its own figure)
    run_rps: float | None = None  # totals.requests / duration_s
    avg_response_ms: float | None = None
    requests: int | None = None
    failures: int | None = None
    worker_cpu_max_mean_percent: float | None = None
    worker_cpu_max_percent_of_limit: float | None = None
    worker_cpu_limit: float | None = None
    generator_lag_p99_ms: float | None = None
    generator_lag_median_ms: float | None = None
    host_cpu_mean_percent: float | None = None
    host_cpus: float | None = None
    target_cpu_util: float | None = None
    target_cpus: float | None = None
    users: int | None = None
    wait_time: str | None = None
    pacing_measured: bool | None = None
    pacing: list[PacingClassInputs] = field(default_factory=list)
    requests_per_task: float | None = None
    offered_rate_cap: float | None = None
    think_time_s: float | None = None


@dataclass
class Bottleneck(Record):
    """`bottleneck`: what limited the run (core/bottleneck.VERDICTS), why, and from which numbers."""

    verdict: str | None = None
    reason: str | None = None
    inputs: VerdictInputs | None = None


# --- a master lost mid-run ------------------------------------------------------------------------


@dataclass
class LastLive(Record):
    """`master_lost.live`: the last live status the master wrote (core/live.py), its figures exact
    but only SO FAR (at most its interval old when the master died), not the run's end."""

    elapsed_s: float | None = None  # the test's clock when it was written
    users: int | None = count()
    workers: int | None = count()
    requests: int | None = count()
    failures: int | None = count()
    rps: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    latency: str | None = None  # exact (the HDR histograms so far) or rounded (Locust's)


@dataclass
class MasterLost(Record):
    """`master_lost`: the master died before writing the run's record, so the runner wrote it from
    what survived (core/salvage.py). Absent from every run whose master ended on its own."""

    reason: str | None = None  # "the master exited with 137 at 18 s (OOM-killed ...)"
    master_exit: int | None = None  # the master's exit code, as a shell reports it (137: SIGKILL)
    oom_killed: bool | None = None  # Docker said State.OOMKilled (compose runs; None: not asked)
    live: LastLive | None = None  # the last live status (core/live.py), exact figures SO FAR
    live_note: str | None = None
    sealed_windows: int | None = count()  # windows sealed (appended to disk) before the loss
    sealed_requests: int | None = count()  # their Aggregated service-time count: exact up to there
    sealed_failures: int | None = count()
    csv_requests: int | None = count()  # Locust's locust_stats.csv count as last flushed
    history_requests: int | None = count()  # locust_stats_history.csv's by the last sealed window's end
    difference: str | None = None  # the two counts side by side, in words
    missing: list[str] | None = None  # files a complete run has and this one does not, and why


# --- exact latency ---------------------------------------------------------------------------------


@dataclass
class ExactLatency(Record):
    """`latency`: the run recorded HDR histograms of every request (plugin/latency.py), so its
    percentiles are exact to 3 significant digits, not Locust's 2-digit buckets."""

    window_s: int | None = None  # seconds per window of locust_latency_windows.csv, from the test start
    format_version: int | None = None  # of the encoded histograms (latency/histogram.py FORMAT_VERSION)
    significant_figures: int | None = None
    files: list[str] = field(default_factory=list)  # the latency files this folder holds
    exact: bool | None = (
        None  # the histograms hold every request Locust counted (False: a generator's were lost)
    )
    requests: int | None = count()  # requests in the histograms (Aggregated, service time)


# --- the open model --------------------------------------------------------------------------------


@dataclass
class LatencyFigures(Record):
    """Exact latency of one kind (service, or from the intended start), all requests, ms."""

    count: int | None = count()
    p50: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass
class OpenLatency(Record):
    """`open_model.latency_ms`: both kinds and the coordinated-omission gap at p99."""

    service: LatencyFigures | None = None
    intended: LatencyFigures | None = None
    p99_gap: float | None = None  # intended p99 - service p99
    name: str | None = None  # the request name the figures cover (Aggregated)
    # the generator's own share: how late each iteration's first request started after its
    # intended start (woken early: after it woke), over all iterations and generators
    start_lag: LatencyFigures | None = None

    OMIT_WHEN_NONE = frozenset({"service", "intended", "p99_gap", "start_lag"})


@dataclass
class GeneratorIterations(Record):
    """`open_model.per_worker[id]`: one generator's share of the schedule."""

    scheduled: int | None = count()
    started: int | None = count()
    dropped: int | None = count()
    span: list[float] = field(default_factory=list)  # [first, last] second of the schedule covered
    start_lag: LatencyFigures | None = None  # OpenLatency.start_lag, this generator's iterations

    OMIT_WHEN_NONE = frozenset({"start_lag"})


@dataclass
class OpenCapacity(Record):
    """`open_model.capacity`: was the offered rate held, and if not, what limited it (core/bottleneck.py)."""

    capacity_reached: bool | None = None
    by: str | None = None  # generator CPU, target CPU or neither; None while held
    reason: str | None = None


@dataclass
class OpenModel(Record):
    """`open_model` (--arrival-rate runs): what was offered, what started, what was dropped. Rates
    are per second over the window the generators covered (core/arrival.summarize)."""

    arrival_rate: str | None = None  # the spec as given
    schedule: str | None = None  # the spec normalised
    pool_users: int | None = None
    window_s: float | None = None
    window_start_s: float | None = None
    offered_rate: float | None = None
    scheduled_rate: float | None = None
    achieved_rate: float | None = None
    iterations_scheduled: int | None = count()
    iterations_started: int | None = count()
    dropped_iterations: int | None = count()
    unscheduled_iterations: int | None = count()  # offered, but by no generator (one was lost)
    dropped_ratio: float | None = None
    max_dropped_per_s: int | None = count()
    pool_exhaustion_events: int | None = count()
    queued_iterations: int | None = count()  # waited for a free user (--arrival-max-wait)
    max_wait_s: float | None = None
    # is the intended-start latency still growing? p99 of the first and last third of the seconds
    intended_p99_first_third_ms: float | None = None
    intended_p99_last_third_ms: float | None = None
    latency_ms: OpenLatency | None = None
    per_worker: dict[str, GeneratorIterations] = field(default_factory=dict)
    capacity: OpenCapacity | None = None

    OMIT_WHEN_NONE = frozenset(
        {"max_wait_s", "intended_p99_first_third_ms", "intended_p99_last_third_ms", "capacity"}
    )


# --- what happened while it ran --------------------------------------------------------------------


@dataclass
class Event(Record):
    """`events[]`: one thing that happened to the run (core/health.py), in order."""

    at: str | None = None  # UTC ISO-8601
    t_s: float | None = None  # seconds since the test started
    # status.EVENT_KINDS, not enforced when reading: a newer harness may add kinds an older reader
    # should still show.
    kind: str | None = None
    detail: str | None = None


@dataclass
class WorkersPoint(Record):
    """`workers_timeline[]`: the connected load generators from T_S seconds on (the first sample,
    then each change)."""

    t_s: float | None = None
    connected: int | None = count()


@dataclass
class Node(Record):
    """A Swarm node that ran part of the stack (runner/swarm.py): id, hostname, role."""

    id: str | None = None
    hostname: str | None = None
    role: str | None = None
    replicas: int | None = count()  # workers only: how many worker replicas ran there

    OMIT_WHEN_NONE = frozenset({"hostname", "role", "replicas"})


@dataclass
class Nodes(Record):
    """`nodes` (swarm runs): where the master, the target and each worker replica ran."""

    master: Node | None = None
    target: Node | None = None
    workers: list[Node] = field(default_factory=list)

    OMIT_WHEN_NONE = frozenset({"master", "target"})


# --- the generator's self-check --------------------------------------------------------------------


@dataclass
class WorkerLag(Record):
    """One load generator's event-loop lag (plugin/generator.py): whole-run figures and, per stats
    report, [t_s, p50_ms, p99_ms, max_ms] (GeneratorLag.series_columns); a long run's rows each
    cover `reports_per_row` reports (the worst figure of those, t_s the last's: generator.LagSeries)."""

    id: str | None = None
    n: int | None = count()
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    series: list[list[float | None]] = field(default_factory=list)
    reports_per_row: int | None = count()  # None: one row per report (short runs; runs from before)

    OMIT_WHEN_NONE = frozenset({"reports_per_row"})


INFLATED = "latency inflated by the load generator"
"""The mark a flagged run carries: run.json's generator_lag.flag, the report, the printout, the verdict
(core/bottleneck.py's, named here, with the record it marks, so that a reader of run.json needs
no more than this module to say it)."""


@dataclass
class GeneratorLag(Record):
    """`generator_lag`: did the load generators keep up? Each one's event-loop lag, and the verdict
    against the bound (core/bottleneck.py): a p99 above it marks the run `flag` (INFLATED)."""

    tick_ms: float | None = None  # the probe timer's period
    series_columns: list[str] = field(default_factory=list)
    bound_ms: float | None = None
    floor_ms: float | None = None
    share_of_median: float | None = None
    median_response_ms: float | None = None
    worst_worker: str | None = None
    worst_p99_ms: float | None = None
    inflated: bool | None = None
    flag: str | None = None
    per_worker: list[WorkerLag] = field(default_factory=list)


# --- run.json -------------------------------------------------------------------------------------

SCHEMA_VERSION = 2
"""Bumped when a field changes meaning or shape; readers warn on a newer one and read what they know.
Version 2: every section is a typed record (above) and `workers_timeline` holds
{"t_s", "connected"} objects instead of [t_s, connected] pairs; `upgrade_v1` reads version 1."""


@dataclass
class RunManifest(Record):
    """run.json: its fields, in key order; None where a run.json lacks them (or there is none)."""

    schema_version: int | None = None
    run_id: str | None = None
    started_at: str | None = None  # UTC ISO-8601, test start
    ended_at: str | None = None  # the run-time limit (or the stop)
    duration_s: float | None = None
    host: str | None = None
    locustfile: str | None = None
    user_classes: tuple[str, ...] = ()
    users: int | None = count()  # a step load's peak users
    spawn_rate: float | None = None
    run_time: float | None = None
    wait_time: str | None = None  # the --wait-time option (core/loadspec.py)
    stop_timeout: float | None = None
    reset_stats: bool | None = None  # --reset-stats: stats and histograms start after the ramp-up
    mode: str | None = choice(MODES)
    workers_expected: int | None = count()
    workers_connected: int | None = count()
    locust_version: str | None = None
    worker_cpu: GeneratorCpu | None = None
    target: TargetCounters | None = None  # the bundled target's counters; None for any other host
    git_commit: str | None = None
    git_branch: str | None = None  # the branch the commit was on (a detached checkout: CI's)
    testbed: str | None = None  # the machine: `CPU model xN`, or a name (--testbed/LOCUST_TESTBED)
    exit_code: int | None = None
    totals: Totals | None = None
    sweep: SweepMembership | None = None
    albums_mix: str | None = None  # the albums scenario's request mix (--albums-mix)
    load_shape: LoadShape | None = None  # e.g. the step load
    host_cpu: HostCpu | None = None
    request_headers: list[str] | None = None  # names only, never values
    checks: list[CheckOutcome] | None = None  # the thresholds' outcomes
    checks_passed: bool | None = None
    aborted: Abort | None = None  # the live threshold that stopped the run (status aborted)
    bottleneck: Bottleneck | None = None  # what limited the run (core/bottleneck.py)
    open_model: OpenModel | None = None  # --arrival-rate runs
    engine: str | None = None  # "swarm" for `make swarm`; absent for compose and local runs
    nodes: Nodes | None = None  # swarm: where each part ran
    pacing: dict[str, ClassPacing] | None = None  # per user class: the waits its users took
    status: str | None = choice(STATUSES)  # None: a harness older than the field
    started_from: str | None = choice(STARTED_FROM)
    events: list[Event] | None = None
    workers_timeline: list[WorkersPoint] | None = None
    latency: ExactLatency | None = None  # exact (HDR) latency files; absent before they existed
    # each load generator's event-loop lag over time and the verdict on it (core/bottleneck.py,
    # plugin/generator.py)
    generator_lag: GeneratorLag | None = None
    locustfile_sha256: str | None = None  # core/manifest.py: the load's code, for comparisons
    master_lost: MasterLost | None = None  # the runner wrote this record: the master died (salvage.py)

    OMIT_WHEN_NONE = frozenset(
        {"sweep", "albums_mix", "load_shape", "host_cpu", "request_headers", "checks", "checks_passed"}
        | {"aborted"}  # runs a live threshold stopped (plugin/slo.py)
        | {"open_model"}  # --arrival-rate runs only (plugin/openmodel.py)
        | {"latency"}  # runs from before the exact latency files have none
        | {"generator_lag"}  # runs whose generators measured it (plugin/generator.py)
        | {"locustfile_sha256"}  # runs from before it was recorded
        | {"engine", "nodes"}  # set by the swarm runner only (runner/swarm.py)
        | {"master_lost"}  # set by the runner when the master died (core/salvage.py)
    )
    """Optional sections: absent from run.json unless the run had them (a run outside a sweep has
    no `sweep` key, a run without thresholds no `checks`), as before this schema existed."""

    # --- derived ---

    @property
    def workers(self) -> int | None:
        """Load generators: 1 for a local run (the harness records 0 workers there)."""
        if self.mode == LOCAL:
            return 1
        return self.workers_connected or None

    @property
    def partial(self) -> bool:
        """The run did not measure what was asked for its whole length (status other than complete;
        a run.json older than `status` counts as complete)."""
        return self.status not in (None, COMPLETE)

    # One field of an optional section, None where the section is missing.
    store = property(lambda self: self.target.store if self.target else None, doc="The target's store.")
    sweep_mode = property(lambda self: self.sweep.mode if self.sweep else None, doc="strong or weak.")
    repeat = property(lambda self: self.sweep.repeat if self.sweep else None, doc="The sweep repeat.")
    requests = property(lambda self: self.totals.requests if self.totals else None, doc="Locust's count.")
    verdict = property(
        lambda self: self.bottleneck.verdict if self.bottleneck else None, doc="The bottleneck."
    )

    def last_event(self, kind: str) -> str | None:
        """The detail of the last event of KIND (e.g. status.RUN_END: the status and why)."""
        found = [e.detail for e in self.events or [] if e.kind == kind]
        return found[-1] if found else None

    # --- JSON ---

    def to_json(self) -> dict[str, Any]:
        """run.json's object: known fields in schema order (None kept, so every key is always
        there, except the optional sections), then the unknown keys read from an older file."""
        out = super().to_json()
        out["schema_version"] = self.schema_version or SCHEMA_VERSION
        return out

    @classmethod
    def from_json(
        cls, data: Any, where: str | Path = "run.json", warn: Callable[[str], Any] | None = None
    ) -> RunManifest:
        """Type-check DATA (any schema version up to ours); InputError naming WHERE and the key on
        the first malformed field. WARN (if given) is told about a schema newer than this reader."""
        if not isinstance(data, dict):
            raise InputError(where, f"expected a JSON object, got {type(data).__name__}")
        version = data.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool):
            if version > SCHEMA_VERSION and warn is not None:
                warn(
                    f"schema_version {version} is newer than this reader ({SCHEMA_VERSION}); "
                    "reading known fields"
                )
            if version < 2:
                data = upgrade_v1(data)
        return super().from_json(data, where)

    @classmethod
    def read(cls, path: Path, warn: Callable[[str], Any] | None = None) -> RunManifest:
        """Parse and type-check a run.json file; InputError (naming the file) when it is malformed."""
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(path, f"invalid JSON at line {e.lineno}: {e.msg}") from None
        return cls.from_json(data, path, warn)


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 run.json in version 2's shape: `workers_timeline` pairs become objects (anything
    else is left for the type check to judge). Version 1's keys are otherwise version 2's."""
    timeline = data.get("workers_timeline")
    if not isinstance(timeline, list):
        return {**data, "schema_version": SCHEMA_VERSION}
    points = [
        {"t_s": p[0], "connected": p[1]} if isinstance(p, list) and len(p) == 2 else p for p in timeline
    ]
    return {**data, "schema_version": SCHEMA_VERSION, "workers_timeline": points}


# --- the commit a run was made from ---------------------------------------------------------------

BRANCH_ENV = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BRANCH_NAME")
"""Where CI names the branch of a detached checkout (GitHub Actions: a pull request's source branch
first, then the pushed ref; GitLab; Jenkins), read when git itself says HEAD."""


def git_branch(cwd: str | Path | None = None, env: dict[str, str] | None = None) -> str | None:
    """The branch checked out in CWD (`git rev-parse --abbrev-ref HEAD`), else the one CI names
    (BRANCH_ENV); None when neither says."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
        name = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        name = ""
    if name and name != "HEAD":
        return name
    values = os.environ if env is None else env
    return next((values[k] for k in BRANCH_ENV if values.get(k)), None)


def this_testbed() -> str:
    """This machine as a testbed: `CPU model xN` (N: the CPUs the OS reports)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                model = line.split(":", 1)[1]
                break
    except OSError:
        pass
    model = " ".join((model or platform.processor() or platform.machine() or "unknown cpu").split())
    return f"{model} x{os.cpu_count() or 1}"


def git_commit(cwd: str | Path | None = None) -> str | None:
    """`git rev-parse HEAD` in CWD (default: the current directory); None outside a checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


# --- the locustfile's content hash ----------------------------------------------------------------


def locustfile_sha256(spec: str | None) -> str | None:
    """SHA-256 over the contents of the locustfile(s) Locust's --locustfile names (a comma-separated
    list, each a .py file or a folder of them, in sorted order); None when one cannot be read (a
    module name, a missing file): no hash is better than a wrong one."""
    if not spec:
        return None
    digest = hashlib.sha256()
    for part in sorted(p.strip() for p in spec.split(",") if p.strip()):
        path = Path(part)
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            try:
                digest.update(file.read_bytes())
            except OSError:
                return None
            digest.update(b"\0")
    return digest.hexdigest()
