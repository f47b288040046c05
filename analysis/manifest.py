"""run.json: the harness's record of how a run was made (what Locust's CSVs cannot say).

Every field is optional here (older harness versions, hand-made folders), but a field that is
present must have the right type: a run filed under the wrong worker count would silently bend a
scaling fit, so a malformed run.json stops the analysis instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import AnalysisError, warn

SCHEMA_VERSION = 1
MODES = ("local", "distributed", "processes")

# field -> (accepted types, description for the error message)
_INT = ((int,), "an integer")
_NUM = ((int, float), "a number")
_STR = ((str,), "a string")
_DICT = ((dict,), "an object")
_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "schema_version": _INT,
    "run_id": _STR,
    "started_at": _STR,
    "ended_at": _STR,
    "duration_s": _NUM,
    "host": _STR,
    "locustfile": _STR,
    "users": _INT,
    "spawn_rate": _NUM,
    "run_time": _NUM,
    "wait_time": _STR,
    "mode": _STR,
    "workers_expected": _INT,
    "workers_connected": _INT,
    "locust_version": _STR,
    "git_commit": _STR,
    "exit_code": _INT,
    "worker_cpu": _DICT,
    "target": _DICT,
    "totals": _DICT,
    "sweep": _DICT,
    "bottleneck": _DICT,
    "albums_mix": _STR,
    "load_shape": _DICT,
    "host_cpu": _DICT,
}


@dataclass(frozen=True)
class RunMeta:
    """run.json's fields; None where run.json lacks them (or there is no run.json)."""

    run_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    host: str | None = None
    locustfile: str | None = None
    user_classes: tuple[str, ...] = ()
    users: int | None = None
    spawn_rate: float | None = None
    run_time: float | None = None
    wait_time: str | None = None
    mode: str | None = None
    workers_expected: int | None = None
    workers_connected: int | None = None
    locust_version: str | None = None
    git_commit: str | None = None
    exit_code: int | None = None
    worker_cpu: dict[str, Any] | None = field(default=None, compare=False)
    target: dict[str, Any] | None = field(default=None, compare=False)
    totals: dict[str, Any] | None = field(default=None, compare=False)
    sweep: dict[str, Any] | None = field(default=None, compare=False)
    bottleneck: dict[str, Any] | None = field(default=None, compare=False)  # what limited the run
    albums_mix: str | None = None  # the albums scenario's request mix (--albums-mix)
    load_shape: dict[str, Any] | None = field(default=None, compare=False)  # e.g. the step load
    host_cpu: dict[str, Any] | None = field(default=None, compare=False)  # the whole machine's CPU
    schema_version: int | None = None

    @property
    def workers(self) -> int | None:
        """Load generators: 1 for a local run (the harness records 0 workers there)."""
        if self.mode == "local":
            return 1
        if self.workers_connected:
            return self.workers_connected
        return None

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


def read_manifest(path: Path) -> RunMeta:
    """Parse and type-check run.json; AnalysisError (naming the file) when it is malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnalysisError(path, "not UTF-8 text") from None
    except OSError as e:
        raise AnalysisError(path, f"cannot read ({e.strerror or e})") from None
    if not text.strip():
        raise AnalysisError(path, "empty file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise AnalysisError(path, f"invalid JSON at line {e.lineno}: {e.msg}") from None
    if not isinstance(data, dict):
        raise AnalysisError(path, f"expected a JSON object, got {type(data).__name__}")
    return manifest_from_dict(data, path)


def manifest_from_dict(data: dict[str, Any], path: Path | str = "run.json") -> RunMeta:
    values: dict[str, Any] = {}
    for name, (types, desc) in _FIELDS.items():
        value = data.get(name)
        if value is None:
            continue
        # bool is an int in Python; `"users": true` is still a malformed file.
        if isinstance(value, bool) or not isinstance(value, types):
            raise AnalysisError(path, f'"{name}" should be {desc}, got {json.dumps(value)[:40]}')
        values[name] = float(value) if types == _NUM[0] else value
    classes = data.get("user_classes")
    if classes is not None:
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise AnalysisError(
                path, f'"user_classes" should be a list of strings, got {json.dumps(classes)[:40]}'
            )
        values["user_classes"] = tuple(classes)
    if values.get("mode") not in (None, *MODES):
        raise AnalysisError(path, f'"mode" should be one of {", ".join(MODES)}, got "{values["mode"]}"')
    for name in ("users", "workers_connected", "workers_expected"):
        if values.get(name, 0) < 0:
            raise AnalysisError(path, f'"{name}" should not be negative, got {values[name]}')
    version = values.get("schema_version")
    if version is not None and version > SCHEMA_VERSION:
        warn(
            path,
            f"schema_version {version} is newer than this analysis ({SCHEMA_VERSION}); reading known fields",
        )
    return RunMeta(**values)
