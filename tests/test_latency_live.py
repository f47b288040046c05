"""Exact latency while a web-UI run goes, a reset, and the switch that turns recording off: real
Locust masters and workers (subprocesses) against the real Go target.

  - the UI's Exact latency tab (/stats/requests' extended_stats) and /swarmbench/latency.json show
    the exact p50 of a 1,060 ms target while Locust's own table says 1,100, and they move as it runs
  - a reset starts the windows afresh on every generator: the new folder's windows count from the
    reset, what was in flight lands in window 0, nothing lost or doubled
  - --no-exact-latency / LOCUST_EXACT_LATENCY=false: no histogram files, thresholds say "rounded"
"""

from __future__ import annotations

import csv
import time
import urllib.request
from pathlib import Path

import pytest
from harness import Target, run_locust
from integrity import post
from runs import assert_complete_folder, manifest, only_run, stats, total
from webui import UiStack, get_json

from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED
from swarmbench.latency.windows import WINDOW_COLUMNS

# Exact p50 within 40 ms of the target's delay (a loaded CI machine added 4 ms to a 105 ms one, too
# much for the 3 ms a 110 ms rounding left), and a reset's windows against the wall clock: timing,
# so those run alone (make test-py).
QUIET = pytest.mark.quiet

DELAY_MS = 1060
LOCUST_FILES_AS = 1100  # Locust keeps 2 significant digits: every 1,050-1,149 ms sample is 1,100


def aggregated(rows: list[dict]) -> dict:
    [row] = [r for r in rows if r["name"] == AGGREGATED]
    return row


@pytest.fixture
def slow_target(albums_binary):
    target = Target(albums_binary, ALBUMS_DELAY=f"{DELAY_MS}ms")
    yield target
    target.stop()


@QUIET
def test_the_ui_shows_exact_percentiles_while_the_run_goes(slow_target, tmp_path):
    stack = UiStack(tmp_path, slow_target.url)
    try:
        index = urllib.request.urlopen(stack.base + "/", timeout=10).read().decode()
        assert '"extended_tabs": [{"key": "swarmbench-latency", "title": "Exact latency"}]' in index
        stack.start()
        seen = []
        for _ in range(2):
            time.sleep(4)  # past a worker's stats report (every 3 s)
            page = get_json(stack.base + "/swarmbench/latency.json")
            # A worker reports every 3 s from its own start, not the test's: on a loaded machine its
            # first report holding a finished 1,060 ms request can come after 4 s (CI, 2026-11-29).
            deadline = time.monotonic() + 6
            while not seen and not page["rows"] and time.monotonic() < deadline:
                time.sleep(0.5)
                page = get_json(stack.base + "/swarmbench/latency.json")
            locust = get_json(stack.base + "/stats/requests")
            seen.append((page, locust))
        html = urllib.request.urlopen(stack.base + "/swarmbench/latency", timeout=10).read().decode()
        post(stack.base + "/stop")
    finally:
        stack.close()
    (first, _), (second, locust) = seen
    assert (first["enabled"], first["source"], first["window_s"]) == (True, "exact", 1)
    now, before = aggregated(second["rows"]), aggregated(first["rows"])
    assert now["count"] > before["count"] > 0, "the numbers do not move while the run goes"
    assert DELAY_MS <= now["p50"] < LOCUST_FILES_AS and now["p50"] <= now["p95"] <= now["p99"] <= now["max"]
    locust_total = locust["stats"][-1]
    # Locust files every sample under 1,150 ms as 1,100, then clips its median to the exact max when
    # every sample so far is below that; the row shows the max itself rounded to whole ms.
    median, shown_max = locust_total["median_response_time"], locust_total["max_response_time"]
    assert locust_total["name"] == AGGREGATED
    # proper_round, as Locust:
    clipped = now["p50"] < median < LOCUST_FILES_AS and int(median + 0.5) == shown_max
    assert median == LOCUST_FILES_AS or clipped, (median, shown_max)
    [tab] = locust["extended_stats"]
    assert tab["key"] == "swarmbench-latency"
    tab_total = aggregated(tab["data"])
    assert tab_total["count"] >= now["count"] and DELAY_MS <= tab_total["p50"] < LOCUST_FILES_AS
    assert {r["name"] for r in tab["data"]} == {s["name"] for s in locust["stats"]}
    assert '<meta http-equiv="refresh"' in html and f"<td>{AGGREGATED}</td>" in html


def window_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / folder.LATENCY_WINDOWS_CSV, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == WINDOW_COLUMNS
        return list(reader)


@QUIET
def test_a_reset_starts_the_windows_afresh_on_every_generator(albums_target, tmp_path):
    """8 s before the reset, then 3 s: a worker's unreported samples at the reset counted from the
    old start would land in windows 5..8 of the new folder, which lasted 3 s."""
    stack = UiStack(tmp_path, albums_target.url)
    try:
        stack.start()
        time.sleep(8)
        urllib.request.urlopen(stack.base + "/stats/reset", data=b"", timeout=10).close()
        reset_at = time.monotonic()
        time.sleep(3)
        post(stack.base + "/stop")
        stopped_after = time.monotonic() - reset_at
        time.sleep(2)
    finally:
        stack.close()
    before, after = sorted(p.parent for p in stack.results.rglob(folder.MANIFEST))
    for run_dir in (before, after):
        m = assert_complete_folder(run_dir)
        assert m["latency"]["exact"] is True, run_dir  # every request Locust counted, once
        rows = [r for r in window_rows(run_dir) if r["name"] == AGGREGATED and r["kind"] == "service"]
        assert sum(int(r["count"]) for r in rows) == total(stats(run_dir)) == m["latency"]["requests"]
    windows = [int(r["window_s"]) for r in window_rows(after)]
    assert min(windows) == 0 and max(windows) <= stopped_after + 1, f"windows {sorted(set(windows))}"
    assert max(int(r["window_s"]) for r in window_rows(before)) >= 5  # the old start was long ago


@pytest.mark.parametrize("how", ["flag", "env"])
def test_recording_off_falls_back_to_rounded_and_says_so(albums_target, tmp_path, how):
    results = tmp_path / "results"
    switch = ["--no-exact-latency"] if how == "flag" else []
    env = {"LOCUST_EXACT_LATENCY": "false"} if how == "env" else {}
    res = run_locust(
        "--headless", "-H", albums_target.url, "-u", "3", "-r", "3", "-t", "3s",
        "--wait-time", "constant 0.05", "--results-dir", str(results), "--check", "p50<10000", *switch,
        "AlbumsFastHttpUser", env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "swarmbench: check PASS p50<10000 (Aggregated): measured" in res.stdout
    assert "ms (rounded)" in res.stdout and "(exact)" not in res.stdout
    assert "exact latency recording is off (--no-exact-latency)" in res.stderr
    run_dir = only_run(results)
    assert not any((run_dir / name).exists() for name in folder.LATENCY_FILES)
    m = manifest(run_dir)
    assert m.get("latency") is None and m["checks"][0]["exact"] is False
