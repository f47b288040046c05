"""The master lost mid-run (SIGKILL, an OOM kill): the runner writes the run's record from what
survived (core/salvage.py), exit code MASTER_LOST; the sealed windows kept on disk as they seal
(latency/windows.py journal_to) give exact counts up to the last one.

Real processes: the Go target, a Locust master and workers started by the sweep's LocalRunner
(what LOCAL=1 runs), the master SIGKILLed while its users run. The compose path (the master's
container killed, `docker inspect` for OOMKilled) is test_run_integrity_stack.py's, marked docker.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path

import pytest

from swarmbench.core import exits, folder, salvage
from swarmbench.core.answer import read_answer, summary_text
from swarmbench.core.manifest import INTERRUPTED, MASTER_LOST, RunManifest
from swarmbench.core.sweepstate import SweepPoint
from swarmbench.latency.windows import WINDOW_COLUMNS, Windows
from swarmbench.runner.points import LocalRunner, SweepSettings


def test_the_salvage_reads_the_windows_columns_the_windows_write():
    assert WINDOW_COLUMNS[: len(salvage.WINDOW_KEY_COLUMNS)] == salvage.WINDOW_KEY_COLUMNS


def test_shell_code_and_reason():
    assert salvage.shell_code(-9) == 137 and salvage.shell_code(143) == 143
    assert salvage.reason(137, 18.4) == "the master exited with 137 at 18 s"
    assert "OOM-killed" in salvage.reason(137, None, oom_killed=True)


def _journal(path: Path, blocks: list[tuple[int, int]]) -> None:
    """A sealed-windows file of (window, count) blocks: one per-name row and the Aggregated row."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(WINDOW_COLUMNS)
        for window, n in blocks:
            rest = [1.0] * (len(WINDOW_COLUMNS) - 7)
            w.writerow([window, "GET", "/a", "service", n, 0, *rest, "x"])
            w.writerow([window, "", "Aggregated", "service", n, 0, *rest, ""])


def test_a_window_sealed_twice_counts_once_as_last_sealed_and_a_cut_line_is_left_out(tmp_path):
    path = tmp_path / "sealed.csv"
    _journal(path, [(0, 10), (1, 20), (0, 12), (2, 5)])  # window 0 re-opened by a late report
    with open(path, "a") as f:
        f.write("3,,Aggregated,service,99")  # the master died mid-line
    sealed = salvage.read_sealed(path)
    assert (sealed.windows, sealed.requests, sealed.last_window_s) == (3, 12 + 20 + 5, 2)
    assert not any(line.startswith("3,") for line in sealed.lines)


def test_a_folder_with_a_record_is_left_alone(tmp_path):
    (tmp_path / folder.MANIFEST).write_text("{}")
    (tmp_path / folder.LIVE_JSON).write_text("{}")
    assert salvage.salvage(tmp_path, 137) is None
    assert (tmp_path / folder.MANIFEST).read_text() == "{}"


def test_no_run_json_is_not_called_a_harness_older_than_run_status(tmp_path):
    (tmp_path / folder.LIVE_JSON).write_text("{}")
    line = read_answer(tmp_path).status_line()
    assert "older than run status" not in line and "master died" in line


def test_windows_journal_holds_every_sealed_window_as_the_end_writes_it(tmp_path):
    """The journal (appended as windows seal) read back equals the file the run's end writes."""
    from swarmbench.latency.recorder import Recorder

    w = Windows()
    w.journal_to(tmp_path / "j.csv")
    rec = Recorder()
    for second in range(12):
        for ms in (1.0, 2.0, 30.0):
            rec.record(second, "GET", "/a", ms, False)
        w.merge(rec.take()[0])
    kept = salvage.read_sealed(tmp_path / "j.csv")
    assert kept.windows == 12 - 1 - 6  # the newest window and SEAL_AFTER behind it still open
    w.write_csv(tmp_path / "full.csv")
    full = (tmp_path / "full.csv").read_text().splitlines(keepends=True)
    assert kept.lines == full[: len(kept.lines)]
    w.seal_all()
    assert salvage.read_sealed(tmp_path / "j.csv").lines == full


def test_local_master_sigkilled_mid_run_leaves_a_true_record(albums_binary, tmp_path):
    settings = SweepSettings(
        sweep_id="mkill", workers=(2,), classes=("AlbumsHttpUser",), repeats=1, run_time="40s",
        users=10, mode="strong", wait_time="constant 0.05", local=True,
    )  # fmt: skip
    env = {**os.environ, "SWARMBENCH_TARGET_BIN": str(albums_binary)}
    runner = LocalRunner(settings, tmp_path, env)
    runner.setup()
    point = SweepPoint(id="mkill", repeat=1, workers=2, user_class="AlbumsHttpUser", users=10)
    run_dir = tmp_path / point.id
    with open(tmp_path / "point.log", "ab") as log:
        runner.start(point, runner.point_env(point), log)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and runner._master and runner._master.poll() is None:
                live = _live(run_dir)
                sealed = salvage.read_sealed(run_dir / folder.LATENCY_WINDOWS_SEALED_CSV)
                if live.get("elapsed_s", 0) >= 12 and sealed.windows >= 4:
                    break
                time.sleep(0.5)
            else:
                pytest.fail(f"the run never got 12 s in: {(tmp_path / 'point.log').read_text()[-2000:]}")
            assert runner._master is not None
            os.kill(runner._master.pid, signal.SIGKILL)  # the master only: its workers live on
            code = None
            while code is None:
                code = runner.wait(1.0)
        finally:
            runner.kill()
    assert code == exits.MASTER_LOST
    m = RunManifest.read(run_dir / folder.MANIFEST)
    assert m.status == INTERRUPTED and m.exit_code == exits.MASTER_LOST
    assert m.master_lost is not None and m.master_lost.master_exit == 137
    assert m.master_lost.reason.startswith("the master exited with 137 at ")
    assert [e.kind for e in m.events or []] == [MASTER_LOST]
    killed_at = m.events[0].t_s
    assert killed_at is not None and live["elapsed_s"] <= killed_at < live["elapsed_s"] + 6, (
        "the reason's clock is the test's when the master died, not when the runner noticed"
    )
    assert m.master_lost.live is not None and (m.master_lost.live.requests or 0) > 0
    # exact counts up to the last sealed window, and Locust's CSV count next to them
    assert m.master_lost.sealed_windows >= 4 and m.master_lost.sealed_requests > 0
    assert m.master_lost.csv_requests is not None and m.master_lost.history_requests is not None
    assert f"by then: {m.master_lost.history_requests}" in m.master_lost.difference
    assert f"{m.master_lost.csv_requests - m.master_lost.sealed_requests:+d}" in m.master_lost.difference
    rows = list(csv.DictReader((run_dir / folder.LATENCY_WINDOWS_CSV).open()))
    assert len({r["window_s"] for r in rows}) == m.master_lost.sealed_windows
    page = (run_dir / folder.REPORT_HTML).read_text()
    assert "What is missing" in page and folder.LATENCY_HDR_CSV in page and "137" in page
    text = summary_text(read_answer(run_dir), exit_code=code)
    assert "older than run status" not in text and "the master was lost" in text
    assert "so far" in text


def _live(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / folder.LIVE_JSON).read_text())
    except (OSError, ValueError):
        return {}


FIXTURE = Path(__file__).parent / "fixtures" / "examples-2026-11-21" / "r1-w4-AlbumsFastHttpUser"


def _salvaged(tmp_path: Path) -> Path:
    """A folder as a SIGKILLed master leaves it (Locust's CSVs, a live status), then salvaged."""
    import shutil

    from swarmbench.core.live import LiveStatus

    run_dir = tmp_path / "lost"
    run_dir.mkdir()
    for name in (folder.STATS_CSV, folder.HISTORY_CSV, folder.FAILURES_CSV):
        shutil.copy(FIXTURE / name, run_dir / name)
    live = LiveStatus(run_id="lost", written_at=time.time(), state="running", elapsed_s=18.0, requests=900)
    (run_dir / folder.LIVE_JSON).write_text(json.dumps(live.to_json()))
    assert salvage.salvage(run_dir, 137, ended_at=live.written_at, oom_killed=True) is not None
    return run_dir


def test_history_add_refuses_a_run_whose_master_was_lost_unless_partial(tmp_path, capsys):
    from swarmbench import cli

    run_dir, store = _salvaged(tmp_path), tmp_path / "h.sqlite"
    with pytest.raises(SystemExit) as refused:
        cli.main(["history", "add", str(run_dir), "--history", str(store)])
    err = capsys.readouterr().err
    assert refused.value.code == exits.CONFIG_ERROR and "--partial" in err and "137 at 18 s" in err
    assert "OOM-killed" in err
    assert cli.main(["history", "add", str(run_dir), "--partial", "--history", str(store)]) == 0


def test_compare_names_the_partial_side(tmp_path):
    from swarmbench.compare.sides import CompareWarning, read_side
    from swarmbench.core.exits import InputError

    run_dir = _salvaged(tmp_path)
    partial = r"side .*lost.*partial, left out.*master exited with 137"
    with pytest.warns(CompareWarning, match=partial), pytest.raises(InputError, match="this side is partial"):
        read_side(run_dir)
