"""Exact latency, the pure parts: per-window HDR histograms shipped by two generators merge into the
histograms of all their samples; p99 <= max in every window; corrupt or truncated files are one-line
errors naming the file and row; folders from before the files fall back to Locust's numbers.
The real runs: test_latency.py.
"""

from __future__ import annotations

import csv
import json
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest
from harness import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmbench.analysis.summary import evaluate_folder, exact_book
from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED, parse_checks
from swarmbench.core.exits import InputError
from swarmbench.latency.histogram import (
    HIGHEST_US,
    LatencyBook,
    Samples,
    add_counts,
    bucket_us,
    clamped,
    clear,
    exact_value,
    new_histogram,
    to_us,
)
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import WINDOW_COLUMNS, Windows, window_of

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

EXAMPLES = sorted(p.parent for p in ROOT.glob("tests/fixtures/examples-2026-11-21/*/run.json"))
"""Folders from before the exact latency files (results/examples' sweep of 2026-11-21, one kept)."""
NAMES = [("GET", "GET /albums"), ("GET", "GET /albums/{id}"), ("POST", "POST /albums")]


def synthetic(seed: int, n: int = 6_000) -> list[tuple[int, str, str, float, bool]]:
    """(window, type, name, ms, failed): a long-tailed latency mix over 12 windows."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        request_type, name = rng.choice(NAMES)
        ms = 100 + rng.lognormvariate(0.0, 1.2) + (900 if i % 500 == 0 else 0)
        out.append((rng.randrange(12), request_type, name, ms, rng.random() < 0.05))
    return out


def test_two_workers_windows_merge_into_the_histograms_of_all_samples(monkeypatch):
    monkeypatch.setattr(Recorder, "FLUSH_AT", 701)  # several pieces per window, as reports make
    samples = synthetic(1)
    workers, master = [Recorder(), Recorder()], Windows()
    for i, (window, request_type, name, ms, failed) in enumerate(samples):
        workers[i % 2].record(window, request_type, name, ms, failed)
        if i % 1_500 == 0:  # a report now and then: deltas
            master.merge(workers[i % 2].take()[0])
    for worker in workers:
        master.merge(worker.take()[0])

    expected: dict[tuple[int, str, str], list[float]] = {}
    for window, request_type, name, ms, _failed in samples:
        expected.setdefault((window, request_type, name), []).append(ms)
    for (window, request_type, name), values in expected.items():
        alone = new_histogram()
        for ms in values:
            alone.record_value(to_us(ms))
        merged = master.decoded(window)[(request_type, name, "service")]
        assert list(merged.counts) == list(alone.counts), (window, name)
    book = LatencyBook()
    for _window, request_type, name, ms, _failed in samples:
        book.record(request_type, name, "service", ms)
    assert master.totals().rows() == book.rows()
    master.seal_all()  # failures are counted per window as it is sealed
    failures = sum(per_key.total() for per_key in master.failures.values())
    assert failures == sum(s[4] for s in samples) > 0


def test_totals_are_a_read_only_view_of_the_run_so_far():
    """totals() copies nothing (the live status asks every 2 s): a view that goes on counting with the
    windows and refuses to be added to."""
    recorder, windows = Recorder(), Windows()
    samples = synthetic(2)
    half = len(samples) // 2
    for sample in samples[:half]:
        recorder.record(*sample)
    windows.merge(recorder.take()[0])
    view = windows.totals()
    assert view.aggregated("service").get_total_count() == half
    for sample in samples[half:]:
        recorder.record(*sample)
    windows.merge(recorder.take()[0])
    assert windows.totals().aggregated("service").get_total_count() == len(samples)
    assert all(view.hists[key] is hist for key, hist in windows.totals().hists.items() if key in view.hists)
    with pytest.raises(TypeError, match="read-only"):
        view.add(next(iter(view.hists)), view.aggregated("service"))
    with pytest.raises(TypeError, match="read-only"):
        view.record("GET", "/new", "service", 1.0)


EDGES = [0, 1, 2, 1023, 1024, 2047, 2048, 2049, 2050, 4095, 4096, 4097, 123_456, HIGHEST_US - 1, HIGHEST_US,
         HIGHEST_US + 1, 2 * HIGHEST_US, 10**12]  # fmt: skip
"""Microseconds at the edges: below the range, exact buckets, the first 2, 4 µs wide, the top."""


@settings(max_examples=100, deadline=None)  # 20 seeds before; an example costs ~10 ms
@given(drawn=st.lists(st.integers(0, 10**12), max_size=3_000))
def test_add_counts_and_bucket_us_record_exactly_what_hdrh_records(drawn):
    """add_counts does hdrh's index arithmetic inline and bucket_us moves a value to its bucket's
    lowest: both must give the very histogram record_value(clamped(us)) gives, count for count.
    Microseconds from 0 to 10**12: below, across and far above the histograms' range."""
    values = EDGES + drawn
    hdrh_own, inline, bucketed = new_histogram(), new_histogram(), new_histogram()
    for us in values:
        hdrh_own.record_value(clamped(us))
    add_counts(inline, Counter(values))
    add_counts(bucketed, Counter(bucket_us(us / 1000) for us in values))
    for got in (inline, bucketed):
        assert list(got.counts) == list(hdrh_own.counts)
        assert got.total_count == hdrh_own.total_count == len(values)
        assert got.encode() == hdrh_own.encode()
    assert (inline.min_value, inline.max_value) == (hdrh_own.min_value, hdrh_own.max_value)
    assert bucketed.get_max_value() == hdrh_own.get_max_value()  # what a max is reported as
    assert bucketed.get_min_value() == hdrh_own.get_min_value()


@settings(max_examples=60, deadline=None)
@given(
    generators=st.lists(
        st.lists(st.integers(-5_000, 10**10), max_size=2 * Samples.FOLD_AT), min_size=1, max_size=3
    ),
    reports=st.integers(1, 4),
)
def test_samples_shipped_in_reports_and_merged_are_the_histogram_of_every_sample(generators, reports):
    """The open model's start lag: each generator appends µs (negative ones too: an iteration woken
    early), folds FOLD_AT at a time, ships a delta per report; the master merges them. What it holds
    must be the very histogram of every sample recorded with hdrh (clamped), count for count."""
    own, merged = new_histogram(), Samples()
    for values in generators:
        mine = Samples()
        cuts = sorted({len(values) * i // reports for i in range(1, reports)})
        for part in (values[a:b] for a, b in zip([0, *cuts], [*cuts, len(values)], strict=True)):
            for us in part:
                mine.pending.append(us)
                own.record_value(clamped(us))
                if len(mine.pending) >= Samples.FOLD_AT:
                    mine.fold()
            shipped = mine.take()
            assert (shipped is None) == (not part)
            if shipped is not None:
                merged.merge(shipped)
        assert mine.take() is None and not mine.pending  # a take starts over
    got = merged.histogram()
    assert list(got.counts) == list(own.counts) and got.total_count == own.total_count
    if own.total_count:
        assert got.get_max_value() == own.get_max_value() and got.get_min_value() == own.get_min_value()


@pytest.mark.parametrize("text", ["", "HISTFAAAA", "z1:@@@", 7])
def test_a_bad_samples_text_is_a_value_error(text):
    with pytest.raises(ValueError):
        Samples().merge(text)


def test_the_closed_models_one_call_records_what_record_records():
    """Recorder.record_closed (window_of and bucket_us inline: every closed-loop request's path)
    ships the same windows, counts and failures as record() after window_of()."""
    rng = random.Random(3)
    samples = [(rng.uniform(-2, 14), *rng.choice(NAMES), rng.lognormvariate(3, 1.5), rng.random() < 0.1)
               for _ in range(5_000)]  # fmt: skip
    one, other = Recorder(), Recorder()
    for since, request_type, name, ms, failed in samples:
        one.record(window_of(since), request_type, name, ms, failed)
        other.record_closed(since, request_type, name, ms, failed)
    shipped = one.take()
    pieces = sum(len(shipped[0].keys) for _ in shipped[0].windows)  # every (window, key) slot
    assert other.take() == shipped and pieces > 12 * len(set(NAMES)) - 1


def test_a_cleared_histogram_is_a_new_one():
    """hdr.clear (one memset, the Recorder's scratch histogram between entries) leaves what
    new_histogram() makes: the same fields, and the same encoding after the same samples."""
    rng = random.Random(4)
    used = new_histogram()
    add_counts(used, Counter(int(rng.lognormvariate(9, 2)) for _ in range(2_000)))
    fresh = new_histogram()
    assert used.encode() != fresh.encode()
    clear(used)
    fields = ("total_count", "min_value", "max_value", "start_time_stamp_msec", "end_time_stamp_msec")
    assert [getattr(used, f) for f in fields] == [getattr(fresh, f) for f in fields]
    assert not any(used.counts) and used.encode() == fresh.encode()
    again = Counter(EDGES)
    add_counts(used, again)
    add_counts(fresh, again)
    assert used.encode() == fresh.encode() and list(used.counts) == list(fresh.counts)


def test_a_recorder_that_never_reports_holds_at_most_flush_at_samples_and_one_window(monkeypatch):
    """A standalone run reports once, at its end: the buffers are flushed into encoded entries
    whenever FLUSH_AT samples are held, checked at each window's first request of a name."""
    monkeypatch.setattr(Recorder, "FLUSH_AT", 300)
    recorder, per_window = Recorder(), 40
    held = []
    for window in range(30):
        for request_type, name in NAMES:
            for i in range(per_window):
                recorder.record_closed(window + i / per_window, request_type, name, 5 + i, False)
                held.append(sum(len(b.service) for b in recorder.buffers.values()))
    assert max(held) <= 300 + per_window and recorder.shipped  # flushed on the way, nothing lost
    windows = Windows()
    windows.merge(recorder.take()[0])
    windows.seal_all()
    counted = sum(h.total_count for w in range(30) for h in windows.decoded(w).values())
    assert counted == 30 * len(NAMES) * per_window


def test_bucket_us_keeps_exact_values_exact_and_lands_in_the_same_bucket():
    hist = new_histogram()
    for us in EDGES[:-3] + list(range(0, 70_000, 7)):
        got = bucket_us(us / 1000)
        assert got == us if us < 2048 else hist.get_lowest_equivalent_value(us) == got <= us, (us, got)


def test_window_file_round_trips_and_its_counts_add_up(tmp_path):
    recorder, windows = Recorder(), Windows()
    samples = synthetic(2)
    for sample in samples:
        recorder.record(*sample)
    windows.merge(recorder.take()[0])
    path = tmp_path / folder.LATENCY_WINDOWS_CSV
    windows.write_csv(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == WINDOW_COLUMNS
    aggregated = [r for r in rows if r["name"] == AGGREGATED]
    assert sum(int(r["count"]) for r in aggregated) == len(samples)
    assert sum(int(r["count"]) for r in rows if r["name"] != AGGREGATED) == len(samples)
    assert sum(int(r["failures"]) for r in aggregated) == sum(s[4] for s in samples)
    assert Windows.read_csv(path).totals().rows() == windows.totals().rows()


WINDOW_SHAPES = st.tuples(
    st.sampled_from(["one", "same", "tail", "uniform"]),
    st.integers(2, 400),  # samples (one for "one")
    st.integers(0, 2**32 - 1),  # the seed of its samples' values: too many to draw one by one
)


@settings(max_examples=250, deadline=None)  # 4 seeds of 300 windows before: about as many windows
@given(shapes=st.lists(WINDOW_SHAPES, min_size=1, max_size=300))
def test_p99_never_exceeds_max_in_any_window(shapes):
    """Up to 300 windows of random sizes and shapes (one sample, identical samples, long tails); a
    failure shrinks to the one window, and its fewest samples, that breaks it."""
    recorder, windows = Recorder(), Windows()
    for window, (shape, size, seed) in enumerate(shapes):
        rng = random.Random(seed)
        n = 1 if shape == "one" else size
        for _ in range(n):
            ms = {
                "one": rng.uniform(0.001, 5_000),
                "same": 105.0,
                "tail": rng.paretovariate(1.1) * 10,
                "uniform": rng.uniform(1, 1_000),
            }[shape]
            recorder.record(window, "GET", "GET /x", ms, False)
    windows.merge(recorder.take()[0])
    rows = list(windows.rows())
    assert len(rows) == 2 * len(shapes)  # the name and Aggregated, every window
    for row in rows:
        assert row["p50_ms"] <= row["p90_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["p99.9_ms"]
        assert row["p99.9_ms"] <= row["max_ms"], row


# --- bad files ------------------------------------------------------------------------------------


def written_run(tmp_path: Path) -> Path:
    """A copy of a checked-in run folder, given exact latency files of a few samples."""
    run_dir = tmp_path / "run"
    shutil.copytree(EXAMPLES[0], run_dir)
    rows = list(csv.DictReader((run_dir / folder.STATS_CSV).read_text().splitlines()))
    recorder, windows = Recorder(), Windows()
    for row in rows:
        for _ in range(int(row["Request Count"]) if row["Type"] else 0):
            recorder.record(0, row["Type"], row["Name"], 1.5, False)
    windows.merge(recorder.take()[0])
    windows.write_csv(run_dir / folder.LATENCY_WINDOWS_CSV)
    folder.write_json_atomic(run_dir / folder.LATENCY_HDR_JSON, windows.totals().to_json())
    manifest = json.loads((run_dir / folder.MANIFEST).read_text())
    manifest["latency"] = {"window_s": 1, "files": list(folder.LATENCY_FILES), "exact": True}
    folder.write_json_atomic(run_dir / folder.MANIFEST, manifest)
    return run_dir


def test_a_folder_with_histograms_is_evaluated_exactly(tmp_path):
    run_dir = written_run(tmp_path)
    [outcome] = evaluate_folder(run_dir, parse_checks("p50<2"))
    assert (outcome.measured, outcome.source, outcome.passed) == (1.5, "exact", True)
    assert outcome.line() == "PASS p50<2 (Aggregated): measured 1.5 ms (exact)"


@pytest.mark.parametrize("run_dir", EXAMPLES, ids=lambda p: p.name)
def test_folders_from_before_fall_back_to_locusts_rounded_numbers(run_dir):
    assert exact_book(run_dir) is None
    outcomes = evaluate_folder(run_dir, parse_checks("p50<100000; max<100000; p99.9<100000; fail_ratio<=1"))
    assert [o.source for o in outcomes] == ["rounded"] * 3 + [""]
    assert all(o.passed for o in outcomes)
    assert "(rounded)" in outcomes[0].line()


def corrupt_json(path: Path) -> None:
    data = json.loads(path.read_text())
    data["histograms"][1]["hdr"] = data["histograms"][1]["hdr"][:30]
    path.write_text(json.dumps(data))


def corrupt_windows(path: Path) -> None:
    lines = path.read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # a truncated row
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (corrupt_json, f"{folder.LATENCY_HDR_JSON}: histogram 2: not an encoded HDR histogram"),
        (lambda p: p.write_text(p.read_text()[:100]), f"{folder.LATENCY_HDR_JSON}: invalid JSON"),
    ],
)
def test_a_corrupt_histogram_file_is_one_line_naming_file_and_row(tmp_path, damage, words):
    run_dir = written_run(tmp_path)
    damage(run_dir / folder.LATENCY_HDR_JSON)
    with pytest.raises(InputError) as e:
        exact_book(run_dir)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_truncated_window_row_is_named(tmp_path):
    run_dir = written_run(tmp_path)
    path = run_dir / folder.LATENCY_WINDOWS_CSV
    corrupt_windows(path)
    with pytest.raises(InputError, match=r"latency_windows.csv: row 3: ") as e:
        Windows.read_csv(path)
    assert "\n" not in str(e.value)


def test_a_corrupt_histogram_stops_the_checks_command(tmp_path, analysis_cli):
    run_dir = written_run(tmp_path)
    assert analysis_cli("checks", run_dir, "p50<2").returncode == 0
    corrupt_json(run_dir / folder.LATENCY_HDR_JSON)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    res = analysis_cli("checks", run_dir, "p50<2")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "histogram 2: not an encoded HDR histogram" in res.stderr
    assert res.stderr.startswith(f"analysis: error: {run_dir / folder.LATENCY_HDR_JSON}: ")
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before  # nothing written


def test_exact_only_when_the_histograms_hold_every_request():
    book = LatencyBook()
    for ms in (105.2, 105.9, 106.4):
        book.record("GET", "a", "service", ms)
    assert exact_value(book, "a", "p50", 3) == pytest.approx(105.9, abs=0.1)
    assert exact_value(book, AGGREGATED, "max", 3) == pytest.approx(106.4, abs=0.1)
    assert exact_value(book, "a", "p50", 4) is None  # a generator's windows were lost: rounded
