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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmbench.core.errors import InputError, read_text
from swarmbench.core.schema import Record, choice, count
from swarmbench.core.sections import (
    Bottleneck,
    CheckOutcome,
    ClassPacing,
    Event,
    ExactLatency,
    GeneratorCpu,
    GeneratorLag,
    HostCpu,
    LoadShape,
    Nodes,
    OpenModel,
    SweepMembership,
    TargetCounters,
    Totals,
    WorkersPoint,
)
from swarmbench.core.status import COMPLETE, LOCAL, MODES, STARTED_FROM, STATUSES

SCHEMA_VERSION = 2
"""Bumped when a field changes meaning or shape; readers warn on a newer one and read what they know.
Version 2: every section is a typed record (sections.py) and `workers_timeline` holds
{"t_s", "connected"} objects instead of [t_s, connected] pairs; `upgrade_v1` reads version 1."""

__all__ = ["MODES", "SCHEMA_VERSION", "STARTED_FROM", "STATUSES", "RunManifest", "upgrade_v1"]


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
    wait_time: str | None = None  # the --wait-time option (core/wait.py)
    stop_timeout: float | None = None
    reset_stats: bool | None = None  # --reset-stats: stats and histograms start after the ramp-up
    mode: str | None = choice(MODES)
    workers_expected: int | None = count()
    workers_connected: int | None = count()
    locust_version: str | None = None
    worker_cpu: GeneratorCpu | None = None
    target: TargetCounters | None = None  # the bundled target's counters; None for any other host
    git_commit: str | None = None
    exit_code: int | None = None
    totals: Totals | None = None
    sweep: SweepMembership | None = None
    albums_mix: str | None = None  # the albums scenario's request mix (--albums-mix)
    load_shape: LoadShape | None = None  # e.g. the step load
    host_cpu: HostCpu | None = None
    request_headers: list[str] | None = None  # names only, never values
    checks: list[CheckOutcome] | None = None  # the thresholds' outcomes
    checks_passed: bool | None = None
    bottleneck: Bottleneck | None = None  # what limited the run (core/verdict.py)
    open_model: OpenModel | None = None  # --arrival-rate runs
    engine: str | None = None  # "swarm" for `make swarm`; absent for compose and local runs
    nodes: Nodes | None = None  # swarm: where each part ran
    pacing: dict[str, ClassPacing] | None = None  # per user class: the waits its users took
    status: str | None = choice(STATUSES)  # None: a harness older than the field
    started_from: str | None = choice(STARTED_FROM)
    events: list[Event] | None = None
    workers_timeline: list[WorkersPoint] | None = None
    latency: ExactLatency | None = None  # exact (HDR) latency files; absent before they existed
    # each load generator's event-loop lag over time and the verdict on it (core/lag.py, plugin/looplag.py)
    generator_lag: GeneratorLag | None = None
    locustfile_sha256: str | None = None  # core/filehash.py: the load's code, for comparisons

    OMIT_WHEN_NONE = frozenset(
        {"sweep", "albums_mix", "load_shape", "host_cpu", "request_headers", "checks", "checks_passed"}
        | {"open_model"}  # --arrival-rate runs only (plugin/arrival.py)
        | {"latency"}  # runs from before the exact latency files have none
        | {"generator_lag"}  # runs whose generators measured it (plugin/looplag.py)
        | {"locustfile_sha256"}  # runs from before it was recorded
        | {"engine", "nodes"}  # set by the swarm runner only (runner/swarm.py)
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
