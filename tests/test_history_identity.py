"""What makes runs comparable (swarmbench/history/record.py host_identity, read_run's key and load;
swarmbench/history/comparable.py) and what the gate does when nothing is: real run folders (copies
of tests/fixtures/exact/repeat-1 with their run.json changed), real stores (SQLite, and PostgreSQL
where the store compares), the command line in a process of its own as a user runs it."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from harness import assert_one_line_error, swarmbench
from history_runs import REPEAT_1, at_mean, base_run, history, scaled, stored, write_folder

from swarmbench.compare.trend import GATE_MIN_RUNS
from swarmbench.core.checks import AGGREGATED, REGRESSED
from swarmbench.core.exits import UsageError
from swarmbench.history import open_store, read_run
from swarmbench.history.comparable import nearest
from swarmbench.history.record import FolderError, host_identity, legacy_host
from swarmbench.history.store import HOST_RULE

BUNDLED = "http://127.0.0.1:*"
"""REPEAT_1's host as the history compares it: the bundled target on loopback, any port."""


def with_manifest(folder: Path, **changes: object) -> Path:
    """FOLDER's run.json with CHANGES (None: the key removed); FOLDER."""
    path = folder / "run.json"
    manifest = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            manifest.pop(key, None)
        else:
            manifest[key] = value
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return folder


def copy(into: Path, name: str, **changes: object) -> Path:
    folder = into / name
    shutil.copytree(REPEAT_1, folder)
    return with_manifest(folder, **changes)


# --- the host: the bundled target's port is not its identity ----------------------------------------


@pytest.mark.parametrize(
    ("host", "bundled", "identity"),
    [
        ("http://127.0.0.1:41234", True, BUNDLED),  # LOCAL=1: a free port per process
        ("http://127.0.0.1:41234", False, "http://127.0.0.1:41234"),  # a service of one's own
        ("http://localhost:8089", True, "http://localhost:*"),
        ("https://[::1]:5000/", True, "https://[::1]:*"),
        ("http://127.0.0.2:18093", True, "http://127.0.0.2:*"),  # all of 127.0.0.0/8 is loopback
        ("http://target:8080", True, "http://target:8080"),  # compose's bundled target: one name, one port
        ("https://staging.example.com:8443", False, "https://staging.example.com:8443"),
        ("https://staging.example.com:8443", True, "https://staging.example.com:8443"),  # not loopback
        ("http://127.0.0.1", True, "http://127.0.0.1"),  # no port to drop
        ("", False, ""),
    ],
)
def test_host_identity(host: str, bundled: bool, identity: str) -> None:
    assert host_identity(host, bundled=bundled) == identity


@pytest.mark.parametrize(
    ("host", "read"),
    [
        ("http://127.0.0.1:41234", BUNDLED),  # a port the system chose: LOCAL=1's target
        ("http://127.0.0.1:32768", BUNDLED),
        ("http://127.0.0.1:32767", "http://127.0.0.1:32767"),  # someone chose it: their service
        ("http://localhost:8080", "http://localhost:8080"),
        ("https://staging.example.com:50000", "https://staging.example.com:50000"),
        (BUNDLED, BUNDLED),
    ],
)
def test_a_host_stored_before_the_rule(host: str, read: str) -> None:
    assert legacy_host(host) == read


def test_runs_of_the_bundled_target_on_other_ports_share_a_host(tmp_path: Path) -> None:
    a = read_run(copy(tmp_path, "a", host="http://127.0.0.1:41234"))
    b = read_run(copy(tmp_path, "b", host="http://127.0.0.1:52001", run_id="b"))
    own = read_run(copy(tmp_path, "own", host="http://127.0.0.1:41234", target=None, run_id="own"))
    assert a.host == b.host == BUNDLED and own.host == "http://127.0.0.1:41234"
    assert a.fingerprint == b.fingerprint == own.fingerprint  # the load is the same: only the host tells


# --- a run's key: a copy is one run; no run.json: a load given, a content key ------------------------


def test_a_copied_folder_is_one_run(history_store: str, tmp_path: Path) -> None:
    first = copy(tmp_path, "results", host="http://127.0.0.1:41234")
    renamed = tmp_path / "backup" / "renamed"
    shutil.copytree(first, renamed)
    assert read_run(first).run_key == read_run(renamed).run_key == "repeat-1@2026-11-24T21:43:23.453Z"
    with open_store(history_store) as store:
        assert store.add_many([first, renamed]) == [True, False]
        assert store.count() == 1


def bare(into: Path, name: str) -> Path:
    """REPEAT_1 as plain Locust leaves a run: its CSVs, no run.json, no HDR files."""
    folder = into / name
    folder.mkdir(parents=True)
    for csv_name in ("locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv"):
        if (REPEAT_1 / csv_name).exists():
            shutil.copy(REPEAT_1 / csv_name, folder / csv_name)  # copy(): a new mtime, as cp gives
    return folder


def test_a_folder_without_run_json_needs_its_load(tmp_path: Path) -> None:
    folder = bare(tmp_path, "locust-run")
    with pytest.raises(FolderError) as e:
        read_run(folder)
    assert str(e.value).startswith(
        f"{folder}: no run.json, so its load is unknown; give it: --load KEY=VALUE"
    )
    with pytest.raises(FolderError, match="'threads' is not a load key"):
        read_run(folder, load={"threads": 4})
    run = read_run(folder, load={"users": 8, "user_classes": "AlbumsHttpUser"})
    assert run.load["users"] == 8 and run.load["user_classes"] == ["AlbumsHttpUser"]
    assert run.load["run_time"] is None and set(run.load) == set(read_run(REPEAT_1).load)
    other = bare(tmp_path / "elsewhere", "another-name")
    os.utime(other / "locust_stats.csv", (0, 0))
    again = read_run(other, load={"users": 8})
    assert run.run_key == again.run_key and run.run_key.startswith("sha256:")  # content, not name or time
    assert run.run_id == "locust-run" and again.run_id == "another-name"  # shown, not the identity


def test_history_add_without_run_json_is_refused_in_one_line(tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    folder, copied = bare(tmp_path, "plain"), bare(tmp_path / "copy", "plain-copy")
    res = swarmbench("history", "add", REPEAT_1, folder, "--history", store)
    assert_one_line_error(
        res, f"{folder}: no run.json, so its load is unknown", "--load KEY=VALUE", prog="swarmbench"
    )
    res = swarmbench("history", "list", "--history", store)
    assert res.stdout.startswith("0 run(s)")  # all or none: REPEAT_1 was not added either
    bad = swarmbench("history", "add", folder, "--load", "users", "--history", store)
    assert_one_line_error(bad, "--load 'users': expected KEY=VALUE", prog="swarmbench")
    bad = swarmbench("history", "add", folder, "--load", "threads=4", "--history", store)
    assert_one_line_error(bad, "--load: 'threads' is not a load key", prog="swarmbench")
    res = swarmbench("history", "add", folder, copied, "--load", "users=8", "--load", 'user_classes=["A"]',
                     "--history", store)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[1] == f"already stored: {copied} -> {store}"  # a copy is the same run
    with open_store(store) as opened:
        (run,) = opened.runs()
    assert (run.load["users"], run.load["user_classes"]) == (8, ["A"])


# --- old stores: their hosts upgraded once -----------------------------------------------------------


def test_a_store_from_before_the_rule_is_upgraded_once(history_store: str, tmp_path: Path) -> None:
    runs = history(GATE_MIN_RUNS + 2, 0.01, seed=3)
    stored(history_store, runs)
    old_hosts = {
        "r0": "http://127.0.0.1:41234",
        "r1": "http://127.0.0.1:52001",
        "r2": "http://127.0.0.1:8080",
    }
    for run_id, host in old_hosts.items():  # as schema 1 stored them: the port as run.json had it
        _execute(history_store, f"UPDATE history_runs SET host = '{host}' WHERE run_id = '{run_id}'")
    _execute(history_store, f"DELETE FROM history_meta WHERE key = '{HOST_RULE[0]}'")
    with open_store(history_store) as store:
        hosts = {r.run_id: r.host for r in store.runs()}
        assert hosts["r0"] == hosts["r1"] == hosts["r3"] == BUNDLED  # the free ports merged
        assert hosts["r2"] == "http://127.0.0.1:8080"  # a port someone chose is theirs
        series = store.series(runs[0].fingerprint, BUNDLED, "t", "main")
        assert len(series.runs) == len(runs) - 1
    own = "http://127.0.0.1:45000"  # a later run of one's own service on a system-chosen port
    _execute(history_store, f"UPDATE history_runs SET host = '{own}' WHERE run_id = 'r4'")
    with open_store(history_store) as store:  # upgraded once: a row written since is never rewritten
        assert {r.run_id: r.host for r in store.runs()}["r4"] == own


# --- the gate: comparable across ports; nothing comparable is loud ----------------------------------


def past_folders(tmp_path: Path, n: int, noise: float = 0.01) -> tuple[str, list]:
    """N past runs of main as real folders, each from another invocation (another free port),
    added with `swarmbench history add`; the store and the runs."""
    runs = history(n, noise, seed=7)
    folders = [with_manifest(write_folder(r, tmp_path / "main"), host=f"http://127.0.0.1:{40000 + 7 * i}")
               for i, r in enumerate(runs)]  # fmt: skip
    store = str(tmp_path / "h.sqlite")
    res = swarmbench("history", "add", *folders, "--branch", "main", "--testbed", "t", "--history", store)
    assert res.returncode == 0 and res.stdout.count("added: ") == n, res.stderr
    return store, runs


def candidate(store: str, runs: list, tmp_path: Path, factor: float, port: int, **changes: object) -> Path:
    same = at_mean(store, runs[-1])
    run = scaled(same, 101, {(s.type, s.name, "p95_ms"): factor for s in same.stats}, run_id=f"pr-{port}")
    folder = write_folder(run, tmp_path / "pr")
    return with_manifest(folder, host=f"http://127.0.0.1:{port}", **changes)


def test_a_slower_run_on_another_port_is_regressed(tmp_path: Path) -> None:
    """The issue's goal: a +30 % candidate against the same local target on another port: exit 3."""
    store, runs = past_folders(tmp_path, 12)
    slower = candidate(store, runs, tmp_path, 1.30, port=55555)
    res = swarmbench("compare", "--history", store, slower, "-o", tmp_path / "gate")
    assert res.returncode == 3, res.stdout + res.stderr
    result = json.loads((tmp_path / "gate" / "compare.json").read_text())
    p95 = next(r for r in result["results"] if (r["name"], r["metric"]) == (AGGREGATED, "p95"))
    assert p95["verdict"] == REGRESSED and len(result["baseline"]) == 12  # all 12 (it takes up to 20)
    assert "NO COMPARABLE RUN" not in res.stderr


def test_no_comparable_run_is_loud_and_names_what_differs(tmp_path: Path) -> None:
    store, runs = past_folders(tmp_path, GATE_MIN_RUNS + 1)
    slower = candidate(store, runs, tmp_path, 1.50, port=55556, users=16, testbed="ci-runner")
    out = tmp_path / "gate"
    res = swarmbench("compare", "--history", store, slower, "-o", out)
    assert res.returncode == 0, res.stderr  # without --require-baseline: said, not failed
    lines = res.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("swarmbench compare: warning: ") for line in lines)
    assert "NO COMPARABLE RUN" in lines[0] and f"before {slower}" in lines[0]
    assert "--require-baseline makes it exit 3" in lines[0]
    assert f"nearest configuration: {GATE_MIN_RUNS + 1} run(s) of main on {BUNDLED}, testbed t" in lines[1]
    assert lines[1].endswith("differs in users 16 here, 8 there; testbed ci-runner here, t there")
    assert (out / "compare.txt").read_text() == "\n".join(line.split(": ", 1)[1] for line in lines) + "\n"
    result = json.loads((out / "compare.json").read_text())
    assert (result["verdict"], result["comparable_runs"], result["exit_code"]) == (None, 0, 0)
    assert result["nearest"]["differences"] == [
        {"field": "users", "candidate": 16, "history": 8},
        {"field": "testbed", "candidate": "ci-runner", "history": "t"},
    ]

    required = swarmbench("compare", "--history", store, slower, "-o", tmp_path / "g2", "--require-baseline")
    assert required.returncode == 3 and "exit 3 (--require-baseline)" in required.stderr
    env = {**os.environ, "SWARMBENCH_REQUIRE_BASELINE": "1"}  # what BASELINE=history's gate inherits
    by_env = swarmbench("compare", "--history", store, slower, "-o", tmp_path / "g3", env=env)
    assert by_env.returncode == 3, by_env.stderr
    assert json.loads((tmp_path / "g3" / "compare.json").read_text())["require_baseline"] is True
    bad = swarmbench(
        "compare", "--history", store, slower, env={**env, "SWARMBENCH_REQUIRE_BASELINE": "yes!"}
    )
    assert_one_line_error(bad, "SWARMBENCH_REQUIRE_BASELINE='yes!': expected 1 or 0", prog="swarmbench")


def test_another_target_on_loopback_is_not_the_bundled_one(tmp_path: Path) -> None:
    store, runs = past_folders(tmp_path, GATE_MIN_RUNS)
    own = candidate(store, runs, tmp_path, 1.0, port=55557, target=None)  # no counters: not ours
    res = swarmbench("compare", "--history", store, own, "-o", tmp_path / "gate", "--require-baseline")
    assert res.returncode == 3 and "NO COMPARABLE RUN" in res.stderr
    assert f"differs in host http://127.0.0.1:55557 here, {BUNDLED} there" in res.stderr


def test_an_empty_history_says_so(tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    folder = copy(tmp_path, "run")
    res = swarmbench("compare", "--history", store, folder, "-o", tmp_path / "gate")
    assert res.returncode == 0 and f"history {store} holds no runs at all" in res.stderr
    assert json.loads((tmp_path / "gate" / "compare.json").read_text())["nearest"] is None


def test_nearest_prefers_fewest_differences_then_the_branch_then_most_runs(history_store: str) -> None:
    base = base_run()
    runs = [scaled(base, i, {}, run_id=f"f{i}") for i in range(3)]
    feature = [dataclasses.replace(r, branch="feature") for r in runs]  # 3 runs, 1 field off: branch
    users = [dataclasses.replace(r, run_id=f"u{i}", run_key=f"u{i}@x", load={**r.load, "users": 99})
             for i, r in enumerate(runs[:2])]  # fmt: skip  # 2 runs of main, 1 field off: users
    far = dataclasses.replace(runs[0], run_id="far", run_key="far@x", testbed="other", branch="feature")
    stored(history_store, [*feature, *users, far])
    with open_store(history_store) as store:
        configs = store.configurations()
    found = nearest(configs, base.load, base.host, base.testbed, "main")
    assert found is not None and found.configuration.runs == 2  # a tie on one field: main's, not more runs
    assert [(d.field, d.candidate, d.history) for d in found.differences] == [("users", 8, 99)]
    found = nearest(configs, base.load, base.host, base.testbed, "feature")
    assert found is not None and found.differences == () and found.configuration.runs == 3
    assert "the same, but none is a complete run before this one" in found.text()
    assert nearest([], base.load, base.host, base.testbed, "main") is None


# --- names: a new or renamed name is never filled ----------------------------------------------------


def test_a_renamed_name_is_missing_before_it_existed_never_filled(history_store: str) -> None:
    runs = history(6, 0.01, seed=2)
    renamed = [
        dataclasses.replace(r, stats=tuple(dataclasses.replace(s, name="GET /v2/albums")
                                           if s.name == "GET /albums" else s for s in r.stats))
        if i >= 3 else r
        for i, r in enumerate(runs)
    ]  # fmt: skip
    stored(history_store, renamed)
    with open_store(history_store) as store:
        series = store.series(runs[0].fingerprint, runs[0].host, "t", "main")
    old, new = series.values[("GET", "GET /albums")], series.values[("GET", "GET /v2/albums")]
    assert [math.isnan(v) for v in old["p95_ms"]] == [False] * 3 + [True] * 3
    assert [math.isnan(v) for v in new["p95_ms"]] == [True] * 3 + [False] * 3


# --- default output folders never collide -----------------------------------------------------------


class Frozen(datetime):
    @classmethod
    def now(cls, tz=None):  # every gate starts in the same second
        return datetime(2027, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_two_gates_in_one_second_write_two_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's collision: `compare --history H slow` then `... same` in the same second; the
    default folder gets -2 where the first took it; a chosen -o holding a comparison is refused."""
    from swarmbench import cli
    from swarmbench.compare import commands

    runs = history(12, 0.01, seed=5)
    store = stored(tmp_path / "h.sqlite", runs)
    same = at_mean(store, runs[-1])
    slower = scaled(same, 101, {(s.type, s.name, "p95_ms"): 1.2 for s in same.stats}, run_id="slower")
    slow_dir, same_dir = write_folder(slower, tmp_path / "runs"), write_folder(same, tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(commands, "datetime", Frozen)
    assert cli.main(["compare", "--history", store, str(slow_dir)]) == 3
    assert cli.main(["compare", "--history", store, str(same_dir)]) == 0
    first, second = (
        tmp_path / "results" / "compare-20270301T120000Z",
        tmp_path / "results" / "compare-20270301T120000Z-2",
    )
    assert json.loads((first / "compare.json").read_text())["candidate"] == ["slower"]
    assert json.loads((second / "compare.json").read_text())["candidate"] == ["new"]
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--history", store, str(same_dir), "-o", str(first)])
    assert e.value.code == 2


def test_a_default_ab_folder_is_never_another_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make ab` twice in one second: the second is neither refused nor resumes the first's folder:
    it gets ab-...Z-2 (an AB_ID given by name keeps its rules: resumed, or refused)."""
    from swarmbench.runner import ab

    class Reached(Exception):
        pass

    roots: list[Path] = []

    def load_points(root: Path, s, env):  # where run_ab would start the runs
        roots.append(root)
        raise Reached

    monkeypatch.setattr(ab, "default_ab_id", lambda: "ab-20270301T120000Z")
    monkeypatch.setattr(ab, "load_points", load_points)
    env = {"SWARMBENCH_RESULTS": str(tmp_path), "A": "ALBUMS_STORE=mutex", "B": "ALBUMS_STORE=sharded"}
    for _ in range(2):
        with pytest.raises(Reached):
            ab.run_ab(env, lambda words, aa: None)
    assert [r.name for r in roots] == ["ab-20270301T120000Z", "ab-20270301T120000Z-2"]
    assert all(r.is_dir() for r in roots)
    with pytest.raises(UsageError, match="holds no ab.json to resume"):
        ab.ab_settings({**env, "AB_ID": "ab-20270301T120000Z"}, lambda words, aa: None)


def _execute(spec: str, sql: str) -> None:
    if "://" in spec:
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute(sql)
    else:
        with sqlite3.connect(spec) as conn:
            conn.execute(sql)
        conn.close()
