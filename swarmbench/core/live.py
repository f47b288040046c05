"""A run's live status while it goes: its clock, users, workers, requests, failures, the current rate
and the exact p50/p95/p99 so far, as the master writes it into the run folder and the host runner
reads it for its progress line.

The one record both sides share (core/folder.py LIVE_JSON). The plugin (plugin/live.py) rewrites it
every few seconds with write_json_atomic, so a reader sees a whole status or the one before, never
half of one; the runner (standard library only) polls it through the results folder the containers
bind-mount. Nothing else reads it: run.json and the run page are made from the run's own files, and
the plugin removes it once the run folder is complete (a leftover shows where a run that died got
to). Reading is lenient: a missing, partial or foreign file is None, a wrong field its default
(LiveStatus.from_json(strict=True) names the wrong field instead).
"""

from __future__ import annotations

import functools
import json
import math
import typing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from swarmbench.core.checks import EXACT
from swarmbench.core.exits import InputError
from swarmbench.core.figures import show_ms
from swarmbench.core.folder import LIVE_JSON

FORMAT_VERSION = 1
"""Of the file's layout; a reader takes any version and uses the fields it knows."""


@dataclass(frozen=True)
class LiveStatus:
    """One moment of a running test (times in seconds, latencies in ms)."""

    run_id: str = ""
    written_at: float = 0.0  # epoch seconds: a reader can tell a status that stopped coming
    state: str = ""  # Locust's runner state: spawning, running, stopping, stopped
    elapsed_s: float = 0.0  # since the test started
    run_time_s: float | None = None  # the planned length (None: until stopped)
    users: int = 0
    workers: int | None = None  # connected load generators (None: one process, no workers)
    workers_expected: int | None = None
    requests: int = 0
    failures: int = 0
    rps: float = 0.0  # Locust's current rate (its last few seconds)
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    latency: str = EXACT  # EXACT: the run's HDR histograms so far; ROUNDED: Locust's own percentiles
    format_version: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, strict: bool = False) -> LiveStatus | None:
        """DATA's status; None unless it is an object. A missing or null field keeps its default, and
        so does one of the wrong type (a progress line shows what it can), unless STRICT: then an
        InputError names the field (and a DATA that is no object)."""
        if not isinstance(data, dict):
            if strict:
                raise InputError(LIVE_JSON, f"should be an object, got {_show(data)}")
            return None
        values: dict[str, Any] = {}
        for name, kind in _field_types().items():
            value = data.get(name)
            if value is None:
                continue
            try:
                values[name] = _typed(name, value, kind)
            except InputError:
                if strict:
                    raise
        return cls(**values)

    def line(self) -> str:
        """`12/30 s · 50 users · 1/1 workers · 412.3 req/s · 0 failures · p95 12.351 ms (exact, so far)`,
        the state first when it is not `running` (spawning, stopping)."""
        clock = f"{self.elapsed_s:.0f}" + (f"/{self.run_time_s:.0f}" if self.run_time_s else "") + " s"
        parts = [clock if self.state in ("", "running") else f"{self.state} {clock}", f"{self.users} users"]
        if self.workers is not None:
            expected = f"/{self.workers_expected}" if self.workers_expected is not None else ""
            parts.append(f"{self.workers}{expected} workers")
        share = f" ({self.failures / self.requests:.2%})" if self.requests and self.failures else ""
        parts += [f"{self.rps:.1f} req/s", f"{self.failures} failures{share}"]
        p95 = "-" if self.p95_ms is None else f"{show_ms(self.p95_ms)} ms"
        parts.append(f"p95 {p95} ({self.latency}, so far)")
        return " · ".join(parts)


_DESCRIBE = {int: "an integer", float: "a finite number", str: "a string"}


@functools.cache
def _field_types() -> dict[str, type]:
    """Each field's type: int, float or str (a field that may be None: its other type), resolved once
    from the dataclass (annotations are strings under __future__)."""
    return {
        name: next(t for t in typing.get_args(hint) or (hint,) if t is not type(None))
        for name, hint in typing.get_type_hints(LiveStatus).items()
    }


def _typed(name: str, value: Any, kind: type) -> Any:
    """VALUE (not None) as the field NAME of type KIND holds it: a float field takes any finite number
    (as a float), an int field an integer, a str field a string, and no field a bool; InputError
    naming the field otherwise."""
    if kind in _DESCRIBE and not isinstance(value, bool):
        if kind is float and isinstance(value, int | float) and math.isfinite(value):
            return float(value)
        if kind is not float and isinstance(value, kind):
            return value
    raise InputError(LIVE_JSON, f'"{name}" should be {_DESCRIBE.get(kind, kind)}, got {_show(value)}')


def _show(value: Any) -> str:
    return json.dumps(value)[:40]


def read_live(path: Path) -> LiveStatus | None:
    """The status at PATH; None when there is none yet, or it cannot be read (not there, being
    replaced, not JSON, not ours)."""
    try:
        with open(path, encoding="utf-8") as f:
            return LiveStatus.from_json(json.load(f))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
