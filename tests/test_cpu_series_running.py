"""cpu.CpuSeries keeps running figures (a master holds one per worker: lists grew ~250 MB an hour at
1,000 workers); its summary is what the list-based one gave: the mean of the last sample, the
busiest interval of >= 1 s (shorter ones merged into the next), Locust's samples' mean and max."""

from __future__ import annotations

import random

import pytest

from swarmbench.plugin import generator

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority


def reference(samples: list[tuple[float, float]], reported: list[float]) -> tuple:
    """The former list-based figures."""
    kept: list[tuple[float, float]] = []
    for wall, used in samples:
        if not kept or wall > kept[-1][0]:
            kept.append((wall, used))
    mean = round(100 * kept[-1][1] / kept[-1][0], 1) if kept and kept[-1][0] > 0 else None
    best, (w0, c0) = None, (0.0, 0.0)
    for w, c in kept:
        if w - w0 >= 1.0:
            rate = 100 * (c - c0) / (w - w0)
            best = rate if best is None else max(best, rate)
            w0, c0 = w, c
    peak = mean if best is None else round(max(best, mean or 0.0), 1)
    locust = (round(sum(reported) / len(reported), 1), round(max(reported), 1)) if reported else (None, None)
    return mean, peak, len(kept), *locust


@pytest.mark.parametrize("seed", range(20))
def test_running_figures_equal_the_list_based_ones(seed):
    rng = random.Random(seed)
    series, samples, reported = generator.CpuSeries(), [], []
    wall = used = 0.0
    for _ in range(rng.randint(0, 40)):
        wall += rng.choice([0.0, 0.2, 0.5, 1.0, 3.0, 3.1])
        used += rng.random() * 0.3
        samples.append((wall, used))
        series.add(wall, used)
        if rng.random() < 0.5:
            reported.append(rng.random() * 100)
            series.locust_reported.append(reported[-1])
    s = series.summary("w")
    locust = (s.locust_reported_mean_percent, s.locust_reported_max_percent)
    assert (s.mean_percent, s.max_percent, s.samples, *locust) == reference(samples, reported)
