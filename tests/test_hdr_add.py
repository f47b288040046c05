"""The windows' wire format adds up to what hdrh records: a piece packed by the worker
(latency/windows.py pack: 16-bit bucket indices and (index, count) pairs) and counted by the master
(Pile.counts, from_buckets) is the histogram hdrh's record_value makes of the same samples, count
for count, total and max; bucket_index is hdrh's own index arithmetic; the compact encoding made
from buckets is the one made from a histogram, and reads back to the same buckets."""

from __future__ import annotations

import ctypes
import random
from collections import Counter

import pytest
from hdrh.histogram import HdrHistogram
from hypothesis import example, given, settings
from hypothesis import strategies as st

from swarmbench.latency import histogram
from swarmbench.latency.histogram import (
    COUNTS_LEN,
    HIGHEST_US,
    bucket_index,
    buckets,
    clamped,
    decode_buckets,
    encode_buckets,
    from_buckets,
    new_histogram,
)
from swarmbench.latency.windows import REPEAT_MAX, Pile, pack

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

EDGES = [0, 1, 2, 1023, 1024, 2047, 2048, 2049, 2050, 4095, 4096, 4097, 123_456, HIGHEST_US - 1, HIGHEST_US,
         HIGHEST_US + 1, 10**12]  # fmt: skip
"""Microseconds at the edges: below the range, exact buckets, the first 2, 4 µs wide, the top, above."""

SAMPLES = st.one_of(
    st.lists(st.integers(0, 10**12), max_size=2_000),  # anywhere, in and out of the range
    st.lists(st.integers(1, 50_000), max_size=2_000),  # dense: buckets holding several
    st.lists(st.sampled_from([105_000, 105_001, 7, HIGHEST_US]), min_size=1, max_size=500),  # repeats
)
"""A piece's samples (µs): sparse, dense, and the same few values many times (the pairs)."""


def seeded(seed: int, n: int) -> list[int]:
    """N long-tailed samples (µs), many sharing a bucket: what Hypothesis rarely draws at this size."""
    rng = random.Random(seed)
    return [int(rng.lognormvariate(9, 1.5)) for _ in range(n)]


def same(a: HdrHistogram, b: HdrHistogram) -> bool:
    size = ctypes.sizeof(a.counts)
    return (
        ctypes.string_at(a.counts, size) == ctypes.string_at(b.counts, size)
        and a.get_total_count() == b.get_total_count()
        and a.get_max_value() == b.get_max_value()
    )


def recorded(samples: list[int]) -> HdrHistogram:
    hist = new_histogram()
    for us in samples:
        hist.record_value(clamped(us))
    return hist


@settings(max_examples=200, deadline=None)
@given(us=st.integers(0, 10**12))
def test_bucket_index_is_hdrhs_index(us):
    hist = new_histogram()
    for value in [us, *EDGES]:
        assert bucket_index(value) == hist._counts_index_for(clamped(value)) < COUNTS_LEN


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(SAMPLES, min_size=1, max_size=4))
@example(pieces=[seeded(1, 20_000), seeded(2, 3_000), EDGES])  # a busy worker's window: thousands of pairs
def test_packed_pieces_counted_by_the_master_are_the_histogram_of_their_samples(pieces):
    """Each piece packed as a worker ships it, filed into one pile as the master does, counted: the
    histogram hdrh records from every sample one by one."""
    pile = Pile()
    for samples in pieces:
        singles, pairs = pack(Counter(samples))
        assert len(singles) % 2 == 0 and all(count > REPEAT_MAX for count in pairs[1::2])
        pile.singles += singles
        pile.pairs += pairs
    counts = pile.counts()
    everything = [us for samples in pieces for us in samples]
    assert sum(counts.values()) == len(everything)
    assert same(from_buckets(counts), recorded(everything))


def test_a_bucket_holding_many_ships_as_one_pair_and_few_as_repeated_indices():
    singles, pairs = pack(Counter({105_000: 1, 2_000: REPEAT_MAX, 7: 1_000}))
    assert pairs == [bucket_index(7), 1_000]
    assert len(singles) == 2 * (1 + REPEAT_MAX)


@settings(max_examples=100, deadline=None)
@given(samples=SAMPLES)
def test_the_compact_encoding_of_buckets_is_the_histograms_and_reads_back(samples):
    hist = recorded(samples)
    indices, counts = buckets(hist)
    text = encode_buckets(indices, counts)
    assert text == histogram.encode_compact(hist)
    assert decode_buckets(text) == (indices, counts)
    assert same(from_buckets(dict(zip(indices, counts, strict=True))), hist)
