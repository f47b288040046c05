"""run.json's schema: every field and section typed once (core/manifest.py).

A manifest with every field of every section set is written and read back equal; every run.json
checked into the repository (results/examples, tests/fixtures: real runs, schema versions 1 and 2)
still loads; a malformed value deep in a section is an error naming its key path.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import fields
from pathlib import Path

import pytest
from harness import ROOT

from swarmbench.core.exits import InputError
from swarmbench.core.manifest import (
    CHOICES,
    SCHEMA_VERSION,
    Event,
    Node,
    Nodes,
    Record,
    RunManifest,
    WorkersPoint,
)

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

CHECKED_IN = sorted([*ROOT.glob("results/examples/**/run.json"), *ROOT.glob("tests/fixtures/**/run.json")])


def _value(hint: typing.Any, meta: typing.Mapping, depth: int) -> typing.Any:
    """A non-default value of type HINT (a record: every one of its fields set, recursively)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return _value(next(a for a in args if a is not type(None)), meta, depth)
    if meta.get(CHOICES):
        return meta[CHOICES][-1]
    if isinstance(hint, type) and issubclass(hint, Record):
        return full(hint, depth + 1)
    if origin is list:
        return [_value(args[0], {}, depth), _value(args[0], {}, depth)]
    if origin is tuple:
        return (_value(args[0], {}, depth),)
    if origin is dict:
        return {"k1": _value(args[1], {}, depth)}
    return {int: 7 + depth, float: 2.5 + depth, str: f"s{depth}", bool: True}[hint]


def full(cls: type[Record], depth: int = 0) -> Record:
    hints = typing.get_type_hints(cls)
    values = {f.name: _value(hints[f.name], f.metadata, depth) for f in fields(cls) if f.name != "extra"}
    return cls(**values)


def test_every_field_of_every_section_round_trips():
    m = full(RunManifest)
    m.schema_version = SCHEMA_VERSION
    m.extra = {"a_later_key": {"kept": [1, 2]}}
    data = json.loads(json.dumps(m.to_json()))
    assert RunManifest.from_json(data) == m
    # nothing left untyped: every section came back as its record, not a dict
    assert isinstance(RunManifest.from_json(data).open_model.latency_ms.service.p99, float)
    assert data["a_later_key"] == {"kept": [1, 2]}


def test_swarm_fields_are_read_not_lost_in_extra():
    """The bug a hand-kept type table had: `engine` and `nodes` were dataclass fields but missing
    from the table, so a swarm run read back with engine None."""
    nodes = Nodes(master=Node(id="n1", role="manager"), workers=[Node(id="n2", replicas=3)])
    m = RunManifest.from_json({"engine": "swarm", "nodes": nodes.to_json()})
    assert m.engine == "swarm" and m.nodes == nodes and not m.extra


@pytest.mark.parametrize("path", CHECKED_IN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_checked_in_run_json_loads_and_rewrites_unchanged(path: Path):
    m = RunManifest.read(path)
    assert m.run_id and m.totals is not None and m.totals.requests
    again = RunManifest.from_json(json.loads(json.dumps(m.to_json())), path)
    assert again == m


def test_version_1_timeline_pairs_are_upgraded():
    m = RunManifest.from_json({"schema_version": 1, "workers_timeline": [[0.0, 3], [4.5, 2]]})
    assert m.workers_timeline == [WorkersPoint(t_s=0.0, connected=3), WorkersPoint(t_s=4.5, connected=2)]
    assert m.to_json()["schema_version"] == SCHEMA_VERSION
    assert m.to_json()["workers_timeline"][1] == {"t_s": 4.5, "connected": 2}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"worker_cpu": {"per_worker": [{"mean_percent": "high"}]}},
            '"worker_cpu.per_worker\\[0\\].mean_percent"',
        ),
        (
            {"open_model": {"latency_ms": {"service": {"count": -1}}}},
            '"open_model.latency_ms.service.count" should not',
        ),
        ({"events": [{"t_s": "soon"}]}, '"events\\[0\\].t_s" should be a number'),
        ({"status": "exploded"}, '"status" should be one of'),
        ({"pacing": {"User": {"users": True}}}, '"pacing.User.users" should be an integer'),
        ({"totals": [1, 2]}, '"totals" should be an object'),
        ({"checks": {"p95": 1}}, '"checks" should be a list'),
    ],
)
def test_a_malformed_section_names_its_key_path(data, message):
    with pytest.raises(InputError, match=f"^run.json: {message}"):
        RunManifest.from_json(data)


def test_unknown_keys_inside_a_section_are_kept():
    data = {"events": [{"kind": "run_end", "detail": "complete", "note": "by hand"}]}
    m = RunManifest.from_json(data)
    assert m.events == [Event(kind="run_end", detail="complete", extra={"note": "by hand"})]
    assert m.to_json()["events"][0]["note"] == "by hand"
