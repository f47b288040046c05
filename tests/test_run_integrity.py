"""Fault injection: runs that go wrong are saved, marked and exit with the code CI needs.

Real processes only: the Go target, Locust masters/workers in subprocesses (here: the rules and the
headless cases; test_run_integrity_ui.py: the web UI; test_run_integrity_stack.py, marked `docker`:
the real compose stack driven by `python -m swarmbench headless` / `docker compose up`). Each case
asserts run.json's status, the exit code, a complete folder, and exact counts where the target
stayed up (the CSV total == the target's own count).
"""

from __future__ import annotations

import shutil
import signal
import time

import pytest
from harness import Target
from integrity import FAST, SPAWNED, assert_exact, distributed, spawn, wait_for
from runs import assert_complete_folder, only_run, stats, target_album_requests, total

from swarmbench.core import exits
from swarmbench.core.health import FAILED_RATIO, TARGET_DOWN_S, TARGET_HANG_S, Health
from swarmbench.core.manifest import EVENT_KINDS, RunManifest, run_exit_code

# --- the rules, on their own (pure) ---------------------------------------------------------------


def test_health_status_rules():
    h = Health(expected=2)
    h.start({"a": "ready", "b": "ready"}, now=0.0)
    assert h.status(100, 0) == "complete"
    assert h.status(0, 0) == "failed" and h.status(100, int(100 * FAILED_RATIO)) == "failed"
    h.workers({"a": "running", "b": "missing"}, now=5.0)
    assert h.status(100, 0) == "degraded"
    assert [e.kind for e in h.events] == ["worker_joined", "worker_joined", "worker_missing"]
    assert [(p.t_s, p.connected) for p in h.timeline] == [(0.0, 2), (5.0, 1)]
    h.signal(signal.SIGTERM, now=6.0)
    assert h.status(100, 0) == "interrupted" and h.interrupting_signal() == signal.SIGTERM
    assert {e.kind for e in h.events} <= set(EVENT_KINDS), "an event kind not named in core/manifest.py"


def test_requests_that_hang_are_a_target_that_stopped_answering():
    """A vanished target makes connections time out, not fail: nothing completes at all."""
    busy = Health()
    busy.start(None, now=0.0)
    busy.requests(300, 0, now=3.0)  # 100 requests/s
    busy.requests(300, 0, now=3.0 + TARGET_HANG_S - 1)
    assert not busy.problems, "a shorter silence is a late report, not an outage"
    busy.closing = True
    busy.requests(300, 0, now=3.0 + TARGET_HANG_S + 5)
    assert not busy.problems, "the stop phase is silent by design"
    busy.requests(300, 0, now=3.0 + TARGET_HANG_S, final=True)  # the final counts, as of the end
    assert busy.status(300, 0) == "degraded"
    assert "requests hang" in busy.events[-1].detail
    slow = Health()  # one user thinking 10 s: silent by design, never flagged
    slow.start(None, now=0.0)
    slow.requests(3, 0, now=30.0)
    slow.requests(3, 0, now=30.0 + 4 * TARGET_HANG_S, final=True)
    assert slow.status(3, 0) == "complete"


def test_leaving_at_the_end_is_normal_but_quitting_early_is_not():
    h = Health(expected=2)
    h.start({"a": "running", "b": "running"}, now=0.0)
    h.workers({"a": "running"}, now=3.0)  # b quit mid-run
    h.closing = True
    h.workers({}, now=9.0)  # a quit as told at the end
    assert h.problems == ["worker b quit early", "1 of 2 load generators connected"]
    quits = [e.detail for e in h.events if e.kind == "worker_quit"]
    assert quits == ["worker b quit before the run's end"]
    assert [(p.t_s, p.connected) for p in h.timeline] == [(0.0, 2), (3.0, 1)], (
        "the normal end is not a drop in load generators"
    )


def test_target_that_stops_answering_is_seen_and_its_return_too():
    h = Health()
    h.start(None, now=0.0)
    h.requests(100, 0, now=1.0)
    h.requests(140, 40, now=1.0 + TARGET_DOWN_S - 0.5)  # (total, failures): no success since 1.0
    assert not h.problems, "a shorter gap is not an outage"
    h.requests(180, 80, now=1.0 + TARGET_DOWN_S)
    h.requests(230, 80, now=1.0 + TARGET_DOWN_S + 2)
    assert [e.kind for e in h.events] == ["target_unreachable", "target_answering"]
    assert h.status(230, 80) == "degraded"


def test_a_stopped_stack_is_interrupted_not_degraded():
    h = Health(expected=2)
    h.start({"a": "running", "b": "running"}, now=0.0)
    h.worker_signal("a", signal.SIGTERM)
    assert h.status(10, 0) != "interrupted", "one worker stopped by hand: the run lost a generator"
    h.worker_signal("b", signal.SIGTERM)
    assert h.status(10, 0) == "interrupted" and h.interrupting_signal() == signal.SIGTERM


@pytest.mark.parametrize(
    ("status", "signum", "allow", "base", "code"),
    [
        ("interrupted", signal.SIGINT, False, 3, 130),
        ("interrupted", signal.SIGTERM, False, 0, 143),
        ("failed", None, False, 1, exits.RUN_FAILED),
        ("degraded", None, False, 3, exits.DEGRADED),
        ("degraded", None, True, 3, 3),
        ("degraded", None, True, 1, 1),
        ("complete", None, False, 1, 1),
    ],
)
def test_exit_code_precedence(status, signum, allow, base, code):
    assert run_exit_code(status, signum, allow, base) == code


def test_run_json_rejects_an_unknown_status(tmp_path):
    from swarmbench.core.exits import InputError

    with pytest.raises(InputError, match='"status" should be one of complete, interrupted'):
        RunManifest.from_json({"status": "fine"})


# --- real local processes -------------------------------------------------------------------------


def test_worker_killed_mid_run_is_degraded_exit_4(albums_target, tmp_path):
    results = tmp_path / "results"
    with distributed(albums_target, results, tmp_path, 2, "-t", "12s") as procs:
        wait_for(tmp_path / "master.log", SPAWNED)
        time.sleep(2)
        procs["w0"].kill()
        code = procs["master"].wait(timeout=90)
    m = assert_complete_folder(only_run(results))
    assert (code, m["status"], m["exit_code"]) == (exits.DEGRADED, "degraded", exits.DEGRADED)
    joined = [e["detail"].split()[1] for e in m["events"] if e["kind"] == "worker_joined"]
    missing = [e for e in m["events"] if e["kind"] == "worker_missing"]
    assert len(joined) == 2 and len(missing) == 1 and missing[0]["detail"].split()[1] in joined
    assert m["workers_timeline"][0] == {"t_s": 0.0, "connected": 2}
    assert m["workers_timeline"][-1]["connected"] == 1
    # The killed worker's unreported requests are lost (never more counted than served).
    assert total(stats(only_run(results))) <= target_album_requests(albums_target.metrics())


def test_a_worker_frozen_at_its_spawn_fails_the_run_and_says_it_went_missing(albums_target, tmp_path):
    """A worker that stops dead as its users start (SIGSTOP: a hung process, a paused VM) sends no
    heartbeat and no report: nothing was measured, so the run failed (exit 5), and its status says
    why, not just "no request was made" (one CI run had only that to go on)."""
    results = tmp_path / "results"
    with distributed(albums_target, results, tmp_path, 1, "-t", "6s") as procs:
        wait_for(tmp_path / "master.log", "Sending spawn jobs")
        # Its reports come every 3 s from its own start (just before the spawn): none is due yet.
        procs["w0"].send_signal(signal.SIGSTOP)
        code = procs["master"].wait(timeout=60)
        procs["w0"].kill()  # frozen, it would answer no gentler signal
    m = assert_complete_folder(only_run(results))
    assert (code, m["status"], m["exit_code"]) == (exits.RUN_FAILED, "failed", exits.RUN_FAILED)
    end = [e["detail"] for e in m["events"] if e["kind"] == "run_end"]
    assert len(end) == 1 and end[0].startswith("failed: no request was made ("), end
    assert "went missing" in end[0], end


def test_master_sigterm_is_interrupted_143_with_exact_counts(albums_target, tmp_path):
    results = tmp_path / "results"
    with distributed(albums_target, results, tmp_path, 2, "-t", "60s") as procs:
        wait_for(tmp_path / "master.log", SPAWNED)
        time.sleep(3)
        procs["master"].send_signal(signal.SIGTERM)
        code = procs["master"].wait(timeout=60)
    run_dir = only_run(results)
    m = assert_complete_folder(run_dir)
    assert (code, m["status"], m["exit_code"]) == (143, "interrupted", 143)
    assert any(e["kind"] == "signal_received" and "SIGTERM" in e["detail"] for e in m["events"])
    assert m["duration_s"] < 30, "the run ended at the signal, not at --run-time"
    assert_exact(run_dir, target_album_requests(albums_target.metrics()))


def test_standalone_ctrl_c_is_interrupted_130_with_exact_counts(albums_target, tmp_path):
    log = tmp_path / "locust.log"
    proc = spawn(
        ["--headless", "-H", albums_target.url, "-t", "60s", "--results-dir", str(tmp_path), *FAST], log
    )
    wait_for(log, SPAWNED)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    run_dir = only_run(tmp_path)
    m = assert_complete_folder(run_dir)
    assert (code, m["status"], m["exit_code"]) == (130, "interrupted", 130), log.read_text()[-2000:]
    assert_exact(run_dir, target_album_requests(albums_target.metrics()))


def test_target_stopped_mid_run_is_degraded_and_allow_degraded_keeps_locusts_code(albums_binary, tmp_path):
    target = Target(albums_binary)
    log = tmp_path / "locust.log"
    proc = spawn(
        ["--headless", "-H", target.url, "-t", "14s", "--results-dir", str(tmp_path), *FAST], log,
        env={"LOCUST_ALLOW_DEGRADED": "true"},
    )  # fmt: skip
    try:
        wait_for(log, SPAWNED)
        time.sleep(2)
        target.stop()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    m = assert_complete_folder(only_run(tmp_path))
    assert (m["status"], code, m["exit_code"]) == ("degraded", exits.REQUESTS_FAILED, exits.REQUESTS_FAILED)
    assert [e["kind"] for e in m["events"] if e["kind"].startswith("target")] == ["target_unreachable"]
    assert 0 < m["totals"]["failures"] < m["totals"]["requests"]


def test_a_run_folder_gone_mid_run_is_one_line_and_exit_6_never_0(albums_target, tmp_path):
    """The results folder went away (or read-only, full) while the run went: the master cannot
    save the run. It says so in one line naming the folder, without a traceback, and exits 6 (the
    runner then writes the record from what survived, core/salvage.py): never 0, which CI would
    pass. Root, as tests run here, ignores permissions, so the folder is removed instead."""
    log, results = tmp_path / "locust.log", tmp_path / "results"
    proc = spawn(
        ["--headless", "-H", albums_target.url, "-t", "6s", "--results-dir", str(results), *FAST], log
    )  # fmt: skip
    wait_for(log, SPAWNED)
    (run_dir,) = [p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")]
    shutil.rmtree(run_dir)
    code = proc.wait(timeout=60)
    out = log.read_text()
    lines = [line for line in out.splitlines() if line.startswith("swarmbench: error:")]
    assert code == exits.MASTER_LOST, out[-3000:]
    assert len(lines) == 1 and "the run could not be saved in" in lines[0] and run_dir.name in lines[0], out
    assert "Uncaught exception" not in out and "Traceback" not in out, out[-3000:]
