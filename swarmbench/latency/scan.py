"""A histogram's running counts at chosen buckets and its percentiles, in one pass over its counts
array: what /metrics (plugin/metrics.py) serves for every request name at every scrape, a classic
Prometheus histogram's cumulative bucket counts and the exact summary quantiles.

bucket_percentiles (histogram.py) needs the non-empty buckets decoded first, a Python step per
bucket (~8 ms for a histogram of 10,000 distinct buckets); here the counts array is read in slices
between the chosen indices and summed in C, and only the slice holding a percentile's target is
walked. tests/test_latency_scan.py: the same values as bucket_percentiles and the decoded buckets'
running totals."""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate

from hdrh.histogram import HdrHistogram


def scan(
    hist: HdrHistogram, indices: tuple[int, ...], percentiles: list[float]
) -> tuple[list[int], dict[float, int]]:
    """HIST's running count at each of INDICES (ascending counts indices, each included) and
    {percentile: value in µs}: bucket_percentiles' values, hdrh's method (the first bucket whose
    running total reaches round(p % of the total), at least 1)."""
    counts, total = hist.counts, hist.get_total_count()
    top = hist.get_counts_array_index(hist.max_value) + 1  # nothing counted above
    targets = sorted((max(int(min(p, 100.0) * total / 100 + 0.5), 1), p) for p in percentiles)
    cumulative: list[int] = []
    values: dict[float, int] = {}
    running = start = 0
    for end in [*(min(i + 1, top) for i in indices), top]:
        if end <= start:
            cumulative.append(running)
            continue
        part = counts[start:end]
        reached = running + sum(part)
        while targets and targets[0][0] <= reached:
            target, p = targets.pop(0)
            index = start + bisect_left(list(accumulate(part, initial=running))[1:], target)
            value = hist.get_value_from_index(index)
            values[p] = hist.get_highest_equivalent_value(value) if p else value
        running, start = reached, end
        cumulative.append(running)
    return cumulative[: len(indices)], values
