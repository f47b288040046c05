"""Grouping and scaling verdicts on the real fixture sweep."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swarmbench.analysis import columns as C
from swarmbench.analysis.locust_csv import AnalysisWarning
from swarmbench.analysis.runs import load_runs
from swarmbench.analysis.scaling import analyze_scaling, group_key, group_runs, scaling_json
from swarmbench.core.manifest import SweepMembership

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"


@pytest.fixture(scope="module")
def sweep():
    return load_runs([FIXTURES / "sweep"])


def test_groups_split_by_user_class_and_keep_repeats_as_points(sweep):
    groups, notes = analyze_scaling(sweep)
    assert notes == []
    by_class = {g.key.user_classes: g for g in groups}
    assert set(by_class) == {("AlbumsHttpUser",), ("AlbumsFastHttpUser",)}
    http = by_class[("AlbumsHttpUser",)]
    assert [p.workers for p in http.points] == [1, 2, 3]
    assert [len(p.rps) for p in http.points] == [2, 2, 2]
    rps_by_id = {r.run_id: float(r.aggregated[C.RPS_OUT]) for r in sweep}
    for point in http.points:
        assert point.rps == [rps_by_id[i] for i in point.run_ids]
    assert http.amdahl is not None and 0 <= http.amdahl.serial_fraction <= 1
    assert http.amdahl.ci95 is not None and http.usl is not None
    fast = by_class[("AlbumsFastHttpUser",)]
    assert fast.usl is not None and fast.usl.alpha_ci95 is None  # 3 points, 3 parameters


def test_verdict_is_plain_words_with_numbers(sweep):
    groups, _ = analyze_scaling(sweep)
    text = " ".join(groups[0].verdict())
    assert "3 workers gave" in text and "× the throughput of 1" in text
    assert "serial fraction s = " in text and "requests/s" in text


def test_scaling_json_shape(sweep):
    data = scaling_json(*analyze_scaling(sweep))
    group = data["groups"][0]
    assert {"key", "points", "amdahl", "usl", "warnings"} <= group.keys()
    assert {"serial_fraction", "ci95", "gamma", "max_speedup"} <= group["amdahl"].keys()
    assert {"alpha", "beta", "gamma", "peak_workers"} <= group["usl"].keys()
    first = group["points"][0]
    assert set(first) == {"workers", "rps", "run_ids"} and first["workers"] == 1 and len(first["rps"]) == 2


def test_one_worker_count_warns_and_does_not_fit(sweep):
    only_w2 = [r for r in sweep if r.workers == 2]
    with pytest.warns(AnalysisWarning, match="only one worker count"):
        groups, _ = analyze_scaling(only_w2)
    assert all(g.amdahl is None and g.usl is None and g.warnings for g in groups)


def test_two_worker_counts_fit_amdahl_but_not_usl(sweep):
    runs = [r for r in sweep if r.workers in (1, 2) and r.user_class == "AlbumsHttpUser"]
    with pytest.warns(AnalysisWarning, match="USL needs 3"):
        (group,), _ = analyze_scaling(runs)
    assert group.amdahl is not None and group.usl is None


def test_weak_sweep_groups_by_users_per_worker(sweep):
    # The fixture runs carry no sweep block; give two of them a weak-scaling one to test the key.
    a, b = [r for r in sweep if r.user_class == "AlbumsHttpUser"][:2]
    weak_a = dataclasses.replace(
        a, meta=dataclasses.replace(a.meta, users=10, sweep=SweepMembership(mode="weak"))
    )
    weak_b = dataclasses.replace(
        b, meta=dataclasses.replace(b.meta, users=10 * b.workers, sweep=SweepMembership(mode="weak"))
    )
    assert group_key(weak_a).users_per_worker == 10 and group_key(weak_a).users is None
    groups, _ = group_runs([weak_a, weak_b])
    assert len(groups) == 1 and "users/worker" in groups[0].key.label()


def test_runs_without_run_json_stay_out_of_scaling():
    with pytest.warns(AnalysisWarning):
        runs = load_runs([FIXTURES / "legacy"])
    groups, _ = group_runs(runs)
    assert groups == []
