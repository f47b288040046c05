"""Default output folders named by the time never collide: two sweeps, or two knees, started in the
same second get two folders (sweep-...Z and sweep-...Z-2), as two comparisons and two A/B runs do
(tests/test_history_identity.py); a name given on purpose keeps its rules (a sweep id resumes, a
run id the plugin refuses when taken). The clock is frozen; nothing is run (the runs' start is
replaced by a stand-in that records where they would go)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from harness import FIXTURES

from swarmbench.core.folder import LOGS_DIR, RESERVED_DIR
from swarmbench.runner import knee, sweep
from swarmbench.runner.points import SweepSettings

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

EXACT = FIXTURES / "exact"
"""Real run folders with exact latency."""

SECOND = datetime(2027, 3, 1, 12, 0, 0, tzinfo=UTC)
"""The one second every invocation here starts in."""


class Reached(Exception):
    """Where the runs would start."""


def test_two_default_sweeps_in_one_second_get_two_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders: list[Path] = []

    def point_runner(s, sweep_dir: Path, env):  # where run_sweep would start the points
        folders.append(sweep_dir)
        raise Reached

    monkeypatch.setattr(sweep, "point_runner", point_runner)
    settings = SweepSettings(
        f"sweep-{SECOND:%Y%m%dT%H%M%SZ}", (1,), ("AlbumsUser",), 1, "10s", 10, "strong", None
    )
    env = {"SWARMBENCH_RESULTS": str(tmp_path)}
    for _ in range(2):
        with pytest.raises(Reached):
            sweep.run_sweep(settings, env, report=False, named=False)
    assert [f.name for f in folders] == ["sweep-20270301T120000Z", "sweep-20270301T120000Z-2"]
    assert all(f.is_dir() and f.parent == tmp_path for f in folders)
    with pytest.raises(Reached):  # given by name: the same folder (a sweep id resumes)
        sweep.run_sweep(settings, env, report=False, named=True)
    assert folders[-1] == folders[0]


def test_two_default_knees_in_one_second_get_two_run_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):  # every knee starts in the same second
            return SECOND

    ids: list[str] = []

    def run_local(env: dict[str, str], shown: bool = False) -> int:  # where the knee's run would start
        ids.append(env["LOCUST_RUN_ID"])
        return 0

    monkeypatch.setattr(knee, "datetime", Frozen)
    monkeypatch.setattr(knee, "_run_local", run_local)
    env = {"SWARMBENCH_RESULTS": str(tmp_path), "LOCAL": "1"}
    (tmp_path / "knee-20270301T120000Z-2").mkdir()  # a run folder of that name: skipped too
    for _ in range(2):
        assert knee.run_knee(env) == 0
    assert ids == ["knee-20270301T120000Z", "knee-20270301T120000Z-3"]
    reserved = sorted(p.name for p in (tmp_path / LOGS_DIR / RESERVED_DIR).iterdir())
    assert reserved == ["knee-20270301T120000Z", "knee-20270301T120000Z-2", "knee-20270301T120000Z-3"]
    assert not (tmp_path / "knee-20270301T120000Z").exists()  # the plugin creates the run folder itself
    assert knee.run_knee({**env, "LOCUST_RUN_ID": "mine"}) == 0 and ids[-1] == "mine"  # a given id as it is


def test_two_default_history_exports_in_one_second_get_two_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`history export` without -o: a new results/history-export-<UTC time> each time, never the
    folder of an earlier export (whose otava.yaml a user may have edited)."""
    from swarmbench import cli
    from swarmbench.history import commands

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):  # both exports in the same second
            return SECOND

    monkeypatch.setattr(commands, "datetime", Frozen)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "h.sqlite"
    assert cli.main(["history", "add", str(EXACT / "repeat-1"), "--history", str(store)]) == 0
    for _ in range(2):
        assert cli.main(["history", "export", "--history", str(store)]) == 0
    edited = tmp_path / "results" / "history-export-20270301T120000Z" / "otava.yaml"
    assert (
        edited.is_file()
        and (edited.parent.parent / "history-export-20270301T120000Z-2" / "otava.yaml").is_file()
    )
