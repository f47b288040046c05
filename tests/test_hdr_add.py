"""latency/histogram.py Adder (the master's decode of workers' pieces) adds exactly what hdrh's
decode-then-add
adds: the same counts, total and max, for pieces of any size; a piece it cannot take fast (our
compact encoding, other parameters) goes through the fallback; a corrupt one is left out, counted,
and leaves nothing behind in the scratch array for the next piece."""

from __future__ import annotations

import base64
import ctypes
import random
import zlib

from hdrh.histogram import HdrHistogram

from swarmbench.latency import histogram
from swarmbench.latency.histogram import HIGHEST_US, Adder, decode, new_histogram


def pieces(seed: int, n: int = 40) -> list[HdrHistogram]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        hist = new_histogram()
        for _ in range(rng.choice([0, 1, 5, 60, 800]) if i else 1):
            hist.record_value(min(HIGHEST_US, max(1, int(rng.lognormvariate(9, 2.5)))), rng.choice([1, 1, 3]))
        out.append(hist)
    return out


def hdrh_sum(texts: list[str]) -> HdrHistogram:
    total = new_histogram()
    for text in texts:
        total.add(decode(text, "test", "piece"))
    return total


def same(a: HdrHistogram, b: HdrHistogram) -> bool:
    size = ctypes.sizeof(a.counts)
    return (
        ctypes.string_at(a.counts, size) == ctypes.string_at(b.counts, size)
        and a.get_total_count() == b.get_total_count()
        and a.get_max_value() == b.get_max_value()
    )


def other(text: str) -> HdrHistogram:
    return decode(text, "test", "piece")


def test_v2_pieces_add_up_as_hdrh_adds_them():
    adder = Adder(new_histogram())
    for seed in range(5):
        texts = [h.encode().decode("ascii") for h in pieces(seed)]
        hist = new_histogram()
        assert adder.sum_into(hist, texts, other) == 0
        assert same(hist, hdrh_sum(texts))
    assert not any(adder.scratch), "the scratch array is clean between calls"


def test_compact_and_foreign_pieces_take_the_fallback():
    adder = Adder(new_histogram())
    mine = pieces(7, 6)
    foreign = HdrHistogram(1, 60_000_000, 2)  # other parameters: hdrh maps its buckets
    foreign.record_value(1234, 5)
    texts = [histogram.encode_compact(mine[1]), mine[2].encode().decode(), foreign.encode().decode()]
    texts += [histogram.encode_compact(h) for h in mine[3:]]
    hist = new_histogram()
    assert adder.sum_into(hist, texts, other) == 0
    assert same(hist, hdrh_sum(texts))


def zigzag_varint(value: int) -> bytes:
    value, out = (value << 1) ^ (value >> 63), bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes([*out, value])


def test_corrupt_pieces_are_left_out_and_counted():
    adder = Adder(new_histogram())
    good = [h.encode().decode("ascii") for h in pieces(3, 8)]
    spread = new_histogram()  # counts all over the array, written before the decoder fails
    for us in range(1, HIGHEST_US, HIGHEST_US // 500):
        spread.record_value(us)
    raw = base64.b64decode(spread.encode())
    # Its counts decode, then a run of empty buckets past the array's end: the decoder fails after
    # writing into the scratch array.
    past_the_end = zigzag_varint(-2 * new_histogram().counts_len) + zigzag_varint(1)
    body = zlib.compress(zlib.decompress(raw[8:]) + past_the_end)
    overflowing = base64.b64encode(raw[:4] + len(body).to_bytes(4, "big") + body).decode()
    bad = ["", "not base64 at all!", good[5][:-12], "z1:AAAA", overflowing]
    hist = new_histogram()
    assert adder.sum_into(hist, [*good[:4], *bad, *good[4:]], other) == len(bad)
    assert same(hist, hdrh_sum(good))
    assert not any(adder.scratch)
