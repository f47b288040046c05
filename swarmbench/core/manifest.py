"""run.json: Swarmbench's record of how a run was made (what Locust's CSVs cannot say).

`RunManifest` is the one schema: the plugin fills it and writes it with `to_json()`, the runner
and the analysis read it back with `from_json()`/`read()`. Keys this version does not know (a newer
harness, a hand-added note) are kept in `extra` and written back unchanged.

Every field is optional when reading (older harness versions, hand-made folders), but a field that
is present must have the right type: a run filed under the wrong worker count would silently bend a
scaling fit, so a malformed run.json is an InputError naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import InputError, read_text

SCHEMA_VERSION = 1
"""Bumped when a field changes meaning; readers warn on a newer one and read what they know."""

MODES = ("local", "distributed", "processes")
"""local: one process; distributed: a master + workers; processes: Locust's --processes N."""

STATUSES = ("complete", "interrupted", "degraded", "failed")
"""How the run went (plugin/health.py decides; README "Run status"): complete: ran as asked;
interrupted: stopped by a signal (Ctrl-C, SIGTERM, the stack stopped) before its end; degraded: a
load generator went missing or quit early, fewer than expected were connected for part of the run,
or the target stopped answering for part of it; failed: nothing or almost nothing was served."""

STARTED_FROM = ("headless", "ui")
"""Who started the run: a headless command line, or Start in the web UI (each Start->Stop is a run)."""

# field -> (accepted types, description for the error message). Field order = run.json's key order.
_INT = ((int,), "an integer")
_NUM = ((int, float), "a number")
_STR = ((str,), "a string")
_DICT = ((dict,), "an object")
_LIST = ((list,), "a list")
_BOOL = ((bool,), "true or false")
_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "schema_version": _INT,
    "run_id": _STR,
    "started_at": _STR,
    "ended_at": _STR,
    "duration_s": _NUM,
    "host": _STR,
    "locustfile": _STR,
    "user_classes": _LIST,
    "users": _INT,
    "spawn_rate": _NUM,
    "run_time": _NUM,
    "wait_time": _STR,
    "stop_timeout": _NUM,
    "mode": _STR,
    "workers_expected": _INT,
    "workers_connected": _INT,
    "locust_version": _STR,
    "worker_cpu": _DICT,
    "target": _DICT,
    "git_commit": _STR,
    "exit_code": _INT,
    "totals": _DICT,
    "sweep": _DICT,
    "albums_mix": _STR,
    "load_shape": _DICT,
    "host_cpu": _DICT,
    "request_headers": _LIST,
    "checks": _LIST,
    "checks_passed": _BOOL,
    "bottleneck": _DICT,
    "open_model": _DICT,
    "pacing": _DICT,
    "status": _STR,
    "started_from": _STR,
    "events": _LIST,
    "workers_timeline": _LIST,
    "generator_lag": _DICT,
}


@dataclass
class RunManifest:
    """run.json's fields; None where a run.json lacks them (or there is no run.json)."""

    schema_version: int | None = None
    run_id: str | None = None
    started_at: str | None = None  # UTC ISO-8601, test start
    ended_at: str | None = None  # the run-time limit (or the stop)
    duration_s: float | None = None
    host: str | None = None
    locustfile: str | None = None
    user_classes: tuple[str, ...] = ()
    users: int | None = None  # a step load's peak users
    spawn_rate: float | None = None
    run_time: float | None = None
    wait_time: str | None = None  # the --wait-time option (core/wait.py)
    stop_timeout: float | None = None
    mode: str | None = None  # one of MODES
    workers_expected: int | None = None
    workers_connected: int | None = None
    locust_version: str | None = None
    worker_cpu: dict[str, Any] | None = field(default=None, compare=False)
    target: dict[str, Any] | None = field(default=None, compare=False)  # the bundled target's counters
    git_commit: str | None = None
    exit_code: int | None = None
    totals: dict[str, Any] | None = field(default=None, compare=False)  # requests, failures
    sweep: dict[str, Any] | None = field(default=None, compare=False)  # id, mode, repeat, point
    albums_mix: str | None = None  # the albums scenario's request mix (--albums-mix)
    load_shape: dict[str, Any] | None = field(default=None, compare=False)  # e.g. the step load
    host_cpu: dict[str, Any] | None = field(default=None, compare=False)  # the whole machine's CPU
    request_headers: list[str] | None = None  # names only, never values
    checks: list[dict[str, Any]] | None = field(default=None, compare=False)  # thresholds' outcomes
    checks_passed: bool | None = None
    bottleneck: dict[str, Any] | None = field(default=None, compare=False)  # what limited the run
    # --arrival-rate runs: offered/achieved rate, drops, pool exhaustion, latency (core/arrival.py)
    open_model: dict[str, Any] | None = field(default=None, compare=False)
    engine: str | None = None  # "swarm" for `make swarm`; absent for compose and local runs
    nodes: dict[str, Any] | None = field(default=None, compare=False)  # swarm: where each part ran
    # {UserClass: {"users", "waits", "mean_wait_s", "wait_time_option_used", "open_loop"}}: the waits
    # the users actually took (plugin/pacing.py); the verdict's cap rests on it
    pacing: dict[str, Any] | None = field(default=None, compare=False)
    status: str | None = None  # one of STATUSES; None: a harness older than the field
    started_from: str | None = None  # one of STARTED_FROM
    # [{"at": UTC ISO, "t_s": seconds since test start, "kind": ..., "detail": ...}], in order
    events: list[dict[str, Any]] | None = field(default=None, compare=False)
    # [[t_s, connected load generators], ...]: the first sample, then only when the count changed
    workers_timeline: list[list[float]] | None = field(default=None, compare=False)
    # each load generator's event-loop lag over time and the verdict on it (core/lag.py, plugin/looplag.py)
    generator_lag: dict[str, Any] | None = field(default=None, compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)  # keys this version does not know

    # --- derived ---

    @property
    def workers(self) -> int | None:
        """Load generators: 1 for a local run (the harness records 0 workers there)."""
        if self.mode == "local":
            return 1
        return self.workers_connected or None

    @property
    def partial(self) -> bool:
        """The run did not measure what was asked for its whole length (status other than complete;
        a run.json older than `status` counts as complete)."""
        return self.status not in (None, "complete")

    @property
    def store(self) -> str | None:
        return self.target.get("store") if self.target else None

    @property
    def sweep_mode(self) -> str | None:
        return self.sweep.get("mode") if self.sweep else None

    @property
    def repeat(self) -> int | None:
        value = self.sweep.get("repeat") if self.sweep else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    # --- JSON ---

    def to_json(self) -> dict[str, Any]:
        """run.json's object: known fields in schema order (None kept, so every key is always
        there), then the unknown keys read from an older file."""
        out: dict[str, Any] = {"schema_version": self.schema_version or SCHEMA_VERSION}
        for f in fields(self):
            if f.name in ("schema_version", "extra"):
                continue
            value = getattr(self, f.name)
            if f.name == "user_classes":
                value = list(value)
            if value is None and f.name in _OMIT_WHEN_NONE:
                continue
            out[f.name] = value
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_json(
        cls, data: dict[str, Any], where: str | Path = "run.json", warn: Callable[[str], Any] | None = None
    ) -> RunManifest:
        """Type-check DATA; InputError naming WHERE on the first malformed field. WARN (if given)
        is told about a schema newer than this reader."""
        values: dict[str, Any] = {}
        for name, (types, desc) in _TYPES.items():
            value = data.get(name)
            if value is None:
                continue
            # bool is an int in Python; `"users": true` is still a malformed file.
            if (isinstance(value, bool) and types != _BOOL[0]) or not isinstance(value, types):
                raise InputError(where, f'"{name}" should be {desc}, got {json.dumps(value)[:40]}')
            values[name] = float(value) if types == _NUM[0] else value
        classes = values.get("user_classes")
        if classes is not None:
            if not all(isinstance(c, str) for c in classes):
                raise InputError(
                    where, f'"user_classes" should be a list of strings, got {json.dumps(classes)[:40]}'
                )
            values["user_classes"] = tuple(classes)
        for name, allowed in (("mode", MODES), ("status", STATUSES), ("started_from", STARTED_FROM)):
            if values.get(name) not in (None, *allowed):
                raise InputError(
                    where, f'"{name}" should be one of {", ".join(allowed)}, got "{values[name]}"'
                )
        for name in ("users", "workers_connected", "workers_expected"):
            if values.get(name, 0) < 0:
                raise InputError(where, f'"{name}" should not be negative, got {values[name]}')
        version = values.get("schema_version")
        if version is not None and version > SCHEMA_VERSION and warn is not None:
            warn(
                f"schema_version {version} is newer than this reader ({SCHEMA_VERSION}); reading known fields"
            )
        extra = {k: v for k, v in data.items() if k not in _TYPES}
        return cls(**values, extra=extra)

    @classmethod
    def read(cls, path: Path, warn: Callable[[str], Any] | None = None) -> RunManifest:
        """Parse and type-check a run.json file; InputError (naming the file) when it is malformed."""
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(path, f"invalid JSON at line {e.lineno}: {e.msg}") from None
        if not isinstance(data, dict):
            raise InputError(path, f"expected a JSON object, got {type(data).__name__}")
        return cls.from_json(data, path, warn)


_OMIT_WHEN_NONE = frozenset(
    {"sweep", "albums_mix", "load_shape", "host_cpu", "request_headers", "checks", "checks_passed"}
    | {"open_model"}  # --arrival-rate runs only (plugin/arrival.py)
    | {"engine", "nodes"}  # set by the swarm runner only (runner/swarm.py)
    | {"generator_lag"}  # runs whose generators measured it (plugin/looplag.py)
)
"""Optional sections: absent from run.json unless the run had them (a run outside a sweep has no
`sweep` key, a run without thresholds no `checks`), as before this schema existed."""
