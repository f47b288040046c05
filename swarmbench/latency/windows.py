"""Exact latency per time window: one HDR histogram per (window, request type, name, kind).

Every run records them (plugin/latency.py): each load generator counts its requests' response
times into the window in which each request ENDED (Locust counts a request when it ends too),
ships the windows as deltas with its stats report, and the master counts them by window. Windows
are counted from the test start (the master's: every generator uses its clock).

The wire format (WIRE_VERSION; internal: workers and master ship in one image, and a master refuses
another version's windows, saying so) is a Shipment: the report's keys, then one entry per window,

    keys     [[type, name, kind], ...]      kind: its index in KINDS
    windows  [[window, lengths, failures, pairs, indices], ...]

`indices` holds the window's samples as the counts indices (histogram.py bucket_index) of their
buckets, little-endian 16-bit integers, key after key in the keys' order, one per sample of the
buckets that hold at most REPEAT_MAX; `lengths` how many each key has (32-bit, one per key),
`failures` the same for failed requests (empty when none failed), `pairs` [key position, index,
count, ...] for the fuller buckets. The master checks a report (a few C calls a window) and files
each window entry as it came: one append a window, whatever the number of keys. It splits and
counts each entry once (Tally), when a reader first needs it (the live status every 2 s, the web
UI's poll, or sealing): each key's indices appended to one buffer (a memory copy per piece, in one
loop), then counted by a Counter over an array of 16-bit integers, in C.

Before (format 1, no version field) each (window, key) piece was an HdrHistogram V2 base64 text in a
map of its own: msgpack made ~20 objects of every piece, and the master inflated, decoded and
added each one over the span of its buckets (5-15 µs a piece, ~13,000 pieces a second at 1,000
workers x 10 names: most of the master's extra CPU, bench/bench_master_scale.py), in bursts
when a window was sealed. A sample now costs 2 bytes on the wire (V2: ~150 a piece) and ~0.1 µs
when its window is sealed.

The master keeps open windows (the last SEAL_AFTER) as those entries (2 bytes a sample). Older
ones are sealed: counted, added to the run's totals, and their CSV lines made from the non-empty
buckets (percentiles and the compact encoding, no histogram in between):
locust_latency_windows.csv, one row per window and (type, name, kind), each with its encoded
histogram (latency/histogram.py's compact encoding: half the bytes of HdrHistogram's V2), so a
later reader can merge any span of windows exactly (and bootstrap over them); plus an Aggregated
row per window and kind with its percentiles but no histogram (blank): it is the sum of the
window's other rows of that kind, so a reader merges those (files written before this kept one
there, in V2: still read).

Shared by the plugin and the analysis: no Locust or gevent here (swarmbench/latency/histogram.py's rule).
"""

from __future__ import annotations

import csv
import io
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from hdrh.histogram import HdrHistogram

from swarmbench.core.atomic import atomic_file
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import InputError, read_text
from swarmbench.latency import histogram
from swarmbench.latency.histogram import (
    COUNTS_LEN,
    FORMAT_VERSION,
    KINDS,
    Key,
    LatencyView,
    add_buckets,
    bucket_columns,
    bucket_index,
    bucket_max,
    decode,
    from_buckets,
    ms_columns,
    new_histogram,
    summed_percentiles,
)

WINDOW_S = 1
"""Seconds per window. One second, the finest Locust reports at (its per-second RPS): a run of a
few minutes then has hundreds of windows, enough for a later comparison of two runs to bootstrap
over; and the file stays small (one row per window and request name)."""

WINDOW_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
"""Per window: no p99.99, which one second's samples rarely hold enough requests to mean."""

WINDOW_COLUMNS = (
    ("window_s", "type", "name", "kind", "count", "failures")
    + tuple(f"p{p:g}_ms" for p in WINDOW_PERCENTILES)
    + ("max_ms", "hdr")
)
"""Columns of locust_latency_windows.csv (folder.LATENCY_WINDOWS_CSV): the window's start in seconds
from the test start, then milliseconds, then the window's histogram (the compact encoding, or
HdrHistogram's V2 base64 in older files; blank in Aggregated rows: the sum of the window's others)."""

WIRE_VERSION = 2
"""Of the windows a worker ships (the module docstring); plugin/latency.py sends it with them and
the master leaves out, and names, a worker's windows of another version. 1: one object per piece
with its HdrHistogram V2 text (no version field)."""

REPEAT_MAX = 2
"""A bucket holding up to this many of a window's samples of one key ships its index that many
times among the 16-bit indices (counted in C at the master, ~0.1 µs each); a fuller one ships as a
(key, index, count) triple, which the master adds in Python (~0.15 µs): at a few hundred requests
a second a bucket rarely holds more, at thousands the triples keep the bytes per bucket, not sample."""

SEAL_AFTER = 6
"""Windows a window stays open behind the newest one seen before it is counted per key and its CSV
rows are made. Workers report every 3 s, each report holding the windows since their last one, so
after ~2 report intervals a window rarely gets more; a piece that still comes later re-opens it
(the rows are made again, as exact: only slower). The master seals sooner when every worker has
said its reports hold everything up to a later time (seal_before)."""

COUNT_BATCH = 64
"""Window entries (a report's piece of one window: every key's samples) Windows.counting counts
before it yields. A master at 1,000 workers x 200 requests/s files ~400,000 samples in 2 s, ~2,000
entries of ~200 samples (a few µs each to split and count): counted in one go, 40-130 ms with the
gevent loop held, and a /metrics scrape waited that long (bench/bench_scrape.py). 64 entries are
~13,000 samples, a few ms; smaller batches add each key's counts into the run's totals more often
(a cost per bucket, not per sample)."""

KEYSETS_KEPT = 1024
"""Distinct key lists (a report's [type, name, kind]s, in its order) the master remembers checked:
workers of one scenario send a few, so each report's is found, not checked and copied again; past
this many (names that come and go) the memory starts over."""

Packed = tuple[bytes, list[int], int]  # one window's samples of one key: (16-bit indices, pairs, failures)
Filed = tuple[tuple[Key, ...], bytes, bytes, list[int], bytes]  # a window entry as the master keeps it


class Shipment(NamedTuple):
    """What a worker ships (the module docstring): msgpack sends it as a list of the two."""

    keys: list[list[Any]]
    windows: list[list[Any]]


_U32 = next(code for code in "ILH" if array(code).itemsize == 4)  # 'I' on every platform Python runs on
_SWAP = sys.byteorder != "little"  # the wire is little-endian; arrays are native
_HIGH_BYTES = bytes(range(COUNTS_LEN >> 8))
"""The high bytes an index may have (COUNTS_LEN is a multiple of 256): how a report's indices are
checked in C (bytes.translate deletes these), rather than one by one."""
_EXPECTED = "not a [window, lengths, failures, pairs, indices] entry of this report's keys"

if COUNTS_LEN % 256 or COUNTS_LEN > 1 << 16:
    raise RuntimeError(f"the histograms' {COUNTS_LEN} buckets do not fit the 16-bit wire format")


def window_of(seconds_since_start: float) -> int:
    """The window a request that ended this long after the test start counts in (0 for a request
    that ended before it: a web-UI test's stragglers from the previous one)."""
    return max(0, int(seconds_since_start // WINDOW_S))


def rebased(window: int, counted_from: float, t0: float) -> int:
    """WINDOW of a clock that counted from COUNTED_FROM, counted from T0 instead (a web-UI reset
    moved the start): by the window's start, so what ended before T0 lands in window 0."""
    return window_of(counted_from + window * WINDOW_S - t0)


def pack(values: Counter[int]) -> tuple[bytes, list[int]]:
    """Samples VALUES {µs: how many} as shipped: (16-bit little-endian bucket indices, one per
    sample, of the buckets holding at most REPEAT_MAX; [index, count, ...] of the others).
    Microseconds out of the histograms' range count at its edge (histogram.clamped)."""
    singles, pairs = array("H"), []
    append = singles.append
    for us, n in values.items():
        index = bucket_index(us)
        if n == 1:
            append(index)
        elif n <= REPEAT_MAX:
            singles.extend((index,) * n)
        else:
            pairs += (index, n)
    if _SWAP:
        singles.byteswap()
    return singles.tobytes(), pairs


def ship(windows: dict[int, dict[tuple[str, str, int], Packed]]) -> Shipment:
    """WINDOWS {window: {(type, name, kind index): packed samples}} as one Shipment."""
    positions: dict[tuple[str, str, int], int] = {}
    for keyed in windows.values():
        for key in keyed:
            positions.setdefault(key, len(positions))
    keys = [list(key) for key in positions]
    entries = []
    for window, keyed in windows.items():
        lengths, failures, chunks, pairs = [0] * len(keys), [0] * len(keys), [b""] * len(keys), []
        for key, (singles, key_pairs, failed) in keyed.items():
            at = positions[key]
            chunks[at], lengths[at], failures[at] = singles, len(singles) // 2, failed
            for i in range(0, len(key_pairs), 2):
                pairs += (at, key_pairs[i], key_pairs[i + 1])
        failed_any = _u32_bytes(failures) if any(failures) else b""
        entries.append([window, _u32_bytes(lengths), failed_any, pairs, b"".join(chunks)])
    return Shipment(keys, entries)


def rebase(shipment: Any, counted_from: float, t0: float) -> Any:
    """A shipment whose windows count from COUNTED_FROM, re-filed to count from T0 (a web-UI reset
    moved the start): each window by its start, so what ended before T0 lands in window 0 (two
    entries of one window then: the master adds both). What is not a shipment passes unchanged
    (merge() names it)."""
    try:
        keys, entries = shipment
        moved = [[rebased(e[0], counted_from, t0), *e[1:]] for e in entries]
    except (TypeError, ValueError, IndexError):
        return shipment
    return Shipment(keys, moved)


def _u32_bytes(values: list[int]) -> bytes:
    """VALUES as the wire's little-endian 32-bit integers."""
    out = array(_U32, values)
    if _SWAP:
        out.byteswap()
    return out.tobytes()


def _u32(data: bytes) -> array:
    values = array(_U32, data)
    if _SWAP:
        values.byteswap()
    return values


def _indices(data: bytes | bytearray) -> array:
    values = array("H", data)
    if _SWAP:
        values.byteswap()
    return values


class Pile:
    """One window's samples of one (type, name, kind) being split out of its entries: every piece's
    16-bit indices appended to one buffer, its pairs to one list; then counted."""

    __slots__ = ("pairs", "singles")

    def __init__(self) -> None:
        self.singles = bytearray()
        self.pairs: list[int] = []

    def counts(self) -> Counter[int]:
        """{bucket index: samples}: the indices counted in C (Counter over an array), then the pairs."""
        counts = Counter(_indices(self.singles))
        pairs = self.pairs
        for i in range(0, len(pairs), 2):
            counts[pairs[i]] += pairs[i + 1]
        return counts


class Tally:
    """An open window's entries counted so far: each is counted once, when a reader (the live
    status every 2 s, the web UI's poll, sealing) first needs it, so a poll costs the samples that
    came since the last one, not every sample of the open windows again (~1.4 million at 1,000
    workers x 200 requests/s: 90 ms a poll, twice a merge's whole cost)."""

    __slots__ = ("counts", "done", "failures")

    def __init__(self) -> None:
        self.done = 0  # entries of the window's pile counted
        self.counts: dict[Key, Counter[int]] = {}
        self.failures: Counter[Key] = Counter()


class Windows:
    """The master's (or a reader's) windows, filed as they come (the master's memory and CPU stay
    bounded in long runs; the end only writes what is made).

    Open windows (the last SEAL_AFTER) keep their entries as shipped (2 bytes a sample). Older ones
    are sealed: counted per key, added to the run's totals, and their CSV lines made (percentiles,
    the encoded merged histogram). What is kept then is about the size of the file to be written,
    whatever the number of workers and reports. Counts add exactly and the encoding is
    deterministic, so the files are the same whatever the order or batching the pieces came in.
    """

    def __init__(self) -> None:
        self.piles: dict[int, list[Filed]] = {}  # open windows (and late pieces of sealed ones)
        self.sealed: dict[int, list[str]] = {}  # window -> its CSV lines, Aggregated rows included
        self.summary: dict[int, dict[str, dict[str, Any]]] = {}  # window -> kind -> its Aggregated row
        self.failures: dict[int, Counter[Key]] = {}  # sealed window -> its failures per key (when any)
        self.run: dict[Key, HdrHistogram] = {}  # every window's counted entries added up, per key
        self.tallies: dict[int, Tally] = {}  # open window -> its entries counted so far
        self.newest = -1
        self.version = 0  # bumped by every merge: a reader caching totals() knows when to recompute
        self.keysets: dict[tuple[Any, ...], tuple[Key, ...]] = {}  # checked key lists (KEYSETS_KEPT)
        self.journal: Path | None = None  # where each sealing's lines are appended (journal_to)

    def __bool__(self) -> bool:
        return bool(self.piles or self.sealed)

    def merge(self, shipment: Any, where: str | Path = "a worker's report") -> None:
        """File a Shipment (the wire format); InputError naming WHERE and what is wrong with it
        (nothing filed then)."""
        checked = self._checked(shipment)
        if isinstance(checked, str):
            raise InputError(where, checked)
        piles, newest = self.piles, self.newest
        for window, filed in checked:
            pile = piles.get(window)
            if pile is None:
                pile = piles[window] = []
            pile.append(filed)
            newest = window if window > newest else newest
        self._moved_to(newest)

    def _checked(self, shipment: Any) -> list[tuple[int, Filed]] | str:
        """SHIPMENT's window entries to file, or what is wrong with it. A few C calls a window:
        this runs for every report a master receives (333 a second at 1,000 workers)."""
        try:
            raw_keys, entries = shipment
            keys = self._keys(raw_keys)
        except (TypeError, ValueError):
            return "not a shipment of window entries (keys, windows)"
        if keys is None:
            return "its keys are not [type, name, kind] lists"
        if not isinstance(entries, list | tuple):
            return "its windows are not a list"
        size, out, parts = 4 * len(keys), [], []
        for row, entry in enumerate(entries, 1):
            if not isinstance(entry, list | tuple) or len(entry) != 5:
                return f"window entry {row}: {_EXPECTED}"
            window, lengths, failures, pairs, indices = entry
            if type(window) is not int or window < 0 or type(indices) is not bytes:
                return f"window entry {row}: {_EXPECTED}"
            if type(lengths) is not bytes or len(lengths) != size or sum(_u32(lengths)) * 2 != len(indices):
                return f"window entry {row}: {_EXPECTED}"
            if type(failures) is not bytes or len(failures) not in (0, size):
                return f"window entry {row}: {_EXPECTED}"
            if (
                not isinstance(pairs, list)
                or len(pairs) % 3
                or (pairs and not _triples_in_range(pairs, len(keys)))
            ):
                return f"window entry {row}: {_EXPECTED}"
            out.append((window, (keys, lengths, failures, pairs, indices)))
            parts.append(indices)
        # Every piece's indices are of even length, so the high bytes (little-endian) stay at odd
        # offsets: deleting the allowed ones leaves nothing unless an index is past the histograms.
        if b"".join(parts)[1::2].translate(None, _HIGH_BYTES):
            return "a bucket index past the histograms"
        return out

    def _keys(self, raw: Any) -> tuple[Key, ...] | None:
        """RAW's keys checked, as one tuple shared by every report that sends the same ones (their
        strings are kept once, not per report); None when they are not keys."""
        ident = tuple(map(tuple, raw))  # TypeError: not lists
        known = self.keysets.get(ident)
        if known is not None:
            return known
        if not all(
            len(k) == 3
            and type(k[0]) is str
            and type(k[1]) is str
            and type(k[2]) is int
            and 0 <= k[2] < len(KINDS)
            for k in ident
        ):
            return None
        if len(self.keysets) >= KEYSETS_KEPT:
            self.keysets.clear()
        known = self.keysets[ident] = tuple((k[0], k[1], KINDS[k[2]]) for k in ident)
        return known

    def _moved_to(self, newest: int) -> None:
        """Something was filed, NEWEST the newest window now: seal the windows behind it."""
        self.version += 1
        self.newest = newest
        for window in [w for w in self.piles if w < newest - SEAL_AFTER]:
            self.seal(window)

    def seal(self, window: int) -> None:
        """WINDOW's entries counted per key (with its rows made before, if a late piece re-opened
        it), added to the run's totals, its CSV lines made."""
        for _ in self.sealing(window):
            pass

    def sealing(self, window: int) -> Iterator[None]:
        """seal(WINDOW) a row at a time: yields after each row it makes, so the process sending the
        requests can let them go between (plugin/latency.py _collect_often). In one go, a window's
        rows held the gevent loop 2-5 ms a second at 1,000 requests/s, and every request due then
        started late: the open model's intended-start tail. What it made is kept only if nothing
        touched the window while it was away (another caller sealed it, a piece came, a reader
        counted one); else it is dropped and the window left as it is then, for the next call."""
        tally = self._tally(window)
        done = tally.done
        failures = Counter(self.failures.get(window, ()))  # re-opened: what it had when sealed before
        failures.update(tally.failures)
        counted = self._sealed_counts(window)
        for key, counts in tally.counts.items():
            if key in counted:
                counted[key].update(counts)
            else:
                counted[key] = counts
        rows = []
        for row in self._rows(window, counted, failures):
            rows.append(row)
            yield
        # Another caller's seal pops the tally (a piece that re-opens the window makes a new one);
        # a piece that came, counted or not, lengthens the pile past what was counted here.
        if self.tallies.get(window) is not tally or len(self.piles.get(window, ())) != done:
            return
        self.piles.pop(window, None)
        self.tallies.pop(window, None)
        if failures:
            self.failures[window] = failures
        buffer = io.StringIO()
        csv.writer(buffer).writerows([row[c] for c in WINDOW_COLUMNS] for row in rows)
        self.sealed[window] = buffer.getvalue().splitlines(keepends=True)
        if self.journal is not None:
            self._append(window)
        self.summary[window] = {
            r["kind"]: _short(r) for r in rows if r["name"] == AGGREGATED and not r["type"]
        }

    def journal_to(self, path: Path) -> None:
        """From now on append each window's lines to PATH as it is sealed (the header first, and the
        windows sealed so far): what a master that dies has merged survives it, but for the windows
        still open (folder.LATENCY_WINDOWS_SEALED_CSV, core/salvage.py reads it). A window a late
        piece re-opens is appended again, whole: a reader keeps each window's last block."""
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(WINDOW_COLUMNS)
            for window in sorted(self.sealed):
                f.writelines(self.sealed[window])
        self.journal = path

    def _append(self, window: int) -> None:
        """WINDOW's lines onto the journal: one open, write and close a window (one second of the
        run), not kept open (a file handle per web-UI run would leak). A journal that cannot be
        written is given up (the run's end writes the whole file anyway)."""
        assert self.journal is not None
        try:
            with open(self.journal, "a", newline="", encoding="utf-8") as f:
                f.writelines(self.sealed[window])
        except OSError:
            self.journal = None

    def _tally(self, window: int, most: int | None = None) -> Tally:
        """WINDOW's open entries counted per key, the ones filed since the last call added (at most
        MOST of them: counting())."""
        tally = self.tallies.get(window)
        if tally is None:
            tally = self.tallies[window] = Tally()
        entries = self.piles.get(window, ())
        if tally.done < len(entries):
            end = len(entries) if most is None else min(len(entries), tally.done + most)
            for key, pile in _split(entries[tally.done : end], tally.failures).items():
                new = pile.counts()
                total = self.run.get(key)
                if total is None:
                    total = self.run[key] = new_histogram()
                add_buckets(total, new)  # the run's totals there whenever asked (the live status)
                counts = tally.counts.get(key)
                if counts is None:
                    tally.counts[key] = new
                else:
                    counts.update(new)
            tally.done = end
        return tally

    def _open(self, window: int) -> tuple[dict[Key, Counter[int]], Counter[Key]]:
        """WINDOW's counts per key and failures: its sealed lines' (a late piece re-opened it) and
        its open entries' together (new Counters: the tally stays the tally)."""
        counted = self._sealed_counts(window)
        failures = Counter(self.failures.get(window, ()))  # re-opened: its sealed failures too
        tally = self._tally(window)
        for key, counts in tally.counts.items():
            counted.setdefault(key, Counter()).update(counts)
        failures.update(tally.failures)
        return counted, failures

    def seal_all(self) -> None:
        for window in list(self.piles):
            self.seal(window)

    def seal_before(self, window: int) -> None:
        """Seal the open windows before WINDOW now, not SEAL_AFTER windows behind the newest: the
        caller knows every generator has reported past them (the master's per-worker coverage,
        plugin/latency.py), so the live thresholds and the metrics' last window need not wait. A
        piece that still comes re-opens its window, as after SEAL_AFTER (exact, only slower)."""
        for _ in self.sealing_before(window):
            pass

    def sealing_before(self, window: int) -> Iterator[None]:
        """seal_before(WINDOW) a row at a time (sealing), the oldest window first."""
        for open_window in sorted(w for w in self.piles if w < window):
            yield from self.sealing(open_window)

    def _sealed_counts(self, window: int) -> dict[Key, Counter[int]]:
        """A sealed window's counts back from its lines (the hdr column is the last, and base64
        holds no comma or quote)."""
        out: dict[Key, Counter[int]] = {}
        for row in csv.reader(self.sealed.get(window, ())):
            request_type, name, kind = row[1:4]
            if not (name == AGGREGATED and not request_type):
                indices, counts = _buckets_of(row[-1], "windows", f"window {window}")
                out[(request_type, name, kind)] = Counter(dict(zip(indices, counts, strict=True)))
        return out

    def _counts(self, window: int) -> dict[Key, Counter[int]]:
        """WINDOW's counts per key: its sealed lines' and its open entries' together."""
        return self._open(window)[0]

    def decoded(self, window: int) -> dict[Key, Any]:
        """WINDOW's histograms (hdrh's), each key's pieces added up."""
        return {key: from_buckets(counts) for key, counts in self._counts(window).items()}

    def series(self, kind: str = "service") -> list[dict[str, Any]]:
        """Window by window, the Aggregated row of KIND (every request name): window_s, count,
        failures, percentiles and max, the numbers locust_latency_windows.csv holds (the web UI's
        chart). Sealed windows from what sealing made; open ones counted now (nothing sealed)."""
        out = {w: rows[kind] for w, rows in self.summary.items() if kind in rows and w not in self.piles}
        for window in self.piles:
            counted, failures = self._open(window)
            # The Aggregated row only: no per-name rows (their percentiles and encodings) to drop.
            parts, fails = [], 0
            for key, counts in counted.items():
                if key[2] == kind and counts:
                    indices = sorted(counts)
                    parts.append((indices, list(map(counts.__getitem__, indices))))
                    fails += failures[key]
            if parts:
                out[window] = _short(_aggregated_row(window, kind, parts, fails))
        return [out[w] for w in sorted(out)]

    def totals(self) -> LatencyView:
        """The whole run per (type, name, kind): every window's entries, sealed or open, added up
        (exact: counts add losslessly). A read-only view of the histograms this goes on counting
        into, not copies: the live status and the web UI's table ask every poll, and copying every
        key's histogram (~200 KB each) cost about as much as the Aggregated figure the live status
        reads. Nothing is sealed by asking; what came since the last call is counted now, once."""
        self.count_open()
        return LatencyView({key: total for key, total in self.run.items() if total.get_total_count()})

    def count_open(self) -> None:
        """Count the open windows' entries that came since the last count (Tally) into the run's
        totals: a standalone runner does it in small batches (plugin/latency.py COLLECT_S), so the
        next totals() has little left to count."""
        for window in list(self.piles):
            self._tally(window)

    def counting(self, most: int = COUNT_BATCH) -> Iterator[None]:
        """count_open MOST entries at a time, yielding after each batch, so a caller beside other
        work (a master's metrics and live status, plugin/latency.py count_in_steps) lets it go between
        (COUNT_BATCH). Whatever happens between two batches (a piece filed, a window sealed, another
        reader counting) is taken as it is: each entry is still counted once."""
        for window in list(self.piles):
            while True:
                entries, tally = self.piles.get(window), self.tallies.get(window)
                if entries is None or (tally is not None and tally.done >= len(entries)):
                    break
                self._tally(window, most)
                yield

    def rows(self) -> Iterator[dict[str, Any]]:
        """CSV rows, window by window: each (type, name, kind), sorted, then Aggregated per kind."""
        self.seal_all()
        for line in csv.reader(self.lines()):
            row: dict[str, Any] = dict(zip(WINDOW_COLUMNS, line, strict=True))
            for column in WINDOW_COLUMNS:
                if column in _INTS:
                    row[column] = int(row[column])
                elif column.endswith("_ms"):
                    row[column] = float(row[column])
            yield row

    def lines(self) -> Iterator[str]:
        """The file's lines after its header, every window sealed."""
        self.seal_all()
        for window in sorted(self.sealed):
            yield from self.sealed[window]

    @staticmethod
    def _rows(
        window: int, counted: dict[Key, Counter[int]], failed: Counter[Key]
    ) -> Iterator[dict[str, Any]]:
        """WINDOW's rows: each key's from its non-empty buckets, sorted; then each kind's Aggregated
        row from the same buckets (summed_percentiles: its keys are never added up), with FAILED,
        the window's failures per key."""
        parts: dict[str, list[tuple[list[int], list[int]]]] = {}
        fails: Counter[str] = Counter()
        for key in sorted((k for k in counted if counted[k]), key=lambda k: (k[1], k[0], _kind_order(k[2]))):
            kind = key[2]
            failures = failed[key]
            indices = sorted(counted[key])
            counts = list(map(counted[key].__getitem__, indices))
            yield bucket_row(window, key, indices, counts, failures)
            parts.setdefault(kind, []).append((indices, counts))
            fails[kind] += failures
        for kind in sorted(parts, key=_kind_order):
            yield _aggregated_row(window, kind, parts[kind], fails[kind])

    def write_csv(self, path: Path) -> None:
        with atomic_file(path, newline="") as f:
            csv.writer(f).writerow(WINDOW_COLUMNS)
            f.writelines(self.lines())

    @classmethod
    def read_csv(cls, path: Path) -> Windows:
        """A locust_latency_windows.csv back (its Aggregated rows are derived, so checked and left
        out); InputError naming the file and the row when a row is truncated or corrupt."""
        lines = read_text(path).splitlines()
        reader = csv.DictReader(lines)
        if tuple(reader.fieldnames or ()) != WINDOW_COLUMNS:
            raise InputError(path, f"row 1: expected the columns {', '.join(WINDOW_COLUMNS)}")
        out = cls()
        for row_number, row in enumerate(reader, 2):
            out._read_row(row, path, row_number)
        return out

    def _read_row(self, row: dict[str, Any], path: Path, row_number: int) -> None:
        where = f"row {row_number}"
        if None in row or any(row.get(c) is None for c in WINDOW_COLUMNS):
            raise InputError(path, f"{where}: expected {len(WINDOW_COLUMNS)} fields")
        aggregated = row["name"] == AGGREGATED and not row["type"]
        if aggregated and not row["hdr"]:
            return  # derived (the window's other rows added up): nothing to check or file
        indices, counts = _buckets_of(row["hdr"], path, where)
        try:
            window, count, failures = int(row["window_s"]), int(row["count"]), int(row["failures"])
        except ValueError:
            raise InputError(path, f"{where}: window_s, count and failures must be whole numbers") from None
        if sum(counts) != count:
            raise InputError(path, f"{where}: count {count} but its histogram holds {sum(counts)}")
        if aggregated:
            return
        window //= WINDOW_S
        key = (row["type"], row["name"], row["kind"])
        triples = [v for index, n in zip(indices, counts, strict=True) for v in (0, index, n)]
        failed = _u32_bytes([failures]) if failures else b""
        self.piles.setdefault(window, []).append(((key,), bytes(4), failed, triples, b""))
        self._moved_to(max(window, self.newest))


def _triples_in_range(triples: list[Any], keys: int) -> bool:
    """(key position, index, count) triples: each a key of the report, a bucket, a count."""
    for i in range(0, len(triples), 3):
        at, index, count = triples[i], triples[i + 1], triples[i + 2]
        if type(at) is not int or type(index) is not int or type(count) is not int:
            return False
        if not 0 <= at < keys or not 0 <= index < COUNTS_LEN or count <= 0:
            return False
    return True


def _buckets_of(text: str, where: str | Path, row: str) -> tuple[list[int], list[int]]:
    """An encoded histogram's non-empty buckets (indices, counts), ours or HdrHistogram's V2 (older
    files); InputError naming WHERE and ROW when it is not one."""
    if histogram.is_compact(text):
        try:
            return histogram.decode_buckets(text)
        except ValueError:
            pass  # decode() names it
    return histogram.buckets(decode(text, where, row))


def window_row(window: int, key: Key, hist: Any, failures: int, encoded: bool = True) -> dict[str, Any]:
    """One CSV row of an hdrh histogram (what bucket_row makes of its non-empty buckets)."""
    return bucket_row(window, key, *histogram.buckets(hist), failures, encoded)


def bucket_row(
    window: int, key: Key, indices: list[int], counts: list[int], failures: int, encoded: bool = True
) -> dict[str, Any]:
    """One CSV row of the histogram whose non-empty buckets are INDICES (ascending) holding COUNTS;
    ENCODED False (an Aggregated row): its hdr blank, the sum of the others' is lossless."""
    request_type, name, kind = key
    row: dict[str, Any] = {"window_s": window * WINDOW_S, "type": request_type, "name": name, "kind": kind}
    row.update(count=sum(counts), failures=failures)
    row.update(bucket_columns(indices, counts, WINDOW_PERCENTILES))
    row["hdr"] = histogram.encode_buckets(indices, counts) if encoded else ""
    return row


def _split(entries: Iterable[Filed], failures: Counter[Key]) -> dict[Key, Pile]:
    """ENTRIES per key (each key's indices appended to its Pile); their failures counted into
    FAILURES."""
    out: dict[Key, Pile] = {}
    targets: dict[int, list[Pile]] = {}  # a key list (one tuple per distinct list) -> its keys' piles
    for keys, lengths, failed, pairs, indices in entries:
        piles = targets.get(id(keys))
        if piles is None:
            piles = targets[id(keys)] = [
                out[key] if key in out else out.setdefault(key, Pile()) for key in keys
            ]
        view, at = memoryview(indices), 0
        for pile, n in zip(piles, _u32(lengths), strict=True):
            if n:
                end = at + 2 * n
                pile.singles += view[at:end]
                at = end
        for i in range(0, len(pairs), 3):
            pile = out.get(keys[pairs[i]])
            if pile is None:
                pile = out[keys[pairs[i]]] = Pile()
            pile.pairs += (pairs[i + 1], pairs[i + 2])
        if failed:
            for key, n in zip(keys, _u32(failed), strict=True):
                if n:
                    failures[key] += n
    return out


def _aggregated_row(
    window: int, kind: str, parts: list[tuple[list[int], list[int]]], failures: int
) -> dict[str, Any]:
    """WINDOW's Aggregated row of KIND from its keys' non-empty buckets PARTS [(indices, counts)]
    (summed_percentiles: they are never added up); no hdr: a reader adds the window's other rows."""
    top = max(indices[-1] for indices, _ in parts)
    values = summed_percentiles(parts, WINDOW_PERCENTILES)
    row: dict[str, Any] = {"window_s": window * WINDOW_S, "type": "", "name": AGGREGATED, "kind": kind}
    row.update(count=sum(sum(counts) for _, counts in parts), failures=failures)
    row.update(ms_columns(values, WINDOW_PERCENTILES, bucket_max([top])))
    row["hdr"] = ""
    return row


def _short(row: dict[str, Any]) -> dict[str, Any]:
    """A window row without its key columns and histogram: what a chart draws."""
    return {k: v for k, v in row.items() if k not in ("type", "name", "kind", "hdr")}


def _kind_order(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


_INTS = ("window_s", "count", "failures")

__all__ = [
    "FORMAT_VERSION",
    "WINDOW_COLUMNS",
    "WINDOW_S",
    "WIRE_VERSION",
    "Shipment",
    "Windows",
    "pack",
    "ship",
    "window_of",
]
