"""Fair comparisons (swarmbench/compare/sides.py): every setting that differs is named; only the
load is refused. Manifests built directly: this is about which keys count, not about runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmbench.compare.sides import RunData, differences
from swarmbench.core.manifest import RunManifest

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority


def side(**settings) -> list[RunData]:
    base = {"users": 10, "wait_time": "constant 0.02", "host": "http://127.0.0.1:8080"}
    return [RunData(Path("run"), RunManifest(**{**base, **settings}), 10, True, {})]


def named(baseline: list[RunData], candidate: list[RunData]) -> dict[str, tuple[str, str, bool]]:
    return {d.setting: (d.baseline, d.candidate, d.load) for d in differences(baseline, candidate)}


def test_the_load_is_refused_the_system_under_test_is_only_named():
    found = named(side(), side(users=20, host="http://127.0.0.1:9090"))
    assert found == {
        "users": ("10", "20", True),
        "host": ("http://127.0.0.1:8080", "http://127.0.0.1:9090", False),
    }


def test_reset_stats_is_named_only_when_one_side_had_it():
    assert named(side(reset_stats=True), side())["reset stats"] == ("on", "-", False)
    # Off and "a run from before the key" both counted the ramp-up: nothing to name.
    assert named(side(reset_stats=False), side()) == {}
