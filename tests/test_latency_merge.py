"""The master merges window pieces as they come (latency/windows.py Windows seals windows behind the
newest): whatever the order and batching of the reports (Hypothesis draws them, and shrinks a
difference to the smallest reordering), late pieces included, the files are byte for byte those of
merging everything at the end with hdrh; a malformed entry is refused whole, naming the report;
percentile_values equals hdrh's own walk.
"""

from __future__ import annotations

import csv
import io
import random
import struct
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import InputError
from swarmbench.latency.histogram import KINDS, PERCENTILES, decode, new_histogram, percentile_values
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import SEAL_AFTER, WINDOW_COLUMNS, Shipment, Windows, ship, window_row

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

NAMES = [("GET", "GET /albums"), ("GET", "GET /albums/{id}"), ("POST", "POST /albums")]


def reports(seed: int, workers: int = 3, windows: int = 40) -> list[Shipment]:
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


def unpacked(shipment: Shipment) -> list[tuple[tuple, bytes, list, int]]:
    """A shipment read independently of Windows, with struct: ((window, type, name, kind index),
    16-bit indices, [index, count, ...], failures) per (window, key) piece."""
    out = []
    for window, lengths, failures, triples, indices in shipment.windows:
        n = len(shipment.keys)
        sizes = struct.unpack(f"<{n}I", lengths)
        fails = struct.unpack(f"<{n}I", failures) if failures else (0,) * n
        at = 0
        for position, (key, size) in enumerate(zip(shipment.keys, sizes, strict=True)):
            pairs = [
                v for i in range(0, len(triples), 3) if triples[i] == position for v in triples[i + 1 : i + 3]
            ]
            if size or pairs or fails[position]:
                out.append(((window, *key), indices[at : at + 2 * size], pairs, fails[position]))
            at += 2 * size
        assert at == len(indices)
    return out


def counted(piece: tuple[tuple, bytes, list, int]) -> Counter:
    """{bucket index: count} of one unpacked piece."""
    _key, singles, pairs, _failures = piece
    counts = Counter(struct.unpack(f"<{len(singles) // 2}H", singles))
    for i in range(0, len(pairs), 2):
        counts[pairs[i]] += pairs[i + 1]
    return counts


def combined(shipments: list[Shipment]) -> Shipment:
    """Several reports' shipments as one (their pieces of one window and key together), as a worker
    that reported once for all of them would have shipped them."""
    windows: dict = {}
    for shipment in shipments:
        for (window, *key), singles, pairs, failures in unpacked(shipment):
            keyed = windows.setdefault(window, {})
            before = keyed.get(tuple(key), (b"", [], 0))
            keyed[tuple(key)] = (before[0] + singles, before[1] + pairs, before[2] + failures)
    return ship(windows)


def only(shipment: Shipment, keep) -> Shipment:
    """SHIPMENT with only the window entries whose window KEEP(window) keeps."""
    return Shipment(shipment.keys, [entry for entry in shipment.windows if keep(entry[0])])


def reference_file(pieces: list[Shipment]) -> str:
    """The file as merging every piece at the end with hdrh makes it: each bucket recorded at its
    value by hdrh's own record_value, histograms added by hdrh's add."""
    hists: dict[tuple, object] = {}
    failures: Counter = Counter()
    for report in pieces:
        for piece in unpacked(report):
            window, request_type, name, kind = piece[0]
            key = (window, request_type, name, KINDS[kind])
            hist = new_histogram()
            for index, count in counted(piece).items():
                hist.record_value(hist.get_value_from_index(index), count)
            hists.setdefault(key, new_histogram()).add(hist)
            failures[key] += piece[3]
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


def served(windows: Windows) -> int:
    """Service-time samples counted so far (the sealed windows, here: nothing open was read)."""
    return sum(h.get_total_count() for key, h in windows.run.items() if key[2] == "service")


def service_samples(shipment: Shipment) -> int:
    return sum(sum(counted(piece).values()) for piece in unpacked(shipment) if piece[0][3] == 0)


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
        windows.merge(combined(shuffled[i : i + n]))
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
    pieces = reports(7, workers=2, windows=30)
    second = len(pieces) // 2  # the second worker's first report: its window 0 comes last
    late = only(pieces[second], lambda w: w == 0)
    windows = Windows()
    for i, report in enumerate(pieces):
        windows.merge(only(report, lambda w: w != 0) if i == second else report)
    assert 0 in windows.sealed and 0 not in windows.piles and windows.newest > SEAL_AFTER
    before, lines = served(windows), list(windows.sealed[0])
    windows.merge(late)  # window 0 is far behind the newest: re-opened and sealed at once, with what it held
    assert 0 in windows.sealed and 0 not in windows.piles and windows.sealed[0] != lines
    assert served(windows) == before + service_samples(late) > before
    assert written(windows) == reference_file(pieces)


def test_windows_every_worker_reported_past_are_sealed_early_and_write_the_same_file():
    """seal_before (the master's per-worker coverage, plugin/latency.py seal_covered): the windows
    before the covered one seal now, the rest stay open, and the file is the one sealing late writes."""
    pieces = reports(9, workers=2, windows=20)
    windows = Windows()
    for report in pieces:
        windows.merge(report)
    newest = windows.newest
    assert newest - SEAL_AFTER - 1 in windows.sealed and newest - SEAL_AFTER in windows.piles
    windows.seal_before(newest - 1)
    assert set(windows.piles) == {newest - 1, newest}
    assert all(w in windows.sealed for w in range(newest - 1))
    assert written(windows) == reference_file(pieces)


def test_a_window_sealed_a_row_at_a_time_keeps_what_it_made_only_if_nothing_touched_it():
    """Windows.sealing (a standalone runner's collector lets its requests go between rows): run
    through, it seals as seal() does; when another caller seals the window while it is away, or a
    piece of the window comes, what it made is dropped: nothing is counted twice or lost, and the
    file is the reference's."""
    pieces = reports(11, workers=2, windows=12)
    last = len(pieces) - 1  # its window 11 is held back: it comes while window 11 is being sealed
    held = only(pieces[last], lambda w: w == 11)
    assert held.windows, "the held piece must have samples"

    def opened() -> Windows:
        windows = Windows()
        for i, report in enumerate(pieces):
            windows.merge(only(report, lambda w: w != 11) if i == last else report)
        assert 11 in windows.piles and windows.newest == 11
        return windows

    whole, twin = opened(), opened()
    steps = list(whole.sealing(11))
    twin.seal(11)
    assert len(steps) > 2 and whole.sealed[11] == twin.sealed[11] and 11 not in whole.piles

    raced = opened()
    steps = raced.sealing(11)
    next(steps)
    raced.seal(11)  # a reader seals it while the collector is away
    lines = raced.sealed[11]
    assert list(steps) and raced.sealed[11] is lines and 11 not in raced.piles  # kept the reader's

    late = opened()
    steps = late.sealing(11)
    next(steps)
    late.merge(held)  # a piece of the window comes while it is being sealed
    list(steps)
    assert 11 in late.piles and 11 not in late.sealed, "what it made without the piece is dropped"
    assert written(late) == reference_file(pieces) and written(raced) == written(twin)


def test_counting_a_few_entries_at_a_time_counts_each_once_whatever_comes_between():
    """Windows.counting (a master's metrics and live status, which let other work go between
    batches): reports filed and windows sealed between its batches, each entry is counted once;
    the totals and the file are those of counting at once."""
    pieces = reports(12, workers=3, windows=15)
    windows, at_once = Windows(), Windows()
    batches, steps = 0, windows.counting(most=1)
    for i, report in enumerate(pieces):
        windows.merge(report)  # between two batches: a report filed, maybe windows sealed
        at_once.merge(report)
        if i % 3 == 2:  # a batch every third report: more entries come than a batch counts
            if next(steps, "done") == "done":
                steps = windows.counting(most=1)
            else:
                batches += 1
    batches += sum(1 for _ in windows.counting(most=1))
    assert batches > len(pieces) // 3 and windows.sealed
    assert windows.totals().rows() == at_once.totals().rows()
    assert written(windows) == written(at_once) == reference_file(pieces)


def test_totals_while_running_hold_open_and_sealed_windows_without_sealing():
    pieces = reports(8, workers=2, windows=20)
    windows = Windows()
    for report in pieces:
        windows.merge(report)
    assert windows.piles and windows.sealed
    open_before = {w: list(pile) for w, pile in windows.piles.items()}
    everything = sum(service_samples(report) for report in pieces)
    assert windows.totals().aggregated("service").get_total_count() == everything
    assert {w: list(pile) for w, pile in windows.piles.items()} == open_before, (
        "asking for totals seals nothing"
    )


def malformed(shipment: Shipment) -> list[tuple[str, object]]:
    """SHIPMENT (a well-formed one) broken in each way a worker of another version, or a bug, could."""
    keys, entries = shipment
    window, lengths, failures, triples, indices = entries[0]
    rest = entries[1:]

    def entry(**changed) -> Shipment:
        fields = {"w": window, "l": lengths, "f": failures, "p": triples, "i": indices, **changed}
        return Shipment(keys, [[fields["w"], fields["l"], fields["f"], fields["p"], fields["i"]], *rest])

    return [
        (
            "a format 1 list of objects",
            [{"w": window, "type": "GET", "name": "x", "kind": "service", "hdr": "x"}],
        ),
        ("no keys", Shipment(None, entries)),
        ("a key cut short", Shipment([keys[0][:2], *keys[1:]], entries)),
        ("a kind out of range", Shipment([[*keys[0][:2], len(KINDS)], *keys[1:]], entries)),
        ("a kind by name", Shipment([[*keys[0][:2], "service"], *keys[1:]], entries)),
        ("a name that is not text", Shipment([[keys[0][0], 7, keys[0][2]], *keys[1:]], entries)),
        ("windows that are not a list", Shipment(keys, "windows")),
        ("an entry cut short", Shipment(keys, [entries[0][:4], *rest])),
        ("a negative window", entry(w=-1)),
        ("a window as text", entry(w="3")),
        ("lengths of another key list", entry(l=lengths + bytes(4))),
        ("lengths that do not add up", entry(l=struct.pack(f"<{len(keys)}I", *([1] * len(keys))))),
        ("failures of another key list", entry(f=bytes(4 * len(keys) + 4))),
        ("indices as text", entry(i=indices.decode("latin-1"))),
        ("an index past the histogram", entry(i=indices[:-2] + struct.pack("<H", 24_576))),
        ("a triple cut short", entry(p=[*triples, 0, 5])),
        ("a triple of another key", entry(p=[*triples, len(keys), 5, 3])),
        ("a triple counting nothing", entry(p=[*triples, 0, 5, 0])),
        ("a triple past the histogram", entry(p=[*triples, 0, 24_576, 3])),
    ]


def test_a_malformed_shipment_is_refused_whole_naming_the_report():
    good = reports(9, workers=1, windows=12)[0]
    for what, bad in malformed(good):
        windows = Windows()
        windows.merge(good)
        before = {w: list(pile) for w, pile in windows.piles.items()}
        with pytest.raises(InputError) as e:
            windows.merge(bad, "worker w1's report")
        assert "worker w1's report" in str(e.value), what
        assert {w: list(pile) for w, pile in windows.piles.items()} == before, f"{what}: nothing filed"
    windows = Windows()
    windows.merge(good)  # unbroken: filed
    assert windows


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
