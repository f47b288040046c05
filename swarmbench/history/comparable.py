"""What compares: two runs are comparable when their load (record.LOAD_KEYS, as its fingerprint),
host (record.host_identity: the bundled target on loopback without its port), testbed and branch
are all equal. When a candidate has no comparable run in the history, the nearest configuration
the history holds and, field by field, what differs: what a user needs to see why the gate could
not judge (a changed locustfile, another testbed, a host typed differently). Standard library.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from swarmbench.history.record import LOAD_KEYS
from swarmbench.history.store import Configuration

IDENTITY_FIELDS = ("host", "testbed", "branch")
"""A configuration's fields besides its load keys, in the order a difference is told."""


@dataclass(frozen=True)
class Difference:
    """One field that differs: a load key (`users`) or one of IDENTITY_FIELDS, with the candidate's
    value and the configuration's."""

    field: str
    candidate: Any
    history: Any

    def text(self) -> str:
        return f"{self.field} {_shown(self.candidate)} here, {_shown(self.history)} there"


@dataclass(frozen=True)
class Nearest:
    """The configuration with the fewest differing fields (ties: the wanted branch, then the most
    runs) and those fields."""

    configuration: Configuration
    differences: tuple[Difference, ...]

    def text(self) -> str:
        c = self.configuration
        where = (
            f"{c.runs} run(s) of {c.branch or '-'} on {c.host or '-'}, testbed {c.testbed}, "
            f"load {c.fingerprint}"
        )
        if not self.differences:
            return f"nearest configuration: {where}: the same, but none is a complete run before this one"
        return f"nearest configuration: {where}; differs in {'; '.join(d.text() for d in self.differences)}"

    def to_json(self) -> dict[str, Any]:
        c = self.configuration
        return {
            "fingerprint": c.fingerprint,
            "host": c.host,
            "testbed": c.testbed,
            "branch": c.branch,
            "runs": c.runs,
            "differences": [
                {"field": d.field, "candidate": d.candidate, "history": d.history} for d in self.differences
            ],
        }


def differences(
    load: dict[str, Any], host: str, testbed: str, branch: str, config: Configuration
) -> tuple[Difference, ...]:
    """Field by field, where a run of LOAD on HOST, TESTBED and BRANCH differs from CONFIG: its
    load keys first (LOAD_KEYS' order, then any other key), then host, testbed and branch."""
    keys = [k for k in LOAD_KEYS if k in load or k in config.load]
    keys += sorted((set(load) | set(config.load)) - set(keys))
    out = [Difference(k, load.get(k), config.load.get(k)) for k in keys if load.get(k) != config.load.get(k)]
    mine = {"host": host, "testbed": testbed, "branch": branch}
    theirs = {"host": config.host, "testbed": config.testbed, "branch": config.branch}
    out += [Difference(f, mine[f], theirs[f]) for f in IDENTITY_FIELDS if mine[f] != theirs[f]]
    return tuple(out)


def nearest(
    configs: Iterable[Configuration], load: dict[str, Any], host: str, testbed: str, branch: str
) -> Nearest | None:
    """The configuration of CONFIGS nearest to a run of LOAD on HOST, TESTBED and BRANCH; None when
    there is none (an empty history)."""
    best: tuple[tuple[int, bool, int], Nearest] | None = None
    for config in configs:
        found = differences(load, host, testbed, branch, config)
        rank = (len(found), config.branch != branch, -config.runs)
        if best is None or rank < best[0]:
            best = (rank, Nearest(config, found))
    return best[1] if best else None


def _shown(value: Any) -> str:
    return (
        "(none)"
        if value is None or value == ""
        else json.dumps(value)
        if not isinstance(value, str)
        else value
    )
