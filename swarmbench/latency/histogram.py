"""Exact latency: HDR histograms per request name, their encodings (hdrh's and a compact one), merged
across load generators, read as percentiles and files.

A compact text encoding of one of our HDR histograms: the `hdr` column of locust_latency_windows.csv.

HdrHistogram's own V2 encoding (hdrh's encode(): what workers ship and locust_latency_hdr.json holds)
spends ~45 bytes a histogram on a header that is the same for all of ours (1 µs .. 1 h, 3 significant
figures: hdr.new_histogram) and 2 bytes per recorded bucket (a zero run, then the count). A 1-second
window of one request name holds tens to hundreds of samples, most of them alone in their bucket, so
that overhead is most of the file. This encoding keeps exactly the same buckets and counts:

    "z1:" + base64( raw deflate( varints ) )      varints: unsigned LEB128
    varints = N, then per non-empty bucket (in index order) gap*2 + (count == 1), where gap is the
              number of empty buckets since the previous one, then the counts that are not 1, in order

The histogram parameters are implied (hdr.new_histogram's); a reader tells this encoding from a V2
one by its prefix (V2's base64 starts "HISTF"). About half the bytes of V2 at 10-1000 samples.
Pure Python and zlib (the plugin's image has no numpy); hdrh's C encoder finds the buckets.

Exact latency percentiles: HDR histograms per request name, merged across load generators.

Locust keeps response times rounded to 2 significant digits (10 ms buckets above 100 ms, 100 ms
above 1 s), so its p99 can exceed its max and percentiles of different workers cannot be combined
exactly. An HDR histogram keeps 3 significant digits over 1 µs .. 1 h in fixed memory and adds up
losslessly, so the master's histogram of two workers IS the histogram of all their samples.

Two kinds per request name (KINDS): `service`, Locust's own response time, and `intended`, the time
from the iteration's intended start (open model, core/loadspec.py) to the end of the request: the
latency a user arriving on schedule saw, queueing for a free user included (what a closed-loop
test hides: coordinated omission).

Shared by the plugin and the analysis, so neither imports the other: encoding, decoding, merging
and percentiles, with no Locust or gevent (only the `hdrhistogram` package and swarmbench.core).
The load generator's hot path, the Recorder that batches samples into these histograms, is the
plugin's (latency/recorder.py)."""

from __future__ import annotations

import base64
import binascii
import csv
import ctypes
import json
import sys
import weakref
import zlib
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable
from functools import cache
from itertools import accumulate
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram
from pyhdrh import encode as _v2_varints

from swarmbench.core.atomic import atomic_file
from swarmbench.core.checks import AGGREGATED, PERCENTILE_METRICS
from swarmbench.core.exits import InputError, read_text

# --- the compact text encoding --------------------------------------------------------------------

PREFIX = "z1:"
"""Marks this encoding (version 1) in a text column: not base64, so never the start of a V2 one."""

_WBITS = -15  # raw deflate: no zlib header or checksum (the row's count column checks the content)


def is_compact(text: str) -> bool:
    return text.startswith(PREFIX)


def encode_compact(hist: HdrHistogram) -> str:
    """HIST (made by hdr.new_histogram) in this encoding."""
    return encode_buckets(*buckets(hist))


def encode_buckets(indices: list[int], counts: list[int]) -> str:
    """The non-empty buckets INDICES (ascending counts indices of hdr.new_histogram's) holding COUNTS,
    in this encoding: what the master writes for each window without a histogram in between."""
    out = bytearray()
    _varint(len(indices), out)
    previous = [-1, *indices[:-1]] if indices else []
    _varints([(i - p) * 2 - 2 + (c == 1) for i, p, c in zip(indices, previous, counts, strict=True)], out)
    _varints([count for count in counts if count != 1], out)
    deflate = zlib.compressobj(9, zlib.DEFLATED, _WBITS)
    return PREFIX + base64.b64encode(deflate.compress(bytes(out)) + deflate.flush()).decode("ascii")


def is_whole(text: str) -> bool:
    """TEXT is base64 of one whole deflate stream (cheap: no varint read), for a reader's early check."""
    try:
        inflate = zlib.decompressobj(_WBITS)
        inflate.decompress(binascii.a2b_base64(text[len(PREFIX) :], strict_mode=True))
    except (binascii.Error, zlib.error):
        return False
    return inflate.eof and not inflate.unused_data


def decode_compact(text: str, hist: HdrHistogram) -> HdrHistogram:
    """TEXT's buckets into HIST (a new, empty hdr.new_histogram()); ValueError when TEXT is not a
    whole encoding of one (cut off, bad base64, a bucket out of range, bytes left over)."""
    indices, counts = decode_buckets(text)
    counts_array = hist.counts
    for index, count in zip(indices, counts, strict=True):
        counts_array[index] = count
    if indices:
        hist.set_internal_tacking_values(indices[0], indices[-1], sum(counts))
    return hist


def decode_buckets(text: str) -> tuple[list[int], list[int]]:
    """TEXT's (indices, counts) of its non-empty buckets, ascending; ValueError as decode_compact."""
    try:
        raw = binascii.a2b_base64(text[len(PREFIX) :], strict_mode=True)
        inflate = zlib.decompressobj(_WBITS)
        data = inflate.decompress(raw)
    except (binascii.Error, zlib.error) as e:
        raise ValueError(f"not base64 of a deflated stream ({type(e).__name__})") from None
    if not inflate.eof or inflate.unused_data:
        raise ValueError("cut off, or bytes after its end")
    values = _read_varints(data)
    n = values[0] if values else -1
    tokens = values[1 : 1 + n]
    if n < 0 or len(tokens) != n:
        raise ValueError("cut off")
    others = iter(values[1 + n :])
    indices, counts, index = [], [], -1
    for token in tokens:
        index += (token >> 1) + 1
        count = 1 if token & 1 else next(others, 0)
        if index >= COUNTS_LEN or count <= 0:
            raise ValueError("a bucket out of range, or a count missing")
        indices.append(index)
        counts.append(count)
    if next(others, None) is not None:
        raise ValueError("more counts than buckets")
    return indices, counts


def buckets(hist: HdrHistogram) -> tuple[list[int], list[int]]:
    """(indices, counts) of HIST's non-empty buckets, from hdrh's C V2 varints (zigzag LEB128: a
    negative value is a run of that many empty buckets), so no Python loop over empty buckets."""
    if not hist.total_count:
        return [], []
    length = hist.get_counts_array_index(hist.max_value) + 1
    size = length * 9 + 16
    buffer = (ctypes.c_byte * size)()
    used = _v2_varints(ctypes.addressof(hist.counts), length, 8, ctypes.addressof(buffer), size)
    indices, counts, index = [], [], 0
    for value in _read_varints(ctypes.string_at(buffer, used)):
        value = (value >> 1) ^ -(value & 1)  # zigzag
        if value <= 0:  # a run of empty buckets (a lone one may be written as a count of 0)
            index += -value or 1
        else:
            indices.append(index)
            counts.append(value)
            index += 1
    return indices, counts


def _varints(values: list[int], out: bytearray) -> None:
    """VALUES (>= 0) as varints onto OUT: all in one C call when each fits one byte, or two (a
    table of the two-byte ones), else one by one (the master encodes every window and name:
    thousands of buckets a second, counts in the tens to thousands)."""
    top = max(values, default=0)
    if top < 0x80:
        out += bytes(values)
    elif top < _TWO_BYTES:
        out += b"".join(map(_varint_table().__getitem__, values))
    else:
        for value in values:
            _varint(value, out)


_TWO_BYTES = 1 << 14
"""Values below this are varints of one or two bytes: _varint_table holds them all."""


@cache
def _varint_table() -> list[bytes]:
    """Every varint of one or two bytes (~0.6 MB), made when a master first encodes counts >= 128 (or
    warmed at a test's start, plugin/latency.py: made one by one it held a standalone runner's loop
    ~20-45 ms in the middle of its load). Two bytes: the low 7 bits with the continuation bit, then
    the rest (< 0x80 below _TWO_BYTES), as _varint writes them."""
    two = [bytes(((v & 0x7F) | 0x80, v >> 7)) for v in range(0x80, _TWO_BYTES)]
    return [bytes((v,)) for v in range(0x80)] + two


def warm() -> None:
    """Make what encoding a window's counts needs (the varint table) now, before a test's load: a
    master or standalone runner calls it at the test's start."""
    _varint_table()


def _varint(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_varints(data: bytes) -> list[int]:
    out, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
        else:
            out.append(value)
            value, shift = 0, 0
    if shift:
        raise ValueError("cut off inside a number")
    return out


# --- HDR histograms per request name --------------------------------------------------------------

SIGNIFICANT_FIGURES = 3
"""Decimal digits kept: values within 0.1 % (1 µs at 1 ms, 1 ms at 1 s); more digits double memory."""

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
"""Trackable range in microseconds: 1 µs to one hour (longer samples are recorded as one hour)."""

KINDS = ("service", "intended")

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)
PERCENTILE_COLUMNS = tuple(f"p{p:g}_ms" for p in PERCENTILES)
CSV_COLUMNS = ("type", "name", "kind", "count", *PERCENTILE_COLUMNS, "max_ms")
"""Columns of locust_latency_hdr.csv (folder.LATENCY_HDR_CSV), milliseconds."""

FORMAT_VERSION = 1
"""Of the encoded-histogram JSON file; bumped if its layout changes."""

Key = tuple[str, str, str]  # (request type, name, kind)


def to_us(ms: float) -> int:
    """Milliseconds (Locust's unit) to whole microseconds (the histograms'), rounded half up."""
    return int(ms * 1000 + 0.5)


def bucket_us(ms: float) -> int:
    """to_us(MS) moved down to the lowest value of its HDR bucket: recording either is the same
    histogram (a bucket keeps no more than its count; encoding keeps no min or max), but samples of
    one bucket become one value. The Recorder batches {value: count}, so above 2.048 ms (where a
    bucket is 2, 4, 8, ... µs wide) a batch has several times fewer values to count in."""
    us = to_us(ms)
    shift = us.bit_length() - SUB_BUCKET_BITS
    return us >> shift << shift if shift > 0 else us


def clamped(us: int) -> int:
    """Within the trackable range: longer samples count as one hour, shorter as 1 µs."""
    return min(HIGHEST_US, max(LOWEST_US, us))


def new_histogram() -> HdrHistogram:
    """An empty histogram of ours, freed as soon as nothing refers to it. hdrh's histogram and its
    encoder refer to each other, so without this only Python's cyclic collector frees one, and it
    runs by object counts, not bytes: a master sealing a window makes a ~200 KB histogram per name,
    and hundreds of them (100+ MB) piled up between collections, RSS growing with them. The
    encoder's link back is a weak proxy instead (it only reads the histogram's fields)."""
    hist = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    hist.encoder.histogram = weakref.proxy(hist)
    return hist


def clear(hist: HdrHistogram) -> HdrHistogram:
    """HIST emptied in place, as new_histogram() makes one, and returned. A generator encodes a
    histogram per window and request name every report; making each anew costs 0.1 ms (24,576
    counters) and hdrh's reset() sets them one by one in Python (0.9 ms): at 100 requests a window,
    a microsecond a request. One memset is 2 µs. The fields are those the constructor sets."""
    ctypes.memset(hist.counts, 0, ctypes.sizeof(hist.counts))
    hist.total_count = 0
    hist.min_value = sys.maxsize
    hist.max_value = 0
    hist.start_time_stamp_msec = 0
    hist.end_time_stamp_msec = 0
    return hist


SUB_BUCKET_BITS = (2 * 10**SIGNIFICANT_FIGURES - 1).bit_length()
"""log2 of the histograms' sub-buckets (hdrh: 2 x 10^digits rounded up to a power of two, 2048):
values below 2^this are exact, each power of two above it is split into half that many buckets.
bucket_us() and add_counts() do hdrh's index arithmetic for LOWEST_US = 1 (unit magnitude 0);
tests/test_latency_units.py checks both against hdrh's own."""


class LatencyBook:
    """Histograms keyed by (request type, name, kind); values recorded in microseconds."""

    def __init__(self) -> None:
        self.hists: dict[Key, HdrHistogram] = {}

    def _hist(self, key: Key) -> HdrHistogram:
        hist = self.hists.get(key)
        if hist is None:
            hist = self.hists[key] = new_histogram()
        return hist

    def record(self, request_type: str, name: str, kind: str, ms: float) -> None:
        self._hist((request_type, name, kind)).record_value(clamped(to_us(ms)))

    def record_counts(self, request_type: str, name: str, kind: str, counts: Counter[int]) -> None:
        """Add COUNTS {microseconds: how many} at once (the plugin's Recorder batches)."""
        add_counts(self._hist((request_type, name, kind)), counts)

    def __bool__(self) -> bool:
        return any(h.get_total_count() for h in self.hists.values())

    # --- shipping: encoded deltas, merged on the master ---

    def encode(self) -> list[dict[str, Any]]:
        """JSON/msgpack-safe: one entry per non-empty histogram, its HdrHistogram base64 encoding."""
        return [
            {"type": t, "name": n, "kind": k, "hdr": h.encode().decode("ascii")}
            for (t, n, k), h in sorted(self.hists.items())
            if h.get_total_count()
        ]

    def take(self) -> list[dict[str, Any]]:
        """encode() and start over: what a worker ships with each stats report (a delta)."""
        out = self.encode()
        self.hists.clear()
        return out

    def merge(self, encoded: Iterable[dict[str, Any]], where: str | Path = "histograms") -> None:
        """Add histograms another process encoded; InputError naming WHERE and the entry's index
        on a malformed one."""
        for row, entry in enumerate(encoded, 1):
            try:
                key = (str(entry["type"]), str(entry["name"]), str(entry["kind"]))
                text = entry["hdr"]
            except (KeyError, TypeError):
                raise InputError(where, f"histogram {row}: not a type/name/kind/hdr object") from None
            self.add(key, decode(text, where, f"histogram {row}"))

    def add(self, key: Key, hist: HdrHistogram) -> None:
        mine = self.hists.get(key)
        if mine is None:
            mine = self.hists[key] = new_histogram()
        mine.add(hist)

    def aggregated(self, kind: str, name: str = AGGREGATED) -> HdrHistogram:
        """All request names of KIND in one histogram (or NAME's, under every request type)."""
        total = new_histogram()
        for (_t, n, k), h in self.hists.items():
            if k == kind and name in (AGGREGATED, n):
                total.add(h)
        return total

    # --- the run folder ---

    def rows(self) -> list[dict[str, Any]]:
        """CSV rows: each (type, name, kind), sorted, then one Aggregated row per kind."""
        keyed = sorted(self.hists.items(), key=lambda kv: (kv[0][1], kv[0][0], KINDS.index(kv[0][2])))
        out = [summary_row(t, n, k, h) for (t, n, k), h in keyed if h.get_total_count()]
        for kind in KINDS:
            total = self.aggregated(kind)
            if total.get_total_count():
                out.append(summary_row("", AGGREGATED, kind, total))
        return out

    def write_csv(self, path: Path) -> None:
        with atomic_file(path, newline="") as f:
            writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            writer.writerows(self.rows())

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "unit": "us",
            "significant_figures": SIGNIFICANT_FIGURES,
            "histograms": self.encode(),
        }

    @classmethod
    def from_json(cls, data: Any, where: str | Path = "histograms") -> LatencyBook:
        if not isinstance(data, dict) or not isinstance(data.get("histograms") or [], list):
            raise InputError(where, "expected an object with a list of histograms")
        book = cls()
        book.merge(data.get("histograms") or [], where)
        return book

    @classmethod
    def read(cls, path: Path) -> LatencyBook:
        """The histograms of a locust_latency_hdr.json; InputError naming it (and the histogram)
        when it is unreadable, truncated or corrupt."""
        try:
            data = json.loads(read_text(path))
        except json.JSONDecodeError as e:
            raise InputError(path, f"invalid JSON at line {e.lineno}: {e.msg}") from None
        return cls.from_json(data, path)


class LatencyView(LatencyBook):
    """A LatencyBook over histograms another object goes on counting into (Windows.totals: the run so
    far, asked every live poll), without copying them: read it now; nothing can be added to it (a
    TypeError), and a reader that keeps figures across the owner's later counting copies them."""

    def __init__(self, hists: dict[Key, HdrHistogram]) -> None:
        super().__init__()
        self.hists = hists

    def _hist(self, key: Key) -> HdrHistogram:
        raise TypeError("a LatencyView is read-only: add its histograms into a LatencyBook instead")

    def add(self, key: Key, hist: HdrHistogram) -> None:
        self._hist(key)


def decode(text: Any, where: str | Path, row: str) -> HdrHistogram:
    """One encoded histogram, HdrHistogram's V2 or ours (the compact one: the windows file's); InputError
    naming WHERE and ROW when it is not one (truncated, bad base64, a wrong cookie: hdrh raises a
    different exception for each)."""
    text = str(text)
    try:
        if is_compact(text):
            return decode_compact(text, new_histogram())
        return HdrHistogram.decode(text.encode("ascii"))
    except Exception as e:  # noqa: BLE001 -- binascii, zlib, struct and hdrh's own errors
        raise InputError(where, f"{row}: not an encoded HDR histogram ({type(e).__name__})") from None


def exact_value(book: LatencyBook, name: str, metric: str, requests: int) -> float | None:
    """A threshold's latency METRIC (p50 .. p99.9, max) of NAME's service time, in ms; None unless
    the histograms hold exactly the REQUESTS Locust timed for that name (a generator whose windows
    were lost would make a percentile of part of the run look like the whole)."""
    hist = book.aggregated("service", name)
    if not requests or hist.get_total_count() != requests:
        return None
    if metric == "max":
        return max_ms(hist)
    return percentile_ms(hist, PERCENTILE_METRICS[metric])


def percentile_ms(hist: HdrHistogram, p: float) -> float:
    return round(hist.get_value_at_percentile(p) / 1000, 3)


def max_ms(hist: HdrHistogram) -> float:
    return round(hist.get_max_value() / 1000, 3)


def percentile_values(hist: HdrHistogram, percentiles: Iterable[float]) -> dict[float, int]:
    """{percentile: value in µs}, the same values as hdrh's get_percentile_to_value_dict, read from
    HIST's non-empty buckets (bucket_percentiles)."""
    return bucket_percentiles(*buckets(hist), percentiles)


def bucket_percentiles(
    indices: list[int], counts: list[int], percentiles: Iterable[float]
) -> dict[float, int]:
    """{percentile: value in µs} of the histogram whose non-empty buckets are INDICES (ascending)
    holding COUNTS: the same values as hdrh's get_percentile_to_value_dict.

    Method: the first bucket whose running total reaches the percentile's target count
    (round(p% of the total), at least 1: hdrh's get_target_count_at_percentile) gives the highest
    value equivalent to its index (the lowest for p = 0). hdrh walks all 24,576 counts one Python
    step at a time (~1 ms a histogram); here the running totals are itertools.accumulate over the
    non-empty buckets only and each target is a bisect (what keeps the master's per-window rows
    cheap). Empty buckets never move a running total, so the bucket found is the one hdrh finds."""
    running = list(accumulate(counts))
    total = running[-1] if running else 0
    out: dict[float, int] = {}
    for p in percentiles:
        target = max(int(min(p, 100.0) * total / 100 + 0.5), 1)
        position = bisect_left(running, target)
        if p <= 100 and position < len(running):
            value = _VALUES.get_value_from_index(indices[position])
            out[p] = _VALUES.get_highest_equivalent_value(value) if p else value
    return out


def summed_percentiles(
    parts: list[tuple[list[int], list[int]]], percentiles: Iterable[float]
) -> dict[float, int]:
    """bucket_percentiles of the histograms PARTS (each its (indices, counts), ascending) added up,
    without adding them: the running total of the sum at an index is the sum of each part's running
    total there (a bisect into each), which only grows with the index, so the first index where it
    reaches a target is found by bisecting the indices: ~15 steps of one bisect per part, where
    adding the parts costs a step per bucket (a window's Aggregated row, every window, on the
    master). The same values as bucket_percentiles of the sum: tests/test_latency_merge.py."""
    runs = [(indices, list(accumulate(counts))) for indices, counts in parts if indices]
    total = sum(running[-1] for _, running in runs)
    out: dict[float, int] = {}
    if not runs:
        return out
    first, last = min(indices[0] for indices, _ in runs), max(indices[-1] for indices, _ in runs)
    for p in percentiles:
        target = max(int(min(p, 100.0) * total / 100 + 0.5), 1)
        if p > 100 or target > total:
            continue
        low, high = first, last  # the first index whose running total reaches TARGET is in here
        while low < high:
            middle = (low + high) // 2
            reached = 0
            for indices, running in runs:
                position = bisect_right(indices, middle)
                if position:
                    reached += running[position - 1]
            if reached >= target:
                high = middle
            else:
                low = middle + 1
        value = _VALUES.get_value_from_index(low)
        out[p] = _VALUES.get_highest_equivalent_value(value) if p else value
    return out


def bucket_max(indices: list[int]) -> int:
    """The max (µs) hdrh reports (get_max_value) of a histogram whose highest non-empty bucket is
    INDICES[-1]: that bucket's highest equivalent value, as a decoded histogram's."""
    return _VALUES.get_highest_equivalent_value(_VALUES.get_value_from_index(indices[-1])) if indices else 0


def percentile_columns(hist: HdrHistogram, percentiles: tuple[float, ...] = PERCENTILES) -> dict[str, float]:
    """{"p50_ms": ..., "max_ms": ...} in one pass over the counts (percentile_values)."""
    return bucket_columns(*buckets(hist), percentiles)


def bucket_columns(indices: list[int], counts: list[int], percentiles: tuple[float, ...]) -> dict[str, float]:
    """percentile_columns of the histogram whose non-empty buckets are INDICES holding COUNTS."""
    return ms_columns(bucket_percentiles(indices, counts, percentiles), percentiles, bucket_max(indices))


def ms_columns(values: dict[float, int], percentiles: tuple[float, ...], top: int) -> dict[str, float]:
    """{"p50_ms": ..., "max_ms": ...} of VALUES {percentile: µs} and TOP, the max in µs."""
    out = {f"p{p:g}_ms": round(values[p] / 1000, 3) for p in percentiles}
    out["max_ms"] = round(top / 1000, 3)
    return out


def summary_row(request_type: str, name: str, kind: str, hist: HdrHistogram) -> dict[str, Any]:
    row: dict[str, Any] = {"type": request_type, "name": name, "kind": kind, "count": hist.get_total_count()}
    row.update(percentile_columns(hist))
    return row


class Timeline:
    """Per second of the run, one histogram per kind over all request names: the latency curves.

    Generators record and ship encoded deltas; the master keeps them encoded (a few hundred bytes
    each, where a live histogram is ~200 KB) and decodes one second at a time when it writes.
    """

    def __init__(self) -> None:
        self.live: dict[int, dict[str, HdrHistogram]] = {}
        self.encoded: dict[int, dict[str, list[str]]] = {}

    def _hist(self, second: int, kind: str) -> HdrHistogram:
        kinds = self.live.setdefault(second, {})
        hist = kinds.get(kind)
        if hist is None:
            hist = kinds[kind] = new_histogram()
        return hist

    def record(self, second: int, kind: str, ms: float) -> None:
        self._hist(second, kind).record_value(clamped(to_us(ms)))

    def record_counts(self, second: int, kind: str, counts: Counter[int]) -> None:
        """Add COUNTS {microseconds: how many} at once (the plugin's Recorder batches)."""
        add_counts(self._hist(second, kind), counts)

    def take(self) -> dict[str, dict[str, str]]:
        out = {
            str(s): {k: h.encode().decode("ascii") for k, h in kinds.items()}
            for s, kinds in self.live.items()
        }
        self.live.clear()
        return out

    def merge(self, shipped: dict[str, dict[str, str]]) -> None:
        for second, kinds in shipped.items():
            mine = self.encoded.setdefault(int(second), {})
            for kind, text in kinds.items():
                mine.setdefault(kind, []).append(text)

    def percentile_between(self, kind: str, first: int, last: int, p: float) -> float | None:
        """P-th percentile (ms) of KIND over seconds FIRST..LAST-1 merged (None without samples)."""
        hist = new_histogram()
        for second, kinds in self.encoded.items():
            if first <= second < last:
                for text in kinds.get(kind, []):
                    hist.add(HdrHistogram.decode(text.encode("ascii")))
        return percentile_ms(hist, p) if hist.get_total_count() else None

    def percentiles(self) -> dict[int, dict[str, Any]]:
        """{second: {"<kind>_count", "<kind>_p50_ms", "<kind>_p99_ms"}} for every second with samples."""
        out: dict[int, dict[str, Any]] = {}
        for second, kinds in sorted(self.encoded.items()):
            row: dict[str, Any] = {}
            for kind in KINDS:
                hist = new_histogram()
                for text in kinds.get(kind, []):
                    hist.add(HdrHistogram.decode(text.encode("ascii")))
                count = hist.get_total_count()
                row[f"{kind}_count"] = count
                row[f"{kind}_p50_ms"] = percentile_ms(hist, 50) if count else ""
                row[f"{kind}_p99_ms"] = percentile_ms(hist, 99) if count else ""
            out[second] = row
        return out


def add_counts(hist: HdrHistogram, counts: Counter[int]) -> None:
    """COUNTS {microseconds: how many} into HIST, clamped to the trackable range: what
    record_value(clamped(us), n) does for each, with its index arithmetic inline (hdrh's own takes
    five Python calls a value, the largest part of a load generator's recording cost)."""
    if not counts:
        return
    half_magnitude, half = hist.sub_bucket_half_count_magnitude, hist.sub_bucket_half_count
    mask, into, total = hist.sub_bucket_mask, hist.counts, 0
    for us, n in counts.items():
        us = HIGHEST_US if us > HIGHEST_US else LOWEST_US if us < LOWEST_US else us
        bucket = (us | mask).bit_length() - half_magnitude - 1
        into[((bucket + 1) << half_magnitude) + (us >> bucket) - half] += n
        total += n
    hist.total_count += total
    hist.min_value = min(hist.min_value, clamped(min(counts)))
    hist.max_value = max(hist.max_value, clamped(max(counts)))


TIMELINE_COLUMNS = tuple(f"{kind}_{stat}" for kind in KINDS for stat in ("count", "p50_ms", "p99_ms"))
"""The latency columns Timeline.percentiles() adds to each second of locust_arrival.csv."""


# --- bucket indices: the histograms as counts per bucket, without a histogram --------------------
#
# Workers ship each window's samples as the indices of their buckets in hdr.new_histogram()'s counts
# array (latency/windows.py: the wire format), and the master counts them per window and name and
# makes the window's rows from the non-empty buckets (bucket_percentiles, encode_buckets): no 200 KB
# histogram per piece, per window or per name. The index arithmetic is hdrh's for LOWEST_US = 1
# (unit magnitude 0); tests/test_hdr_add.py checks it against hdrh's own.

_VALUES = new_histogram()
"""A histogram of ours used only for hdrh's value arithmetic (value of an index, its bucket's
highest value): it depends on the parameters alone, never on counts."""

COUNTS_LEN = _VALUES.counts_len
"""Buckets in one of our histograms (24,576 for 1 µs .. 1 h at 3 digits): every index is below."""

_HALF_BITS = SUB_BUCKET_BITS - 1
_HALF = 1 << _HALF_BITS
_MASK = (1 << SUB_BUCKET_BITS) - 1


def bucket_index(us: int) -> int:
    """The counts index where record_value(clamped(US)) counts it (hdrh's _counts_index_for)."""
    us = HIGHEST_US if us > HIGHEST_US else LOWEST_US if us < LOWEST_US else us
    bucket = (us | _MASK).bit_length() - _HALF_BITS - 1
    return ((bucket + 1) << _HALF_BITS) + (us >> bucket) - _HALF


def from_buckets(counts: dict[int, int]) -> HdrHistogram:
    """A histogram of ours holding COUNTS {counts index: count} (non-zero): what decoding one whose
    buckets those are gives, total, min and max included."""
    hist = new_histogram()
    add_buckets(hist, counts)
    return hist


def add_buckets(hist: HdrHistogram, counts: dict[int, int]) -> None:
    """COUNTS {counts index: count} (non-zero) added into HIST, its total, min and max too (what
    hdrh's set_internal_tacking_values makes of them, for a histogram that already holds some)."""
    if not counts:
        return
    into = hist.counts
    for index, count in counts.items():  # ~60 ns a bucket
        into[index] += count
    hist.total_count += sum(counts.values())
    hist.min_value = min(hist.min_value, hist.get_value_from_index(min(counts)))
    top = hist.get_highest_equivalent_value(hist.get_value_from_index(max(counts)))
    hist.max_value = max(hist.max_value, top)


class Samples:
    """One figure's samples (µs) from a load generator's hot path, kept as histogram buckets: a
    sample costs a list append where it happens; the list is counted into bucket indices FOLD_AT at
    a time (a Counter in C, then one index a distinct value) and shipped as encode_buckets text,
    which merges losslessly. The open model's start lag (plugin/openmodel.py) is one."""

    FOLD_AT = 4096
    """Samples held before they are counted: bounds the list (~150 KB) in a standalone run, which
    ships once, at its end; counting that many takes ~0.3 ms, a short hold of the event loop."""

    __slots__ = ("buckets", "pending")

    def __init__(self) -> None:
        self.pending: list[int] = []  # microseconds, appended on the hot path
        self.buckets: Counter[int] = Counter()  # counts index -> samples

    def fold(self) -> None:
        """Count what is pending into the buckets."""
        if self.pending:
            buckets = self.buckets
            for us, n in Counter(self.pending).items():
                buckets[bucket_index(us)] += n
            self.pending.clear()

    def take(self) -> str | None:
        """Everything since the last take as encode_buckets text (None when there is nothing), then
        start over: a worker's report carries the delta."""
        self.fold()
        if not self.buckets:
            return None
        indices = sorted(self.buckets)
        text = encode_buckets(indices, [self.buckets[i] for i in indices])
        self.buckets = Counter()
        return text

    def merge(self, text: str) -> None:
        """Add a take()'s TEXT (ValueError, naming what is wrong, when it is not one)."""
        if not isinstance(text, str) or not text.startswith(PREFIX):
            raise ValueError(f"not a {PREFIX!r} bucket text")
        indices, counts = decode_buckets(text)
        self.buckets.update(dict(zip(indices, counts, strict=True)))

    def add(self, other: Samples) -> None:
        """OTHER's samples into these (the master's sum of its generators')."""
        other.fold()
        self.fold()
        self.buckets.update(other.buckets)

    def histogram(self) -> HdrHistogram:
        """The samples so far as one of our histograms (exact to its 3 significant digits)."""
        self.fold()
        return from_buckets(+self.buckets)
