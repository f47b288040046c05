"""The history's command line end to end, each command in a process of its own as a user runs it:
`swarmbench history add|list|import|export`, `swarmbench trend` and `swarmbench compare --history`,
on real stores (SQLite, and PostgreSQL where the test says so) and real run folders (tests/fixtures,
results/examples, and folders written from a synthetic history of known noise: history_runs.py).
Bad input: one line, exit 2, nothing written."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from harness import FIXTURES, assert_one_line_error, swarmbench
from history_runs import (
    EXAMPLES,
    REPEAT_1,
    at_mean,
    base_run,
    folders_under,
    history,
    noisy,
    scaled,
    stored,
    write_folder,
)

from swarmbench.compare.trend import GATE_METHOD, GATE_MIN_RUNS, TAIL_MIN, tail_rests_on
from swarmbench.core.checks import AGGREGATED, INCONCLUSIVE, REGRESSED
from swarmbench.history import read_run
from swarmbench.history.commands import given_load as cli_load

LIST_KEYS = {"run_id", "started_at", "git_commit", "branch", "host", "testbed", "fingerprint", "precision",
             "status"}  # fmt: skip
"""`history list --json`: one object a run, these keys (docs/history.md)."""

CHANGE_KEYS = {"name", "metric", "run_id", "commit", "before", "after", "change_pct", "type", "started_at",
               "pvalue", "qvalue", "worse", "fingerprint", "host", "testbed"}  # fmt: skip
"""`trend --json`: each change point's keys (the issue's seven first; docs/history.md lists them all)."""


def ok(*args: str | Path, env: dict[str, str] | None = None) -> str:
    res = swarmbench(*args, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def listed(store: str) -> list[dict]:
    return [json.loads(line) for line in ok("history", "list", "--json", "--history", store).splitlines()]


def run_folders(tree: Path) -> set[Path]:
    """Every run folder under TREE, hidden ones left out: counted here without the store's code."""
    return {p.parent for p in tree.rglob("locust_stats.csv") if not any(part.startswith(".") for part in
            p.relative_to(tree).parts)}  # fmt: skip


def test_add_twice_keeps_one_and_list_says_what_is_stored(history_store: str) -> None:
    first = ok("history", "add", REPEAT_1, "--branch", "main", "--testbed", "ci", "--history", history_store)
    again = ok("history", "add", REPEAT_1, "--history", history_store)
    assert first.startswith(f"added: {REPEAT_1} -> ") and again.startswith(f"already stored: {REPEAT_1} -> ")
    (run,) = listed(history_store)
    assert set(run) == LIST_KEYS
    assert (run["run_id"], run["branch"], run["testbed"], run["precision"], run["status"]) == (
        "repeat-1", "main", "ci", "exact", "complete")  # fmt: skip
    table = ok("history", "list", "--history", history_store).splitlines()
    assert table[0].startswith("1 run(s) in ") and "repeat-1  main  fixture  exact" in table[1]


def test_import_backfills_old_and_new_folders(tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    examples = folders_under(EXAMPLES)
    out = ok("history", "import", EXAMPLES, "--history", store)
    assert out == f"{len(examples)} added, 0 already stored, 0 unreadable\n" and len(examples) >= 4
    assert {r["precision"] for r in listed(store)} == {"exact"}  # recorded with HDR files
    fixtures = run_folders(FIXTURES)
    bare = sorted(f for f in fixtures if not (f / "run.json").exists())  # Locust's own folders
    res = swarmbench("history", "import", FIXTURES, "--branch", "main", "--history", store)
    assert res.returncode == 0 and len(bare) == 2, res.stderr
    assert res.stdout == f"{len(fixtures) - 2} added, 0 already stored, 2 unreadable\n"
    assert res.stderr.splitlines() == [
        f"swarmbench: warning: skipped {f}: no run.json, so its load is unknown; give it: --load KEY=VALUE "
        f"... (locustfile, user_classes, users, wait_time, arrival_rate, albums_mix, workers, run_time, "
        "load_shape)" for f in bare]  # fmt: skip
    out = ok("history", "import", FIXTURES, "--load", "users=10", "--load", "run_time=60", "--history", store)
    assert out == f"2 added, {len(fixtures) - 2} already stored, 0 unreadable\n"
    runs = listed(store)
    assert len(runs) == len(examples) + len(fixtures)
    exact = {r["run_id"] for r in runs if r["precision"] == "exact"}
    assert {"repeat-1", "repeat-2", "step"} <= exact
    assert {r["branch"] for r in runs if r["run_id"] == "repeat-1"} == {"main"}
    again = ok("history", "import", FIXTURES, "--load", "users=10", "--history", store)
    assert again == f"0 added, {len(fixtures)} already stored, 0 unreadable\n"


def test_export_writes_otavas_csv_of_the_stored_figures(tmp_path: Path) -> None:
    store = stored(tmp_path / "h.sqlite", history(12, 0.02, seed=1))
    ok("history", "add", REPEAT_1, "--branch", "main", "--testbed", "t", "--history", store)  # a 13th, real
    out = ok("history", "export", "--format", "csv", "-o", tmp_path / "otava", "--history", store)
    assert out == f"1 configuration(s) -> {tmp_path / 'otava'}/ (otava.yaml and one CSV each)\n"
    (table,) = (tmp_path / "otava").glob("*.csv")
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["run_id"] for r in rows] == ["repeat-1", *(f"r{i}" for i in range(12))]  # oldest first
    assert {r["branch"] for r in rows} == {"main"} and rows[0]["time"] == "2026-11-24 21:43:23 +0000"
    with open(REPEAT_1 / "locust_latency_hdr.csv", newline="") as f:
        hdr = {r["name"]: r for r in csv.DictReader(f)}
    for name in ("GET /albums", AGGREGATED):
        assert float(rows[0][f"{name}.p95_ms"]) == float(hdr[name]["p95_ms"])
        assert float(rows[0][f"{name}.p999_ms"]) == float(hdr[name]["p99.9_ms"])
    assert "otava.yaml" in os.listdir(tmp_path / "otava")


@pytest.mark.parametrize("content", ["text", "other tables"])
@pytest.mark.parametrize(
    "command",
    [("history", "add", str(REPEAT_1)), ("history", "list"), ("trend",), ("compare", str(REPEAT_1))],
)
def test_a_store_that_is_not_a_history_is_one_line_and_left_as_it_was(
    tmp_path: Path, content: str, command: tuple[str, ...]
) -> None:
    path = tmp_path / "history.sqlite"
    if content == "text":
        path.write_text("run_id,started_at\nr1,2026-01-01\n")
    else:
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT)")
        conn.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    args = [*command[:1], "--history", str(path), *command[1:]]
    if command[0] == "history":
        args = [*command, "--history", str(path)]
    res = swarmbench(*args, "-o", str(tmp_path / "out")) if command[0] == "compare" else swarmbench(*args)
    assert_one_line_error(res, f"{path}: not a swarmbench history", prog="swarmbench")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no -wal, no out/


def test_a_folder_that_is_not_a_run_is_refused_and_the_store_kept(tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    ok("history", "add", REPEAT_1, "--history", store)
    res = swarmbench("history", "add", FIXTURES / "exact" / "repeat-2", tmp_path, "--history", store)
    assert_one_line_error(res, f"{tmp_path}: not a run folder", prog="swarmbench")
    assert [r["run_id"] for r in listed(store)] == ["repeat-1"]  # all or none: repeat-2 not added either
    bad_url = swarmbench("history", "list", "--history", "mysql://db.example/history")
    assert_one_line_error(bad_url, "mysql://...: not a history store", prog="swarmbench")


def stepped_store(tmp_path: Path) -> str:
    """50 runs, 2 % noise, Aggregated p95 +8 % from run 25 on (the issue's synthetic step)."""
    step = {("", AGGREGATED, "p95_ms"): 1.08}
    return stored(tmp_path / "h.sqlite", history(50, 0.02, seed=4, step=lambda i: step if i >= 25 else {}))


def test_trend_json_names_each_change_point_with_its_first_run(tmp_path: Path) -> None:
    found = json.loads(ok("trend", "--json", "--history", stepped_store(tmp_path)))
    assert set(found) == {"change_points", "runs"}
    assert found["change_points"] and all(set(p) == CHANGE_KEYS for p in found["change_points"])
    (p95,) = [p for p in found["change_points"] if (p["name"], p["metric"]) == (AGGREGATED, "p95_ms")]
    assert p95["run_id"] in ("r24", "r25", "r26") and p95["commit"] == "fixture"
    assert 5 < p95["change_pct"] < 11 and p95["after"] > p95["before"]
    assert p95["change_pct"] == pytest.approx(100 * (p95["after"] / p95["before"] - 1), abs=1e-3)
    assert p95["worse"] is True and p95["qvalue"] <= 0.05
    group = next(g for g in found["runs"] if g["run_id"] == p95["run_id"])
    assert group["changed"] >= 1 and group["worse"] >= 1 and group["commit"] == "fixture"


def test_trend_writes_its_page_and_json(tmp_path: Path) -> None:
    store = stepped_store(tmp_path)
    out = tmp_path / "trend"
    text = ok("trend", "--history", store, "-o", out)
    assert "change point(s)" in text and f"-> {out}/ (trend.html, trend.json)" in text
    page = (out / "trend.html").read_text()
    saved = json.loads((out / "trend.json").read_text())
    assert saved["store"] == store and saved["branch"] == "main" and "E-divisive" in saved["method"]
    (p95,) = [p for p in saved["change_points"] if (p["name"], p["metric"]) == (AGGREGATED, "p95_ms")]
    assert page.count("<svg") == 4 * 7  # 3 names and Aggregated x 7 metrics
    assert f"({p95['run_id']}, fixture)" in page and "segment mean" in page and ">p95 (ms)</text>" in page
    assert f"<td>{p95['run_id']}</td><td>fixture</td><td>{AGGREGATED}</td><td>p95 (ms)</td>" in page
    assert "no change point" not in page.split("<figure>")[1]  # the charts with a change come first
    assert f"<li>{p95['run_id']} (fixture): " in page.split("<h2>Runs that changed</h2>")[1]
    marked = [f for f in page.split("<figure>")[1:] if "<title>change point</title>" in f]
    assert len(marked) == len({(p["name"], p["metric"]) for p in saved["change_points"]}) >= 1
    last = ok("trend", "--history", store, "--last", "20", "--json")
    assert all(p["name"] != AGGREGATED or p["metric"] != "p95_ms" for p in json.loads(last)["change_points"])


def test_the_gate_with_too_few_runs_says_how_many_and_passes(tmp_path: Path) -> None:
    runs = history(GATE_MIN_RUNS - 2, 0.02)
    store = stored(tmp_path / "h.sqlite", runs)
    candidate = write_folder(at_mean(store, runs[-1]), tmp_path / "runs")
    res = swarmbench("compare", "--history", store, candidate, "-o", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert f"{GATE_MIN_RUNS - 2} comparable run(s) of main before {candidate}" in res.stderr
    assert f"(the gate needs {GATE_MIN_RUNS}): no verdict" in res.stderr
    said = (tmp_path / "out" / "compare.txt").read_text()  # a CI job's summary shows it
    assert f"swarmbench compare: {said}" == res.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["compare.html", "compare.json", "compare.txt"]
    result = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert (result["verdict"], result["comparable_runs"], result["exit_code"]) == (None, GATE_MIN_RUNS - 2, 0)
    assert result["nearest"] is None and result["warning"] == [said.strip()]
    required = swarmbench(
        "compare", "--history", store, candidate, "--require-baseline", "-o", tmp_path / "o2"
    )
    assert (
        required.returncode == 3 and "no verdict; record main's runs with --record; exit 3" in required.stderr
    )


def test_the_gate_calls_a_slower_run_regressed_and_an_unchanged_one_not(tmp_path: Path) -> None:
    """12 past runs with 1 % noise: the p95s of a run 20 % slower are `regressed` (exit 3); a run at
    the past runs' mean is not (exit 0). The second form: the store from SWARMBENCH_HISTORY."""
    runs = history(12, 0.01, seed=5)
    store = stored(tmp_path / "h.sqlite", runs)
    same = at_mean(store, runs[-1])
    slower = scaled(same, 101, {(s.type, s.name, "p95_ms"): 1.20 for s in same.stats}, run_id="slower")
    folders = tmp_path / "runs"

    res = swarmbench("compare", "--history", store, write_folder(slower, folders), "-o", tmp_path / "slow")
    assert res.returncode == 3, res.stdout + res.stderr
    result = json.loads((tmp_path / "slow" / "compare.json").read_text())
    p95 = {r["name"]: r["verdict"] for r in result["results"] if r["metric"] == "p95"}
    # ~260 requests leave 13 beyond p95, fewer than trend.TAIL_MIN: shown, not judged, and said
    thin = {s.name for s in slower.stats if tail_rests_on("p95", s.requests) < TAIL_MIN}
    assert thin == {"GET /albums", "POST /albums"} and len(p95) == 4, p95
    assert {p95[n] for n in thin} == {INCONCLUSIVE} and {v for n, v in p95.items() if n not in thin} == {
        REGRESSED
    }
    assert all(f"{n} p95 (" in res.stdout for n in thin)
    assert result["method"] == GATE_METHOD and f"method: {GATE_METHOD}" in res.stdout
    # the method names the tail rule the header's "not judged" line applies (it once said 10, not 20)
    assert f"at least {TAIL_MIN} of the candidate's requests lie beyond it" in res.stdout
    assert f"fewer than {TAIL_MIN} of the candidate's requests beyond the percentile" in res.stdout
    assert result["baseline"] == [r.run_id for r in runs]  # all 12: fewer than the gate's 20
    assert "learned from the last 12 of 12 comparable runs of main" in res.stdout
    assert (
        "95% for the whole gate" in res.stdout and "would catch (9 times in 10, Aggregated): " in res.stdout
    )
    assert 0.02 < result["detectable"]["p95"] < 0.15 and result["detectable"]["throughput"] < 0
    written = {p.name for p in (tmp_path / "slow").iterdir()}
    assert written == {"compare.txt", "compare.json", "junit.xml", "compare.html"}

    env = {**os.environ, "SWARMBENCH_HISTORY": store}
    res = swarmbench("compare", "--history", write_folder(same, folders), "-o", tmp_path / "same", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads((tmp_path / "same" / "compare.json").read_text())
    assert result["verdicts"]["regressed"] == 0 and result["candidate"] == ["new"]


def test_the_gate_takes_the_load_of_a_candidate_without_run_json(tmp_path: Path) -> None:
    """A candidate folder without run.json (plain Locust's) is gated with --load, as `history add`
    takes one: its load is the one given (the same parser), so it meets the history's runs of that
    load; without --load, or with a key that is no load key, one line, exit 2, nothing written."""
    folder = write_folder(scaled(base_run(), 0, {}, run_id="plain"), tmp_path / "runs")
    (folder / "run.json").unlink()
    given = ["--load", "users=8", "--load", "user_classes=AlbumsUser", "--load", "run_time=20s"]
    plain = read_run(folder, load=cli_load(given[1::2]))  # what the gate reads: its identity and start
    start = datetime.fromisoformat(plain.started_at.replace("Z", "+00:00")) - timedelta(days=1)
    rng = np.random.default_rng(3)
    past = [scaled(dataclasses.replace(plain, branch="main"), i, noisy(plain, rng, 0.01), first=start)
            for i in range(8)]  # fmt: skip
    store = stored(tmp_path / "h.sqlite", past)

    res = swarmbench("compare", "--history", store, folder, *given, "-o", tmp_path / "gate")
    assert res.returncode in (0, 3), res.stdout + res.stderr
    result = json.loads((tmp_path / "gate" / "compare.json").read_text())
    assert result["baseline"] == [r.run_id for r in past] and result["candidate"] == ["plain"]
    assert result["history"]["runs"] == 8 and (tmp_path / "gate" / "compare.html").is_file()

    without = swarmbench("compare", "--history", store, folder, "-o", tmp_path / "no-load")
    assert_one_line_error(
        without, f"{folder}: no run.json, so its load is unknown; give it: --load", prog="swarmbench"
    )
    bad = swarmbench("compare", "--history", store, folder, "--load", "colour=red", "-o", tmp_path / "bad")
    assert_one_line_error(bad, "--load: 'colour' is not a load key", prog="swarmbench")
    ab = swarmbench("compare", REPEAT_1, folder, "--load", "users=8", "-o", tmp_path / "ab")
    assert_one_line_error(ab, "--load: only with --history", prog="swarmbench")
    assert not any((tmp_path / d).exists() for d in ("no-load", "bad", "ab"))


@pytest.mark.parametrize(
    ("command", "setting", "expected"),
    [
        (("headless",), {"SWARMBENCH_RECORD": "maybe"}, "SWARMBENCH_RECORD='maybe': expected 1 or 0"),
        (("headless", "--record"), {}, "not a swarmbench history"),
        (("headless",), {"BASELINE": "history"}, "not a swarmbench history"),
        (("sweep", "--workers", "1", "--no-report"), {"SWARMBENCH_RECORD": "1"}, "not a swarmbench history"),
        (("ab",), {"SWARMBENCH_RECORD": "1", "LOCAL": "1"}, "not a swarmbench history"),
    ],
)
def test_a_run_that_cannot_be_recorded_or_gated_stops_before_it_starts(
    tmp_path: Path, docker_shim, command: tuple[str, ...], setting: dict[str, str], expected: str
) -> None:
    """--record / SWARMBENCH_RECORD=1 and BASELINE=history open the store first: one line, exit 2,
    before Docker is asked for anything or a process starts, and the file left as it was."""
    bad = tmp_path / "notes.txt"
    bad.write_text("not a history\n")
    env = {**os.environ, "PATH": docker_shim.path, "SWARMBENCH_RESULTS": str(tmp_path / "results"),
           "SWARMBENCH_HISTORY": str(bad), **setting}  # fmt: skip
    res = swarmbench(*command, env=env, timeout=60)
    assert_one_line_error(res, expected, prog="swarmbench")
    assert docker_shim.calls() == [] and bad.read_text() == "not a history\n"
    assert not (tmp_path / "results").exists()


def test_trend_check_exits_3_until_the_regression_is_accepted(tmp_path: Path) -> None:
    """The stepped store's Aggregated p95 (+8 % at run 25) is an open regression: `trend --check`
    exits 3 and says since which run; `history triage` lists it; accepted, the check passes and
    triage lists the decision; pinned to an anchor before the step (a release), it is open again."""
    store = stepped_store(tmp_path)
    res = swarmbench("trend", "--check", "--history", store)
    assert res.returncode == 3, res.stderr
    found = json.loads(swarmbench("trend", "--check", "--json", "--history", store).stdout)
    (p95,) = [p for p in found["open"] if (p["name"], p["metric"]) == (AGGREGATED, "p95_ms")]
    assert p95["since"] in ("r24", "r25", "r26") and p95["why"] == "change point" and p95["change_pct"] > 4
    assert (
        f"since {p95['since']} (fixture)" in res.stdout
        and "open regression(s) on branch main (exit 3)" in res.stdout
    )
    assert f"since {p95['since']}" in ok("history", "triage", "--history", store)
    said = ok(
        "history", "accept", p95["since"], "--reason", "the new cache layer costs 8 %", "--history", store
    )
    assert said.startswith(f"accepted: {p95['since']} (")
    assert "already accepted" in ok(
        "history", "accept", p95["since"], "--reason", "again", "--history", store
    )
    passed = swarmbench("trend", "--check", "--history", store)
    assert passed.returncode == 0 and "no open regression on branch main (exit 0)" in passed.stdout
    triage = json.loads(ok("history", "triage", "--json", "--history", store))
    assert triage["open"] == [] and [(d["run_id"], d["reason"]) for d in triage["accepted"]] == [
        (p95["since"], "the new cache layer costs 8 %")]  # fmt: skip
    pinned = swarmbench("trend", "--check", "--anchor", "r10", "--history", store, "-o", tmp_path / "page")
    assert pinned.returncode == 3 and "anchor r1..r10" in pinned.stdout
    page = (tmp_path / "page" / "trend.html").read_text()
    assert "<h2>Open regressions: " in page and f"{AGGREGATED} p95_ms since " in page


def test_trend_check_passes_a_flat_history(tmp_path: Path) -> None:
    store = stored(tmp_path / "h.sqlite", history(30, 0.02, seed=5))
    res = swarmbench("trend", "--check", "--history", store)
    assert res.returncode == 0 and "0 change point(s)" in res.stdout, res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("history", "accept", "r3"), "history accept r3: --reason TEXT is required"),
        (("history", "accept", "nope", "--reason", "x"), "history accept nope: no such run in "),
        (("trend", "--check", "--anchor", "nope"), "--anchor nope: no such run of branch main in "),
        (("trend", "--anchor", "r3"), "trend --anchor RUN: only with --check"),
        (("trend", "--pvalue", "2"), "--pvalue 2.0: a p-value between 0 and 1"),
        (("trend", "--window", "2"), "--window 2: a window needs at least 3 runs"),
    ],
)
def test_triage_refuses_bad_input_in_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    store = stored(tmp_path / "h.sqlite", history(6, 0.02))
    before = (tmp_path / "h.sqlite").read_bytes()
    res = swarmbench(*args, "--history", store)
    assert_one_line_error(res, message, prog="swarmbench")
    assert (tmp_path / "h.sqlite").read_bytes() == before


def test_the_gate_starts_its_baseline_at_an_accepted_change_only(tmp_path: Path) -> None:
    """30 runs at 1 % noise, every p95 +20 % from the 26th run on, and a candidate at that new
    level: a change nobody accepted is no baseline, so the gate judges the candidate against the
    level before and fails it (exit 3); once `history accept` names the run the level changed at,
    the baseline starts there and the same candidate passes (exit 0)."""
    up = {(s.type, s.name, "p95_ms"): 1.20 for s in history(1, 0.0)[0].stats}
    runs = history(30, 0.01, seed=6, step=lambda i: up if i >= 25 else {})
    store = stored(tmp_path / "h.sqlite", runs)
    candidate = write_folder(at_mean(store, runs[-1], n=5), tmp_path / "runs")

    before = swarmbench("compare", "--history", store, candidate, "-o", tmp_path / "before")
    assert before.returncode == 3, before.stdout + before.stderr
    ok("history", "accept", runs[25].run_id, "--reason", "the new serializer costs 20 %", "--history", store)
    after = swarmbench("compare", "--history", store, candidate, "-o", tmp_path / "after")
    assert after.returncode == 0, after.stdout + after.stderr
    verdicts = [
        {
            (r["name"], r["metric"]): r["verdict"]
            for r in json.loads((tmp_path / d / "compare.json").read_text())["results"]
        }
        for d in ("before", "after")
    ]
    assert verdicts[0][(AGGREGATED, "p95")] == REGRESSED and verdicts[1][(AGGREGATED, "p95")] != REGRESSED
