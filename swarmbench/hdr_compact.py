"""A compact text encoding of one of our HDR histograms: the `hdr` column of locust_latency_windows.csv.

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
"""

from __future__ import annotations

import base64
import binascii
import ctypes
import zlib

from hdrh.histogram import HdrHistogram
from pyhdrh import encode as _v2_varints  # hdrh's own C encoder (a dependency of hdrh)

PREFIX = "z1:"
"""Marks this encoding (version 1) in a text column: not base64, so never the start of a V2 one."""

_WBITS = -15  # raw deflate: no zlib header or checksum (the row's count column checks the content)


def is_compact(text: str) -> bool:
    return text.startswith(PREFIX)


def encode_compact(hist: HdrHistogram) -> str:
    """HIST (made by hdr.new_histogram) in this encoding."""
    indices, counts = _buckets(hist)
    out = bytearray()
    _varint(len(indices), out)
    previous = -1
    for index, count in zip(indices, counts, strict=True):
        _varint((index - previous - 1) * 2 + (count == 1), out)
        previous = index
    for count in counts:
        if count != 1:
            _varint(count, out)
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
    counts_array, limit = hist.counts, hist.counts_len
    index, total, first = -1, 0, -1
    for token in tokens:
        index += (token >> 1) + 1
        count = 1 if token & 1 else next(others, 0)
        if index >= limit or count <= 0:
            raise ValueError("a bucket out of range, or a count missing")
        counts_array[index] = count
        total += count
        first = index if first < 0 else first
    if next(others, None) is not None:
        raise ValueError("more counts than buckets")
    if total:
        hist.set_internal_tacking_values(first, index, total)
    return hist


def _buckets(hist: HdrHistogram) -> tuple[list[int], list[int]]:
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
