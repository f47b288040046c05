"""A run's live status while it goes: its clock, users, workers, requests, failures, the current rate
and the exact p50/p95/p99 so far, as the master writes it into the run folder and the host runner
reads it for its progress line.

The one record both sides share (core/folder.py LIVE_JSON). The plugin (plugin/live.py) rewrites it
every few seconds with write_json_atomic, so a reader sees a whole status or the one before, never
half of one; the runner (standard library only) polls it through the results folder the containers
bind-mount. Nothing else reads it: run.json and the run page are made from the run's own files, and
the plugin removes it once the run folder is complete (a leftover shows where a run that died got
to). Reading is lenient: a missing, partial or foreign file is None, a wrong field its default.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from swarmbench.core.checks import EXACT

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
    def from_json(cls, data: Any) -> LiveStatus | None:
        """DATA's status; None unless it is an object. A field of the wrong type keeps its default."""
        if not isinstance(data, dict):
            return None
        defaults = cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            value, default = data.get(f.name), getattr(defaults, f.name)
            values[f.name] = value if _fits(value, default, f.type) else default
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
        p95 = "-" if self.p95_ms is None else f"{self.p95_ms:g} ms"
        parts.append(f"p95 {p95} ({self.latency}, so far)")
        return " · ".join(parts)


def _fits(value: Any, default: Any, annotation: Any) -> bool:
    """VALUE may replace DEFAULT: the same kind (a number for a number, not a bool), or None where
    the field may be None."""
    if value is None:
        return "None" in str(annotation)
    if isinstance(value, bool):
        return False
    kind = annotation if isinstance(annotation, str) else str(annotation)
    if kind.startswith("str"):
        return isinstance(value, str)
    if kind.startswith("int"):
        return isinstance(value, int)
    return isinstance(value, int | float) and math.isfinite(value)


def read_live(path: Path) -> LiveStatus | None:
    """The status at PATH; None when there is none yet, or it cannot be read (not there, being
    replaced, not JSON, not ours)."""
    try:
        with open(path, encoding="utf-8") as f:
            return LiveStatus.from_json(json.load(f))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
