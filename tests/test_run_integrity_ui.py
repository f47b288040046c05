"""Fault injection, the web UI: each Start->Stop (and a reset) is a saved, exact run folder; a run
folder that cannot be created does not kill the UI; the UI's own run time ends and saves a run.

Real processes only: the Go target and Locust masters/workers in subprocesses (test_run_integrity.py
has the rules and the headless cases, test_run_integrity_stack.py the compose stack).
"""

from __future__ import annotations

import json
import signal
import time
import urllib.parse
import urllib.request
from pathlib import Path

from harness import free_port, wait_http
from integrity import assert_exact, post, spawn, ui_rounds
from runs import assert_complete_folder, only_run, stats, target_album_requests, total


def check_ui_folders(runs: list[Path], counts: list[int]) -> None:
    assert len(runs) == len(counts), f"one folder per Start->Stop, got {runs}"
    previous = 0
    for run_dir, served in zip(runs, counts, strict=True):
        m = assert_complete_folder(run_dir)
        assert (m["started_from"], m["status"], m["users"]) == ("ui", "complete", 4)
        assert_exact(run_dir, served - previous)
        previous = served


def test_web_ui_start_stop_and_reset_write_new_exact_folders(albums_target, tmp_path):
    port, web = str(free_port()), free_port()
    results = tmp_path / "results"
    master = spawn(
        ["--master", "--master-bind-port", port, "--web-host", "127.0.0.1", "--web-port", str(web),
         "--class-picker", "-H", albums_target.url, "--wait-time", "constant 0.05", "--stop-timeout", "1",
         "--results-dir", str(results)], tmp_path / "master.log",
    )  # fmt: skip
    worker = spawn(["--worker", "--master-port", port], tmp_path / "w.log")
    try:
        wait_http(f"http://127.0.0.1:{web}/", timeout=60)
        served = lambda: target_album_requests(albums_target.metrics())  # noqa: E731
        counts = ui_rounds(f"http://127.0.0.1:{web}", 1, served, reset=True)
        master.send_signal(signal.SIGTERM)
        assert master.wait(timeout=60) == 143
    finally:
        for p in (master, worker):
            if p.poll() is None:
                p.kill()
            p.wait()
    runs = sorted(p.parent for p in results.rglob("run.json"))
    assert len(runs) == 3, f"one folder per Start->Stop and one more after the reset, got {runs}"
    check_ui_folders(runs[:1], counts[:1])
    # A reset splits the second test in two folders: nothing lost, nothing counted twice.
    before, after = (assert_complete_folder(r) for r in runs[1:])
    assert [e["kind"] for e in before["events"]][-2:] == ["stats_reset", "run_end"]
    assert (after["started_from"], after["status"]) == ("ui", "complete")
    parts = before["totals"]["requests"], after["totals"]["requests"]
    assert min(parts) > 0 and sum(parts) == counts[1] - counts[0], "the reset lost or doubled requests"
    # Each folder's files agree: the histograms hold what Locust counted, and run.json's totals are
    # its locust_stats.csv's. (The next folder's start once waited on the network inside the reset,
    # before Locust cleared its stats: a report taken then was lost to Locust but not to the
    # histograms, under load.)
    for run_dir, m in zip(runs[1:], (before, after), strict=True):
        assert m["latency"]["exact"] is True, run_dir
        assert m["totals"]["requests"] == total(stats(run_dir)), run_dir


def test_web_ui_keeps_running_when_its_run_folder_cannot_be_created(albums_target, tmp_path):
    """`docker compose up` with a results/ the containers cannot write: Start still runs the test
    (the UI must not die with it), the log says the run is not saved and why."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    web = free_port()
    proc = spawn(
        ["--web-host", "127.0.0.1", "--web-port", str(web), "--class-picker", "-H", albums_target.url,
         "--wait-time", "constant 0.05", "--results-dir", str(blocker / "results")], tmp_path / "locust.log",
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{web}/", timeout=60)
        form = {"user_count": 3, "spawn_rate": 3, "run_time": "2s", "user_classes": "AlbumsFastHttpUser"}
        assert post(f"http://127.0.0.1:{web}/swarm", form)["success"] is True
        time.sleep(4)
        assert proc.poll() is None, "the web UI died with its run folder"
        with urllib.request.urlopen(f"http://127.0.0.1:{web}/stats/requests", timeout=10) as r:
            assert json.load(r)["stats"][-1]["num_requests"] > 0, "the test did not run"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    log = (tmp_path / "locust.log").read_text()
    assert "This web UI run is not saved: cannot create a folder under" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_web_ui_run_time_ends_a_standalone_run_and_saves_it(albums_target, tmp_path):
    """The UI's own run time (no Stop) ends the test; a standalone runner's UI saves it the same way."""
    web = free_port()
    proc = spawn(
        ["--web-host", "127.0.0.1", "--web-port", str(web), "--class-picker", "-H", albums_target.url,
         "--wait-time", "constant 0.05", "--results-dir", str(tmp_path)], tmp_path / "locust.log",
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{web}/", timeout=60)
        form = {"user_count": 3, "spawn_rate": 3, "run_time": "3s", "user_classes": "AlbumsFastHttpUser"}
        assert post(f"http://127.0.0.1:{web}/swarm", form)["success"] is True
        deadline = time.monotonic() + 30
        while not list(tmp_path.rglob("run.json")):
            assert time.monotonic() < deadline, "the UI run's time ran out but nothing was saved"
            time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    run_dir = only_run(tmp_path)
    m = assert_complete_folder(run_dir)
    assert (m["started_from"], m["mode"], m["status"], m["run_time"], m["users"]) == (
        "ui",
        "local",
        "complete",
        3,
        3,
    )
    assert_exact(run_dir, target_album_requests(albums_target.metrics()))
