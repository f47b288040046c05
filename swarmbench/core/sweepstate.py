"""sweep.json: a sweep's settings and every point's status -- one reader, one writer.

The sweep runner writes it after every point (atomically) and reads it to resume; the analysis reads
it so that a point that failed or was interrupted (its partial folder moved aside) shows as a
missing row with its reason instead of a silent gap.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from swarmbench.core.exits import InputError
from swarmbench.core.folder import SWEEP_JSON, utc_iso, write_json_atomic

SCHEMA_VERSION = 1

POINT_STATUSES = ("pending", "done", "failed", "interrupted")
SWEEP_STATES = ("running", "complete", "incomplete", "interrupted")

_RESUMED = ("status", "reason", "attempts", "exit_code", "started_at", "ended_at", "duration_s", "verdict")
"""A point's recorded outcome: what a resumed sweep takes over from sweep.json."""


@dataclass
class SweepPoint:
    """One run of the sweep: its plan (id .. mix) and its outcome (status .. verdict)."""

    id: str
    repeat: int
    workers: int
    user_class: str
    users: int
    store: str | None = None
    mix: str | None = None
    status: str = "pending"  # one of POINT_STATUSES
    reason: str | None = None
    attempts: int = 0
    exit_code: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    verdict: str | None = None

    @property
    def label(self) -> str:
        extra = "".join(f" {v}" for v in (self.store, self.mix) if v)
        return f"w{self.workers} {self.user_class}{extra} rep {self.repeat}"

    def take_outcome(self, recorded: dict[str, Any]) -> None:
        """Copy a recorded outcome (from sweep.json) onto this planned point."""
        for k in _RESUMED:
            if k in recorded:
                setattr(self, k, recorded[k])


@dataclass
class SweepState:
    """sweep.json's content. `points` are dicts when read back (the analysis needs no more),
    SweepPoint objects when the runner writes."""

    sweep_id: str
    settings: dict[str, Any]
    points: list[dict[str, Any]] = field(default_factory=list)
    state: str | None = None  # one of SWEEP_STATES
    updated_at: str | None = None
    runner: str | None = None  # compose | local
    git_commit: str | None = None
    schema_version: int = SCHEMA_VERSION
    sequential: dict[str, Any] | None = None  # make ab with BUDGET: the design and its looks (ab.json only)
    path: Path | None = field(default=None, compare=False)  # where it was read from

    @property
    def missing(self) -> list[dict[str, Any]]:
        """Points without a finished run (failed, interrupted or not run yet)."""
        return [p for p in self.points if p.get("status") != "done"]

    def counts(self) -> dict[str, int]:
        return {
            st: sum(p.get("status") == st for p in self.points)
            for st in ("done", "failed", "interrupted", "pending")
        }

    def to_json(self) -> dict[str, Any]:
        """sweep.json's object: every field but `path`, the derived counts, the points last."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("path", "points")}
        if out["sequential"] is None:  # a sweep's or a fixed A/B's record stays as it was
            del out["sequential"]
        return {**out, "counts": self.counts(), "points": self.points}

    def write(self, sweep_dir: Path, name: str = SWEEP_JSON) -> None:
        """Into SWEEP_DIR/NAME (`make ab` keeps the same record as ab.json), atomically."""
        self.updated_at = utc_iso(datetime.now(UTC), "seconds")
        write_json_atomic(sweep_dir / name, self.to_json())

    @classmethod
    def from_points(cls, sweep_id: str, settings: dict, points: list[SweepPoint], **kw: Any) -> SweepState:
        return cls(sweep_id=sweep_id, settings=settings, points=[asdict(p) for p in points], **kw)

    @classmethod
    def read(cls, path: Path) -> SweepState:
        """Read sweep.json; InputError naming the file when it is unreadable or malformed."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise TypeError(f"expected a JSON object, got {type(data).__name__}")
            points = data["points"]
            if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
                raise TypeError('"points" should be a list of objects')
            known = {f.name for f in fields(cls)} - {"path", "points", "settings", "sweep_id"}
            return cls(
                sweep_id=str(data["sweep_id"]),
                settings=dict(data["settings"]),
                points=points,
                path=path,
                **{k: data[k] for k in known if k in data},
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(path, f"unreadable {path.name} ({e})") from None


def take_recorded(
    path: Path, identity: dict[str, Any], points: list[SweepPoint], run_json: Callable[[SweepPoint], Path]
) -> list[str]:
    """Resume from the record at PATH (sweep.json, or `make ab`'s ab.json): each planned point takes
    its recorded outcome, and one recorded done whose RUN_JSON(point) is gone is pending again.
    Returns the settings that differ from IDENTITY (then nothing is taken); InputError when PATH is
    unreadable."""
    state = SweepState.read(path)
    keys = [*identity, *(k for k in state.settings if k not in identity)]  # a key on one side differs too
    diff = [k for k in keys if state.settings.get(k) != identity.get(k)]
    if diff:
        return diff
    by_id = {p.get("id"): p for p in state.points}
    for p in points:
        p.take_outcome(by_id.get(p.id, {}))
        if p.status == "done" and not run_json(p).is_file():
            p.status, p.reason = "pending", "its run folder is gone"
    return []


def find_sweeps(paths: list[str | Path], warn) -> list[SweepState]:
    """sweep.json in each PATH (or, for a run folder, its parent); WARN(where, problem) for an
    unreadable one (the rest of the report still goes on)."""
    found: dict[Path, None] = {}
    for given in paths:
        path = Path(given)
        for candidate in (path / SWEEP_JSON, path.parent / SWEEP_JSON):
            if candidate.is_file():
                found[candidate.resolve()] = None
                break
    out = []
    for f in found:
        try:
            out.append(SweepState.read(f))
        except InputError as e:
            warn(f, f"{e.problem}; its missing points cannot be listed")
    return out
