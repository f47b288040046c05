"""The load generator's side of the exact latency percentiles: every request's latencies, buffered
per 1-second window (swarmbench/latency/windows.py) and shipped as the HDR buckets they count in (the
windows' wire format). One recorder for every run: the closed model records the service time, the
open model (--arrival-rate) the time since the intended start as well, in the same call."""

from __future__ import annotations

from collections import Counter

from swarmbench.latency.histogram import KINDS, SUB_BUCKET_BITS, Timeline, bucket_us
from swarmbench.latency.windows import WINDOW_S, Packed, Shipment, pack, rebased, ship


class _Buffer:
    """One (window, request type, name)'s samples since the last flush, per kind."""

    __slots__ = ("failures", "service", "values")

    def __init__(self) -> None:
        self.values: tuple[list[int], list[int]] = ([], [])  # microseconds, per KINDS
        self.service = self.values[0]  # the closed model's one list, one lookup less a request
        self.failures = [0, 0]


class Recorder:
    """A load generator's hot path: every request's latencies, buffered, then counted in batches.

    At thousands of requests per second, an HDR record_value() per request and kind costs a load
    generator ~5 % of its requests. Appending to a list costs a tenth of one, and latencies in
    microseconds repeat a lot: a batch is counted as {value: count} (one Counter, in C) and shipped
    as the buckets those values fall in (windows.pack, windows.ship: the wire format): no histogram
    per window and name is made or kept, however long a standalone run goes without a report.
    """

    FLUSH_AT = 20_000
    """Samples buffered before they go into the histograms: bounds the buffers' memory (~1 MB, plus
    at most one window of one name) when reports are rare (a standalone run reports once, at the
    end). Checked when a window's first request of a name comes, not at every request."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[int, str, str], _Buffer] = {}
        self.by_second: dict[int, tuple[list[int], list[int]]] = {}  # open model: intended start's second
        self.timeline = Timeline()
        self.shipped: dict[
            int, dict[tuple[str, str, int], Packed]
        ] = {}  # window -> key -> since the last take

    def record(
        self,
        window: int,
        request_type: str,
        name: str,
        service_ms: float,
        failed: bool,
        intended: tuple[float, int] | None = None,
    ) -> None:
        """One request that ended in WINDOW: its service time, and (open model, inside an
        iteration) INTENDED = (ms since the iteration's intended start, the schedule's second)."""
        buffer = self.buffers.get((window, request_type, name))
        if buffer is None:
            buffer = self.new_buffer((window, request_type, name))
        service = bucket_us(service_ms)
        buffer.values[0].append(service)
        buffer.failures[0] += failed
        if intended is not None:
            late = bucket_us(intended[0])
            buffer.values[1].append(late)
            buffer.failures[1] += failed
            per_second = self.by_second.get(intended[1])
            if per_second is None:
                per_second = self.by_second[intended[1]] = ([], [])
            per_second[0].append(service)
            per_second[1].append(late)

    def record_closed(
        self, since_start: float, request_type: str, name: str, service_ms: float, failed: bool
    ) -> None:
        """record() of a request with no intended start (every closed-loop request), that ended
        SINCE_START seconds after the test start: window_of() and bucket_us() inline. One call per
        request instead of three, on the path every request of every run takes (a listener's share
        of a worker's CPU: bench/bench_latency.py cost); tests/test_latency_units.py checks it
        records what record() records."""
        key = (int(since_start // WINDOW_S) if since_start > 0 else 0, request_type, name)
        buffer = self.buffers.get(key)
        if buffer is None:
            buffer = self.new_buffer(key)
        us = int(service_ms * 1000 + 0.5)
        shift = us.bit_length() - SUB_BUCKET_BITS
        buffer.service.append(us >> shift << shift if shift > 0 else us)
        if failed:
            buffer.failures[0] += 1

    def new_buffer(self, key: tuple[int, str, str]) -> _Buffer:
        """KEY's buffer, the first request of its window and name: first a flush when FLUSH_AT
        samples are held (counted here, once a window and name, rather than at every request)."""
        held = sum(len(b.values[0]) + len(b.values[1]) for b in self.buffers.values())
        if held + sum(len(lists[0]) for lists in self.by_second.values()) >= self.FLUSH_AT:
            self.flush()
        buffer = self.buffers[key] = _Buffer()
        return buffer

    def flush(self) -> None:
        shipped = self.shipped
        for (window, request_type, name), buffer in self.buffers.items():
            for kind, values, failures in zip(range(len(KINDS)), buffer.values, buffer.failures, strict=True):
                if values:
                    keyed = shipped.get(window)
                    if keyed is None:
                        keyed = shipped[window] = {}
                    # flushed before in this report (FLUSH_AT): together
                    _add(keyed, (request_type, name, kind), (*pack(Counter(values)), failures))
        for second, lists in self.by_second.items():
            for kind, values in zip(KINDS, lists, strict=True):
                if values:
                    self.timeline.record_counts(second, kind, Counter(values))
        self.buffers.clear()
        self.by_second.clear()

    def take(self) -> tuple[Shipment, dict[str, dict[str, str]]]:
        """Everything since the last take, as shipped: (the windows' Shipment, Timeline.take())."""
        self.flush()
        shipped, self.shipped = self.shipped, {}
        return ship(shipped), self.timeline.take()

    def rebase(self, counted_from: float, t0: float) -> None:
        """What is not shipped yet counts its windows from T0 (the master moved the start: a web-UI
        reset), where it counted from COUNTED_FROM."""
        if counted_from == t0 or not (self.buffers or self.shipped):
            return
        buffers, self.buffers = self.buffers, {}
        for (window, request_type, name), buffer in buffers.items():
            moved = (rebased(window, counted_from, t0), request_type, name)
            mine = self.buffers.get(moved)
            if mine is None:
                self.buffers[moved] = buffer
            else:  # two old windows in one new one (window 0): the same samples, together
                for kind in range(len(KINDS)):
                    mine.values[kind].extend(buffer.values[kind])
                    mine.failures[kind] += buffer.failures[kind]
        shipped, self.shipped = self.shipped, {}
        for window, keyed in shipped.items():
            into = self.shipped.setdefault(rebased(window, counted_from, t0), {})
            for key, packed in keyed.items():  # two old windows in one new one (window 0): together
                _add(into, key, packed)

    def clear(self) -> None:
        """Forget what was not shipped (a new test: Locust clears its stats then too)."""
        self.take()


def _add(keyed: dict[tuple[str, str, int], Packed], key: tuple[str, str, int], packed: Packed) -> None:
    """PACKED filed under KEY, after the samples KEYED holds there already (the same window's)."""
    before = keyed.get(key)
    if before is not None:
        packed = (before[0] + packed[0], before[1] + packed[1], before[2] + packed[2])
    keyed[key] = packed
