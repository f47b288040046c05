"""hdr.new_histogram()'s histograms are freed as soon as nothing refers to them (hdrh's histogram
and encoder refer to each other: without the weak link back, each ~200 KB histogram waited for the
cyclic collector, and a master sealing windows piled up hundreds), and still encode and add."""

from __future__ import annotations

import gc
import weakref

import pytest

from swarmbench.latency.histogram import decode, new_histogram

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority


def test_a_histogram_is_freed_without_the_cyclic_collector():
    gc.disable()
    try:
        hist = new_histogram()
        hist.record_value(1234)
        hist.encode()
        gone = weakref.ref(hist)
        del hist
        assert gone() is None
    finally:
        gc.enable()


def test_it_still_encodes_and_adds():
    a, b = new_histogram(), new_histogram()
    a.record_value(1500, 3)
    b.record_value(250_000, 2)
    a.add(b)
    again = decode(a.encode().decode("ascii"), "test", "histogram")
    assert again.get_total_count() == 5
    assert again.get_max_value() == a.get_max_value()
