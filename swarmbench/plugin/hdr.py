"""The load generator's side of the exact latency percentiles: every request's latencies, buffered
and counted into the shared HDR histograms (swarmbench/hdr.py: encoding, merging, percentiles)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from swarmbench.hdr import KINDS, LatencyBook, Timeline, to_us


class Recorder:
    """A load generator's hot path: every request's latencies, buffered, then counted in batches.

    At thousands of requests per second, four HDR record_value() calls per request (service and
    intended, per name and per second) cost a load generator ~5 % of its requests. Appending to a
    list costs a tenth of one, and latencies in microseconds repeat a lot: a batch goes into the
    histograms as {value: count}, one call per distinct value. The histograms are the same as if
    each sample had been recorded on its own.
    """

    FLUSH_AT = 20_000
    """Samples buffered before they go into the histograms: bounds the buffers' memory (~1 MB)
    when reports are rare (a standalone run reports once, at the end)."""

    def __init__(self) -> None:
        self.latency = LatencyBook()
        self.timeline = Timeline()
        self.by_name: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
        self.by_second: dict[int, tuple[list[int], list[int]]] = {}
        self.buffered = 0

    def record(
        self, request_type: str, name: str, service_ms: float, intended_ms: float | None, second: int
    ) -> None:
        """One request: its service time, and its time since the intended start (None outside an
        iteration: then the request counts in the service histogram only)."""
        lists = self.by_name.get((request_type, name))
        if lists is None:
            lists = self.by_name[(request_type, name)] = ([], [])
        service = to_us(service_ms)
        lists[0].append(service)
        if intended_ms is not None:
            intended = to_us(intended_ms)
            lists[1].append(intended)
            per_second = self.by_second.get(second)
            if per_second is None:
                per_second = self.by_second[second] = ([], [])
            per_second[0].append(service)
            per_second[1].append(intended)
        self.buffered += 1
        if self.buffered >= self.FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        for (request_type, name), lists in self.by_name.items():
            for kind, values in zip(KINDS, lists, strict=True):
                if values:
                    self.latency.record_counts(request_type, name, kind, Counter(values))
        for second, lists in self.by_second.items():
            for kind, values in zip(KINDS, lists, strict=True):
                if values:
                    self.timeline.record_counts(second, kind, Counter(values))
        self.by_name.clear()
        self.by_second.clear()
        self.buffered = 0

    def take(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]]]:
        """Everything since the last take, encoded: (LatencyBook.take(), Timeline.take())."""
        self.flush()
        return self.latency.take(), self.timeline.take()
