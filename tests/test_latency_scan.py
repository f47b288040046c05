"""latency/scan.py: a histogram's running counts at chosen buckets and its percentiles in one pass are
the values of the decoded buckets (histogram.py buckets, bucket_percentiles), on synthetic
histograms: long tails, one sample, samples past the last chosen index, values at the edges."""

from __future__ import annotations

import random
from bisect import bisect_right
from itertools import accumulate

import pytest

from swarmbench.core.exposition import BUCKET_BOUNDS_S
from swarmbench.latency.histogram import bucket_index, bucket_percentiles, buckets, new_histogram, to_us
from swarmbench.latency.scan import scan

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

INDICES = tuple(bucket_index(round(b * 1_000_000)) for b in BUCKET_BOUNDS_S)
PERCENTILES = [0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0]


def histogram(values_ms: list[float]):
    hist = new_histogram()
    for ms in values_ms:
        hist.record_value(max(1, to_us(ms)))
    return hist


@pytest.mark.parametrize("seed", range(6))
def test_scan_equals_the_decoded_buckets(seed):
    rng = random.Random(seed)
    n = rng.choice([1, 7, 1000, 20000])
    values = [rng.lognormvariate(rng.uniform(-3, 8), rng.uniform(0.1, 2.5)) for _ in range(n)]
    hist = histogram(values)
    indices, counts = buckets(hist)
    running = list(accumulate(counts))
    expected = [running[bisect_right(indices, i) - 1] if bisect_right(indices, i) else 0 for i in INDICES]
    cumulative, values_us = scan(hist, INDICES, PERCENTILES)
    assert cumulative == expected
    assert values_us == bucket_percentiles(indices, counts, PERCENTILES)


def test_a_sample_on_a_bound_counts_under_it_and_past_the_last_only_in_the_total():
    hist = histogram([1.0, 1.0, 200_000.0])  # 1 ms is a bound (10^0 ms); 200 s is past 100 s
    cumulative, values = scan(hist, INDICES, [50.0, 100.0])
    one_ms = BUCKET_BOUNDS_S.index(0.001)
    assert cumulative[one_ms - 1] == 0 and cumulative[one_ms] == 2 and cumulative[-1] == 2
    assert values[50.0] == 1000 and values[100.0] >= 200_000_000
