"""The master merges window pieces as they come (hdr_windows.Windows seals windows behind the newest):
whatever the order and batching of the reports (Hypothesis draws them, and shrinks a difference to the
smallest reordering), late pieces included, the files are byte for byte those of merging everything at
the end; percentile_values equals hdrh's own walk.
"""

from __future__ import annotations

import csv
import io
import random
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swarmbench.core.checks import AGGREGATED
from swarmbench.latency.histogram import KINDS, PERCENTILES, decode, new_histogram, percentile_values
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import SEAL_AFTER, WINDOW_COLUMNS, Windows, window_row

NAMES = [("GET", "GET /albums"), ("GET", "GET /albums/{id}"), ("POST", "POST /albums")]


def reports(seed: int, workers: int = 3, windows: int = 40) -> list[list[dict]]:
    """Each worker's reports: every 3 windows, the windows since its last one (as Recorder.take()
    ships them), with the open model's second kind on some requests."""
    rng = random.Random(seed)
    out = []
    for _worker in range(workers):
        recorder = Recorder()
        for window in range(windows):
            for _ in range(rng.randint(0, 60)):
                request_type, name = rng.choice(NAMES)
                ms = 100 + rng.lognormvariate(0.0, 1.2)
                intended = (ms + rng.expovariate(0.5), window) if rng.random() < 0.3 else None
                recorder.record(window, request_type, name, ms, rng.random() < 0.05, intended)
            if window % 3 == 2 or window == windows - 1:
                out.append(recorder.take()[0])
    return out


def reference_file(pieces: list[list[dict]]) -> str:
    """The file as merging every piece at the end makes it (the code before the incremental merge)."""
    hists: dict[tuple, object] = {}
    failures: Counter = Counter()
    for report in pieces:
        for e in report:
            key = (e["w"], e["type"], e["name"], e["kind"])
            hists.setdefault(key, new_histogram()).add(decode(e["hdr"], "test", "piece"))
            failures[key] += e["failures"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=WINDOW_COLUMNS)
    writer.writeheader()
    order = lambda k: (k[2], k[1], KINDS.index(k[3]))  # noqa: E731
    for window in sorted({k[0] for k in hists}):
        keys = sorted((k for k in hists if k[0] == window), key=order)
        by_kind: dict[str, object] = {}
        for key in keys:
            writer.writerow(window_row(window, key[1:], hists[key], failures[key]))
            by_kind.setdefault(key[3], new_histogram()).add(hists[key])
        for kind in sorted(by_kind, key=KINDS.index):
            fails = sum(failures[k] for k in keys if k[3] == kind)
            writer.writerow(window_row(window, ("", AGGREGATED, kind), by_kind[kind], fails, encoded=False))
    return out.getvalue()


def written(windows: Windows) -> str:
    """The windows file WINDOWS writes (in a folder of its own: a Hypothesis example has no tmp_path)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.csv"
        windows.write_csv(path)
        return path.read_bytes().decode()


REPORTS = 3 * sum(1 for window in range(40) if window % 3 == 2 or window == 39)
"""How many reports reports(seed) makes with its defaults: 3 workers, one every 3 of 40 windows."""


@settings(max_examples=6, deadline=None)  # as many as the seeds before: an example costs ~1 s
@given(
    seed=st.integers(0, 2**32 - 1),  # what the workers measured
    order=st.permutations(range(REPORTS)),  # late reports: some arrive after their windows were sealed
    batches=st.lists(st.integers(1, 4), min_size=REPORTS, max_size=REPORTS),  # reports in one merge
)
def test_any_order_and_batching_writes_the_same_file(seed, order, batches):
    pieces = reports(seed)
    assert len(pieces) == REPORTS
    expected = reference_file(pieces)
    shuffled = [pieces[i] for i in order]
    windows = Windows()
    i = 0
    for n in batches:
        windows.merge([e for report in shuffled[i : i + n] for e in report])
        i += n
    assert i >= len(shuffled), "every report was merged"
    assert windows.sealed, "the test must exercise sealing"
    assert written(windows) == expected
    in_order = Windows()
    for report in pieces:
        in_order.merge(report)
    assert written(in_order) == expected
    assert in_order.totals().rows() == windows.totals().rows()


def test_a_late_piece_reopens_a_sealed_window_and_counts_once():
    pieces = reports(7, workers=1, windows=30)
    late = [e for e in pieces[0] if e["w"] == 0]
    first = [e for e in pieces[0] if e["w"] != 0]
    windows = Windows()
    windows.merge(first)
    for report in pieces[1:]:
        windows.merge(report)
    assert 0 not in windows.pieces and min(windows.sealed) == 1 and windows.newest > SEAL_AFTER
    before = windows.run.aggregated("service").get_total_count()
    windows.merge(late)  # window 0 is far behind the newest: sealed at once, with what came before
    assert 0 in windows.sealed and 0 not in windows.pieces
    late_count = sum(decode(e["hdr"], "t", "p").get_total_count() for e in late if e["kind"] == "service")
    assert windows.run.aggregated("service").get_total_count() == before + late_count
    assert written(windows) == reference_file(pieces)


def test_totals_while_running_hold_open_and_sealed_windows_without_sealing():
    pieces = reports(8, workers=2, windows=20)
    windows = Windows()
    for report in pieces:
        windows.merge(report)
    assert windows.pieces and windows.sealed
    open_before = {w: dict(k) for w, k in windows.pieces.items()}
    everything = sum(
        decode(e["hdr"], "t", "p").get_total_count() for r in pieces for e in r if e["kind"] == "service"
    )
    assert windows.totals().aggregated("service").get_total_count() == everything
    assert windows.pieces == open_before, "asking for totals seals nothing"


def test_an_undecodable_piece_is_left_out_and_counted():
    pieces = reports(9, workers=1, windows=12)
    bad = dict(pieces[0][0], hdr="HISTFAAAAB" + "x" * 20)
    windows = Windows()
    windows.merge([bad, *pieces[0][1:]])
    for report in pieces[1:]:
        windows.merge(report)
    windows.seal_all()
    assert windows.corrupt == 1


HIGHEST = 3_600_000_000
"""µs: the histograms' top, an hour."""
HISTOGRAMS = st.one_of(
    st.integers(1, 10**7).map(lambda us: [us]),  # one sample
    st.integers(2, 3000).map(lambda n: [105_000] * n),  # the same sample, many times
    st.lists(st.sampled_from([1, HIGHEST]), min_size=2, max_size=3000),  # both edges of the range
    st.lists(st.integers(1, HIGHEST), min_size=2, max_size=3000),  # anywhere: long tails, wide spreads
)
"""The samples (µs) of a histogram, in the shapes the seeded loop drew."""


@settings(max_examples=100, deadline=None)  # 25 histograms before (5 seeds x 5 shapes)
@given(samples=HISTOGRAMS)
def test_percentile_values_equal_hdrhs_walk(samples):
    hist = new_histogram()
    for us in samples:
        hist.record_value(us)
    ps = [*PERCENTILES, 0.0, 100.0, 99.999]
    for h in (hist, decode(hist.encode().decode("ascii"), "t", "p")):
        assert percentile_values(h, ps) == h.get_percentile_to_value_dict(ps)


def test_percentile_values_known_answer():
    hist = new_histogram()
    for us in range(1, 101):  # 1..100 µs, all exact at 3 significant digits
        hist.record_value(us)
    assert percentile_values(hist, [50.0, 99.0, 100.0]) == {50.0: 50, 99.0: 99, 100.0: 100}
