"""The history store (swarmbench/history/store.py) against real engines: an SQLite file and a real
PostgreSQL server (tests/pgserver.py, started once a session by conftest's `postgres`; in CI a
missing server fails these tests, locally it skips them). Real run folders only: tests/fixtures and
results/examples. The command line over it: test_history_cli.py."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from harness import FIXTURES, ROOT
from history_runs import EXAMPLES, OLD_RUNS, REPEAT_1, folders_under, loads_of

from swarmbench.history import EXACT, ROUNDED, HistoryError, export_otava, import_tree, open_store, read_run
from swarmbench.history.record import HDR_CSV_COLUMNS, METRICS, NameStats
from swarmbench.history.store import SCHEMA_VERSION, run_folders


def test_add_keeps_one_copy_and_the_exact_figures(history_store: str) -> None:
    with open_store(history_store) as store:
        assert store.add(REPEAT_1, branch="main", testbed="ci-2cpu") is True
        assert store.add(REPEAT_1, branch="main", testbed="ci-2cpu") is False
    with open_store(history_store) as store:  # reopened: it was committed
        (run,) = store.runs()
        assert (run.run_id, run.started_at, run.precision) == ("repeat-1", "2026-11-24T21:43:23.453Z", EXACT)
        assert (run.branch, run.testbed, run.git_commit, run.locust_version) == (
            "main",
            "ci-2cpu",
            "fixture",
            "2.47.0",
        )
        series = store.series(run.fingerprint, run.host, run.testbed, "main")
        hdr_rows = {(r["type"], r["name"]): r for r in _csv(REPEAT_1 / "locust_latency_hdr.csv")}
        for key, per in series.values.items():
            for metric, column in HDR_CSV_COLUMNS.items():
                assert per[metric] == [float(hdr_rows[key][column])], (key, metric)
        encoded = {
            (h["type"], h["name"]): h["hdr"]
            for h in _json(REPEAT_1 / "locust_latency_hdr.json")["histograms"]
        }
        for (type_, name), text in encoded.items():
            assert store.histograms([run.id], type_, name) == {run.id: text}
        assert store.histograms([run.id], "", "Aggregated") == {}  # the sum of its names', not stored


def test_real_folders_with_locusts_own_figures(history_store: str) -> None:
    folders = sorted(f for root in OLD_RUNS for f in run_folders(root))
    assert folders == folders_under(*OLD_RUNS) and len(folders) >= 2
    with open_store(history_store) as store:
        assert store.add_many(folders, branch="main") == [True] * len(folders)
        for folder in folders:
            (run,) = store.runs(run_id=json.loads((folder / "run.json").read_text())["run_id"])
            assert run.precision == ROUNDED  # these runs predate the HDR files
            series = store.series(run.fingerprint, run.host, run.testbed, "main")
            mine = series.runs.index(run)
            for row in _csv(folder / "locust_stats.csv"):
                per = series.values[(row["Type"], row["Name"])]
                assert per["rps"][mine] == float(row["Requests/s"])
                assert per["requests"][mine] == int(row["Request Count"])
                assert per["p99_ms"][mine] == float(row["99%"])


def test_import_reads_every_format_and_reports_a_broken_folder(history_store: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree)
    (tree / "exact" / "broken").mkdir()
    (tree / "exact" / "broken" / "locust_stats.csv").write_text((REPEAT_1 / "locust_stats.csv").read_text())
    (tree / "exact" / "broken" / "run.json").write_text("{not json")
    hidden = tree / "analysis" / "sweep" / ".aborted" / "partial"
    shutil.copytree(REPEAT_1, hidden)
    no_manifest = [f for f in folders_under(tree) if not (f / "run.json").exists()]
    with open_store(history_store) as store:
        report = import_tree(store, tree, branch="main", testbed="t")
        readable = [f for f in folders_under(tree) if f.name != "broken" and f not in no_manifest]
        assert len(report.added) == len(readable) >= 14 and not report.already and len(no_manifest) == 2
        assert report.failed == [  # a folder without run.json: its load unknown, so refused
            *(f"{f}: no run.json, so its load is unknown; give it: --load KEY=VALUE ... ("
              "locustfile, user_classes, users, wait_time, arrival_rate, albums_mix, workers, run_time, "
              "load_shape)" for f in no_manifest),
            f"{tree / 'exact' / 'broken' / 'run.json'}: invalid JSON at line 1: "
            "Expecting property name enclosed in double quotes"]  # fmt: skip
        assert {r.precision for r in store.runs() if r.run_id in ("repeat-1", "repeat-2", "step")} == {EXACT}
        given = import_tree(
            store, tree, branch="main", testbed="t", load={"users": 10, "user_classes": "B,A"}
        )
        assert (len(given.added), len(given.already)) == (2, len(readable))  # the two, load given
        legacy = store.runs(run_id="locust-2.8.6")[0]
        assert (legacy.precision, legacy.started_at) == (ROUNDED, "2026-11-21T19:47:17.000Z")
        assert legacy.load == {"locustfile": None, "user_classes": ["A", "B"], "users": 10, "wait_time": None,
                               "arrival_rate": None, "albums_mix": None, "workers": None, "run_time": None,
                               "load_shape": None}  # fmt: skip
        again = import_tree(store, tree, branch="main", testbed="t", load={"users": 10})
        total = len(readable) + 2
        assert (len(again.added), len(again.already), store.count()) == (0, total, total)


def test_a_failed_add_writes_nothing(history_store: str) -> None:
    run = read_run(REPEAT_1, branch="main", testbed="t")
    broken = dataclasses.replace(run, run_key="broken@1", stats=(*run.stats, run.stats[0]))  # a name twice
    with open_store(history_store) as store:
        with pytest.raises(HistoryError) as e:
            store.add_runs([run, broken])  # one transaction: the good run goes too
        assert "\n" not in str(e.value) and str(e.value).startswith(store.where)
        assert store.count() == 0
        assert store.add_runs([run]) == [True]


def test_partial_runs_stay_out_of_a_series(history_store: str) -> None:
    run = read_run(REPEAT_1, branch="main", testbed="t")
    stopped = dataclasses.replace(run, run_key="stopped@1", run_id="stopped", status="interrupted")
    with open_store(history_store) as store:
        store.add_runs([run, stopped])
        assert len(store.runs()) == 2
        series = store.series(run.fingerprint, run.host, "t", "main")
        assert [r.run_id for r in series.runs] == ["repeat-1"]


@pytest.mark.parametrize("content", ["text", "other tables", "folder"])
def test_a_file_that_is_not_a_history_is_refused_untouched(tmp_path: Path, content: str) -> None:
    path = tmp_path / "history.sqlite"
    if content == "text":
        path.write_text("run_id,started_at\nr1,2026-01-01\n")
    elif content == "other tables":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT)")
        conn.close()
    else:
        path.mkdir()
    before = _snapshot(tmp_path)
    with pytest.raises(HistoryError) as e:
        open_store(path)
    assert str(e.value).startswith(f"{path}: ") and "\n" not in str(e.value)
    assert _snapshot(tmp_path) == before  # not a byte written, no -wal or -shm beside it


def test_a_corrupt_history_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    with open_store(path) as store:
        store.add(REPEAT_1)
    data = bytearray(path.read_bytes())
    data[100:4096] = bytes(i * 7 % 256 for i in range(3996))  # page 1 past the header: the schema
    path.write_bytes(bytes(data))
    for wal in tmp_path.glob("history.sqlite-*"):
        wal.unlink()
    with pytest.raises(HistoryError) as e:
        open_store(path)
    assert str(e.value).startswith(f"{path}: ") and "\n" not in str(e.value)


def test_a_newer_schema_is_refused(history_store: str, tmp_path: Path) -> None:
    open_store(history_store).close()
    _execute(history_store, "UPDATE history_meta SET value = '99' WHERE key = 'schema_version'")
    before = _snapshot(tmp_path)
    with pytest.raises(HistoryError) as e:
        open_store(history_store)
    message = str(e.value)  # (the test URLs have no password to hide)
    assert (
        message.startswith(f"{history_store}: ")
        and "version 99" in message
        and f"({SCHEMA_VERSION})" in message
    )
    assert _snapshot(tmp_path) == before


def test_a_schema_1_store_is_migrated_on_open(history_store: str, tmp_path: Path) -> None:
    """Schema 1 (no history_triage: what every store was before triage) is taken to 2 on open, in one
    transaction: its runs kept, its version 2, and a decision can be recorded; opened again, nothing
    more happens."""
    with open_store(history_store) as store:
        store.add_many([REPEAT_1, FIXTURES / "exact" / "repeat-2"], branch="main", testbed="t")
    _execute(history_store, "DROP TABLE history_triage")  # exactly schema 1's tables
    _execute(history_store, "UPDATE history_meta SET value = '1' WHERE key = 'schema_version'")
    with open_store(history_store) as store:
        runs = store.runs()
        assert [r.run_id for r in runs] == ["repeat-1", "repeat-2"]
        assert store.accepted(runs[1].fingerprint, runs[1].host, "t", "main") == []
        decision = store.accept(runs[1], "a known new level", "me")
        assert decision is not None and decision.reason == "a known new level"
        assert store.accept(runs[1], "again", "you") is None  # the first decision stays
    assert SCHEMA_VERSION == 2 and _version(history_store) == "2"
    with open_store(history_store) as store:
        (kept,) = store.decisions()
        assert (kept.run.run_id, kept.decision, kept.reason, kept.decided_by) == (
            "repeat-2", "accepted", "a known new level", "me")  # fmt: skip
        assert store.accepted(runs[1].fingerprint, runs[1].host, "t", "main") == [runs[1].run_key]
        assert store.accepted(runs[1].fingerprint, runs[1].host, "t", "feature") == []


def _version(spec: str) -> str:
    if "://" in spec:
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            return conn.execute("SELECT value FROM history_meta WHERE key = 'schema_version'").fetchone()[0]
    conn = sqlite3.connect(spec)
    try:
        return conn.execute("SELECT value FROM history_meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        conn.close()


CHILD = """
import dataclasses, sys, time
from pathlib import Path
from swarmbench.history import open_store, read_run
spec, folder, who, n, go = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
shared = read_run(folder, branch="main", testbed="t")
runs = [dataclasses.replace(shared, run_id=f"{who}-{k}", run_key=f"{who}-{k}@x") for k in range(n)]
while not go.exists():
    time.sleep(0.002)
with open_store(spec) as store:  # all open at once: the first use creates the tables
    for k, run in enumerate(runs):
        store.add_runs([run])
        if k == n // 2:
            store.add_runs([shared])
"""


def test_processes_adding_at_once_lose_nothing(history_store: str, tmp_path: Path) -> None:
    go, procs, per_process = tmp_path / "go", 4, 15
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, history_store, str(REPEAT_1), f"p{i}", str(per_process), str(go)],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in range(procs)
    ]
    time.sleep(1.0)  # every child has imported and waits for the go
    go.touch()
    errors = [c.communicate(timeout=120)[1] for c in children]
    assert [c.returncode for c in children] == [0] * procs, errors
    with open_store(history_store) as store:
        assert store.count() == procs * per_process + 1
        assert len(store.runs(run_id="repeat-1")) == 1


def test_otava_export_round_trips(history_store: str, tmp_path: Path) -> None:
    with open_store(history_store) as store:
        import_tree(store, EXAMPLES, branch="main", testbed="t")
        store.add(REPEAT_1, branch="main", testbed="t")
        store.add(FIXTURES / "exact" / "repeat-2", branch="feature", testbed="t")
        files = export_otava(store, tmp_path / "otava")
        config = yaml.safe_load((tmp_path / "otava" / "otava.yaml").read_text())
        points = loads_of(folders_under(EXAMPLES))  # each sweep point is a load of its own
        assert len(files) == len(config["tests"]) == len(points) + 1  # and the repeats' one
        stored = {r.run_id: r for r in store.runs()}
        checked = 0
        for test in config["tests"].values():
            rows = _csv(Path(test["file"]))
            assert rows and test["type"] == "csv" and test["time_column"] == "time"
            for row in rows:
                run = stored[row["run_id"]]
                assert (row["commit"], row["branch"]) == (run.git_commit, run.branch)
                assert row["time"] == run.started_at[:10] + " " + run.started_at[11:19] + " +0000"
                series = store.series(run.fingerprint, run.host, run.testbed, run.branch)
                i = series.runs.index(run)
                for metric, spec_ in test["metrics"].items():
                    name, field = metric.rsplit(".", 1)
                    (per,) = [v for (_t, n), v in series.values.items() if n == name]
                    assert float(row[spec_["column"]]) == per[field][i] and not math.isnan(per[field][i])
                    assert spec_["direction"] == (1 if field == "rps" else -1)
                    checked += 1
        runs = len(folders_under(EXAMPLES)) + 2  # the examples and the two repeats
        assert checked == runs * 4 * 8  # runs x (3 names + Aggregated) x OTAVA_METRICS, all complete
        (repeats,) = [f for f in files if any(r["run_id"] == "repeat-1" for r in _csv(f))]
        assert {r["branch"] for r in _csv(repeats)} == {"main", "feature"}  # otava analyze --branch


def test_psycopg_missing_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what `import psycopg` meets without it
    with pytest.raises(HistoryError) as e:
        open_store("postgresql://me:secret@127.0.0.1:1/h")
    assert str(e.value) == (
        "postgresql://me:***@127.0.0.1:1/h: a PostgreSQL history needs psycopg: "
        "pip install 'swarmbench[history]'"
    )


def test_hdr_columns_are_the_plugins() -> None:
    from swarmbench.latency import histogram

    assert set(HDR_CSV_COLUMNS.values()) <= set(histogram.CSV_COLUMNS)


# --- helpers ---


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() if p.is_file() else b"<dir>" for p in sorted(folder.rglob("*"))}


def _execute(spec: str, sql: str) -> None:
    if "://" in spec:
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute(sql)
    else:
        with sqlite3.connect(spec) as conn:
            conn.execute(sql)
        conn.close()


def _runs_named(names_of: list[list[str]], hour: int) -> list:
    """One run per item of NAMES_OF (the request names it has, Aggregated besides), a minute apart
    from HOUR o'clock, every figure distinct (run i, name k, metric j -> a number saying so); name 1's
    p99.9 missing (NULL) in every third run."""
    template = read_run(REPEAT_1, branch="main", testbed="series")
    runs = []
    for i, names in enumerate(names_of):
        stats = []
        for k, name in enumerate(["Aggregated", *names]):
            figures = {m: 1000.0 * i + 10 * k + j for j, m in enumerate(METRICS[2:])}
            if name == names_of[0][0] and i % 3 == 0:
                figures["p999_ms"] = None
            stats.append(NameStats(type="" if k == 0 else "GET", name=name, requests=100 + i, failures=k,
                                   exact=True, **figures))  # fmt: skip
        started = f"2027-01-01T{hour:02d}:{i:02d}:00.000Z"
        runs.append(dataclasses.replace(template, run_key=f"series-{hour}-{i}", run_id=f"r{hour}-{i}",
                                        started_at=started, stats=tuple(stats)))  # fmt: skip
    return runs


def test_a_series_reads_back_every_figure_in_its_place(history_store: str) -> None:
    """Store.series, both of its readings: every run with the same names (one configuration, runs
    added newest first, so that the ids run against time) and names missing from some runs (NaN
    there); NULL figures read as NaN, counts as floats, names in the engine's order."""
    dense = _runs_named([["/b", "/a", "/c"]] * 7, hour=1)
    sparse = _runs_named([["/a", "/b"], ["/a"], ["/a", "/c"], ["/c"], ["/a", "/b", "/c"]], hour=2)
    sparse = [dataclasses.replace(r, load={**r.load, "users": 7}) for r in sparse]  # another configuration
    with open_store(history_store) as store:
        store.add_runs(dense[4:][::-1])
        store.add_runs(dense[:4][::-1])
        store.add_runs(sparse)
        for runs in (dense, sparse):
            series = store.series(runs[0].fingerprint, runs[0].host, "series", "main")
            assert [r.run_id for r in series.runs] == [r.run_id for r in runs]
            assert list(series.values) == sorted(series.values)  # ASCII names: any engine's order
            for (type_, name), per in series.values.items():
                for i, run in enumerate(runs):
                    stats = {(s.type, s.name): s for s in run.stats}.get((type_, name))
                    for metric in METRICS:
                        value = getattr(stats, metric) if stats else None
                        got = per[metric][i]
                        assert type(got) is float, (name, metric, i)
                        assert got == value or (value is None and math.isnan(got)), (name, metric, i)


def test_a_read_run_is_the_frozen_records_its_fields_make() -> None:
    """read_run builds its records without their __init__: the same objects, frozen."""
    data = read_run(REPEAT_1, testbed="t")
    for record in (data, *data.stats):
        remade = type(record)(**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)})
        assert record == remade and repr(record) == repr(remade) and vars(record) == vars(remade)
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.run_id = "x" if record is data else record.name  # type: ignore[misc,union-attr]
