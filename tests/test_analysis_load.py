"""Loader: discovery, Locust's CSV quirks, run.json, old Locust versions — on REAL fixture files."""

from __future__ import annotations

import csv
import json
import shutil
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from swarmbench.analysis import columns as C
from swarmbench.analysis.locust_csv import AnalysisError, AnalysisWarning, read_history, read_stats
from swarmbench.analysis.runs import discover_runs, load_run, load_runs, manifest_from_dict, read_manifest

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"
SWEEP = sorted((FIXTURES / "sweep").iterdir())
LEGACY = sorted((FIXTURES / "legacy").iterdir())
LOCAL_HTTP = next(p for p in SWEEP if p.name.endswith("_AlbumsHttpUser_local"))
W2_HTTP = next(p for p in SWEEP if p.name.endswith("_AlbumsHttpUser_w2"))


def copy_run(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def raw_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_fixtures_are_real_locust_output():
    # Guards against the suite passing on empty or hand-made data.
    assert len(SWEEP) == 9 and len(LEGACY) == 2
    for folder in SWEEP:
        manifest = json.loads((folder / C.MANIFEST).read_text())
        assert manifest["locust_version"] == "2.47.0"
        assert (folder / C.STATS_CSV).read_bytes().count(b"\r\n") >= 5  # Locust's CRLF
    assert {p.name for p in LEGACY} == {"locust-2.15.1", "locust-2.8.6"}


def test_discover_finds_every_run_folder_recursively():
    found = discover_runs([FIXTURES])
    assert sorted(found) == sorted(SWEEP + LEGACY)


def test_discover_accepts_a_stats_csv_or_run_json_path_and_dedupes():
    found = discover_runs([LOCAL_HTTP / C.STATS_CSV, LOCAL_HTTP / C.MANIFEST, LOCAL_HTTP])
    assert found == [LOCAL_HTTP]


@pytest.mark.parametrize("name", ["nope", "empty"])
def test_discover_errors_name_the_path(tmp_path, name):
    path = tmp_path / name
    if name == "empty":
        path.mkdir()
    with pytest.raises(AnalysisError) as e:
        discover_runs([path])
    assert str(path) in str(e.value)


def test_stats_rows_keyed_by_type_and_name_with_aggregated_last():
    stats = read_stats(W2_HTTP / C.STATS_CSV)
    assert list(stats[C.ENDPOINT]) == ["GET /albums", "GET /albums/{id}", "POST /albums", "Aggregated"]
    assert list(stats[C.METHOD]) == ["GET", "GET", "POST", ""]
    assert not any(n.endswith("\r") for n in stats[C.ENDPOINT_NAME])  # CRLF fully stripped
    # Locust's own invariant, read back exactly: endpoints sum to the Aggregated row.
    per_endpoint = stats[stats[C.ENDPOINT] != C.AGGREGATED]
    agg = stats[stats[C.ENDPOINT] == C.AGGREGATED].iloc[0]
    assert per_endpoint[C.REQUESTS].sum() == agg[C.REQUESTS] > 1000
    assert per_endpoint[C.FAILURES].sum() == agg[C.FAILURES] > 0


def test_history_quirks_na_and_empty_windows_become_nan():
    path = LOCAL_HTTP / C.HISTORY_CSV
    history = read_history(path)
    raw = raw_rows(path)
    assert len(history) == len(raw)
    na_rows = [i for i, r in enumerate(raw) if r["50%"] == "N/A"]
    zero_rows = [i for i, r in enumerate(raw) if r["100%"] == "0"]
    assert na_rows and zero_rows  # both quirks are in this real file
    assert history[C.P50_MS].iloc[na_rows].isna().all()
    assert history[C.P95_MS].iloc[zero_rows].isna().all()
    valid = [i for i, r in enumerate(raw) if r["50%"] not in ("N/A", "0") and r["100%"] != "0"]
    assert np.allclose(history[C.P50_MS].iloc[valid], [float(raw[i]["50%"]) for i in valid])
    assert history.attrs["window"] == "10s"  # --csv-full-history: per-endpoint rows present
    assert set(history[C.ENDPOINT].cat.categories) == {
        "GET /albums", "GET /albums/{id}", "POST /albums", "Aggregated"
    }  # fmt: skip
    assert history[C.TIME_S].iloc[0] == 0
    assert history[C.TOTAL_REQUESTS].iloc[-1] == float(raw[-1]["Total Request Count"])


def test_local_run_counts_as_one_worker_and_reads_run_json():
    run = load_run(LOCAL_HTTP)
    assert run.meta.mode == "local" and run.meta.workers_connected == 0  # what the harness writes
    assert run.workers == 1
    assert run.user_class == "AlbumsHttpUser" and run.users == 12
    assert run.meta.store == "rwmutex"
    assert run.failures is not None and run.failures[C.OCCURRENCES].sum() == run.aggregated[C.FAILURES]


def test_distributed_and_processes_runs_use_connected_workers():
    workers = {load_run(p).meta.mode: load_run(p).workers for p in SWEEP if not p.name.endswith("_local")}
    assert workers.keys() == {"distributed", "processes"}
    assert {load_run(p).workers for p in SWEEP} == {1, 2, 3}


@pytest.mark.parametrize("folder", LEGACY, ids=lambda p: p.name)
def test_older_locust_without_run_json_loads_and_warns_what_is_unknown(folder):
    with pytest.warns(AnalysisWarning) as record:
        run = load_run(folder)
    text = " ".join(str(w.message) for w in record)
    assert str(folder / C.MANIFEST) in text
    for unknown in ("user class", "worker count", "mode"):
        assert unknown in text
    assert run.workers is None and run.user_class is None and not run.has_manifest
    assert run.aggregated[C.REQUESTS] > 1000
    assert run.history is not None and len(run.history) == 1  # old Locust: flushed once in 10 s
    assert run.history.attrs["window"] == "cumulative"


def test_history_with_cut_off_last_line_warns_and_keeps_the_rest(tmp_path):
    folder = copy_run(W2_HTTP, tmp_path)
    path = folder / C.HISTORY_CSV
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # a run killed mid-write
    with pytest.warns(AnalysisWarning, match="cut off"):
        history = read_history(path)
    assert len(history) == len(raw_rows(W2_HTTP / C.HISTORY_CSV)) - 1


def test_history_with_garbage_inside_is_an_error_naming_the_line(tmp_path):
    folder = copy_run(W2_HTTP, tmp_path)
    path = folder / C.HISTORY_CSV
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace(",", ",oops", 1)
    path.write_text("".join(lines))
    with pytest.raises(AnalysisError, match=r"line 6"):
        read_history(path)


def test_stats_truncated_mid_row_is_an_error(tmp_path):
    folder = copy_run(W2_HTTP, tmp_path)
    path = folder / C.STATS_CSV
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"POST") + 30])
    with pytest.raises(AnalysisError, match="truncated") as e:
        read_stats(path)
    assert str(path) in str(e.value)


def test_custom_csv_prefix_is_found(tmp_path):
    folder = copy_run(W2_HTTP, tmp_path)
    for f in folder.glob("locust_*"):
        f.rename(folder / f.name.replace("locust_", "mytest_"))
    run = load_run(folder)
    assert run.prefix == "mytest" and run.history is not None


def test_older_header_spellings_are_mapped(tmp_path):
    # A real stats file whose header is rewritten to the pre-2.0 spellings ("# requests").
    folder = copy_run(LEGACY[0], tmp_path)
    path = folder / C.STATS_CSV
    path.write_bytes(path.read_bytes().replace(b"Request Count", b"# requests", 1))
    stats = read_stats(path)
    assert stats[C.REQUESTS].sum() > 0


def test_run_json_errors_name_field_or_line(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{\n "users": 3,\n "mode": "local"\n "x": 1}')
    with pytest.raises(AnalysisError, match=r"invalid JSON at line 4"):
        read_manifest(path)
    with pytest.raises(AnalysisError, match='"users" should be an integer'):
        manifest_from_dict({"users": "many"}, path)
    with pytest.raises(AnalysisError, match='"mode" should be one of'):
        manifest_from_dict({"mode": "cluster"}, path)
    with pytest.raises(AnalysisError, match='"users" should be an integer'):
        manifest_from_dict({"users": True}, path)


def test_load_runs_orders_by_start_time(tmp_path):
    """The sweep's runs, their start times handed out in reverse: the run whose folder name and run id
    sort first started last. Sorted by start time the order is the reverse of by name or by id, so
    this fails for a load_runs that sorts by either, or keeps discovery's (name) order."""
    by_name = [copy_run(src, tmp_path) for src in SWEEP]
    manifests = [json.loads((run / C.MANIFEST).read_text()) for run in by_name]
    starts = [m["started_at"] for m in manifests]
    for run, m, started in zip(by_name, manifests, reversed(starts), strict=True):
        moved = datetime.fromisoformat(started) - datetime.fromisoformat(m["started_at"])
        ended = datetime.fromisoformat(m["ended_at"]) + moved  # the run keeps its own duration
        m["started_at"] = started
        m["ended_at"] = ended.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        (run / C.MANIFEST).write_text(json.dumps(m))
    runs = load_runs([tmp_path])
    assert [r.folder for r in runs] == by_name[::-1]
    starts = [r.meta.started_at for r in runs]
    assert starts == sorted(starts) and len(set(starts)) == len(runs) == 9
