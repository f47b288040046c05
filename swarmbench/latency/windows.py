"""Exact latency per time window: one HDR histogram per (window, request type, name, kind).

Every run records them (plugin/latency.py): each load generator counts its requests' response
times into the window in which each request ENDED (Locust counts a request when it ends too),
ships the windows as encoded deltas with its stats report, and the master files the pieces by
window. Windows are counted from the test start (the master's: every generator uses its clock).

The master keeps the pieces encoded (a few hundred bytes each; a live histogram is ~200 KB) and
decodes them when it writes: locust_latency_windows.csv, one row per window and (type, name, kind),
each with its encoded histogram (latency/histogram.py's compact encoding: half the bytes of
HdrHistogram's V2), so a later reader
can merge any span of windows exactly (and bootstrap over them); plus an Aggregated row per window and
kind with its percentiles but no histogram (blank): it is the sum of the window's other rows of that
kind, so a reader merges those (files written before this kept one there, in V2: still read).

Shared by the plugin and the analysis: no Locust or gevent here (swarmbench/latency/histogram.py's rule).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import InputError, read_text
from swarmbench.latency import histogram
from swarmbench.latency.histogram import (
    FORMAT_VERSION,
    KINDS,
    Adder,
    Key,
    LatencyBook,
    decode,
    new_histogram,
    percentile_columns,
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

# Keys of one shipped window entry (a worker's stats report -> the master); not run.json keys.
WINDOW, TYPE, NAME, KIND, HDR, FAILURES = "w", "type", "name", "kind", "hdr", "failures"

WindowKey = tuple[int, str, str, str]  # (window, request type, name, kind)


def window_of(seconds_since_start: float) -> int:
    """The window a request that ended this long after the test start counts in (0 for a request
    that ended before it: a web-UI test's stragglers from the previous one)."""
    return max(0, int(seconds_since_start // WINDOW_S))


def ship(key: WindowKey, hist: HdrHistogram, failures: int) -> dict[str, Any]:
    """One window entry of a worker's report."""
    window, request_type, name, kind = key
    encoded = hist.encode().decode("ascii")
    return {WINDOW: window, TYPE: request_type, NAME: name, KIND: kind, HDR: encoded, FAILURES: failures}


SEAL_AFTER = 6
"""Windows a window stays open behind the newest one seen before its pieces are merged into one
histogram per key and its CSV rows are made. Workers report every 3 s, each report holding the
windows since their last one, so after ~2 report intervals a window rarely gets more; a piece that
still comes later re-opens it (the rows are made again, as exact: only slower)."""


def rebase(entries: Iterable[Any], counted_from: float, t0: float) -> list[Any]:
    """Shipped entries whose windows count from COUNTED_FROM, re-filed to count from T0 (a web-UI
    reset moved the start): each by its window's start, so what ended before T0 lands in window 0.
    Entries that are not objects pass unchanged (merge() names them)."""
    out = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get(WINDOW), int):
            entry = {**entry, WINDOW: window_of(counted_from + entry[WINDOW] * WINDOW_S - t0)}
        out.append(entry)
    return out


class Windows:
    """The master's (or a reader's) windows, merged as they come (the master's memory and CPU stay
    bounded in long runs; the end only writes what is made).

    Open windows (the last SEAL_AFTER) keep the shipped pieces encoded: a few hundred bytes each,
    where a live histogram is ~200 KB. Older ones are sealed: their pieces decoded once, added up
    per key, added to the run's totals, and their CSV lines made (percentiles, the encoded merged
    histogram). What is kept then is about the size of the file to be written, whatever the number
    of workers and reports. HDR histograms add exactly and encode deterministically, so the files
    are the same whatever the order or batching the pieces came in.
    """

    def __init__(self) -> None:
        self.pieces: dict[int, dict[Key, list[str]]] = {}  # open windows (and late pieces of sealed ones)
        self.sealed: dict[int, list[str]] = {}  # window -> its CSV lines, Aggregated rows included
        self.summary: dict[int, dict[str, dict[str, Any]]] = {}  # window -> kind -> its Aggregated row
        self.failures: Counter[WindowKey] = Counter()
        self.run = LatencyBook()  # the sealed windows added up
        self.newest = -1
        self.version = 0  # bumped by every merge: a reader caching totals() knows when to recompute
        self.corrupt = 0  # pieces that did not decode (left out)

    def __bool__(self) -> bool:
        return bool(self.pieces or self.sealed)

    def merge(self, entries: Iterable[Any], where: str | Path = "a worker's report") -> None:
        """File shipped entries; InputError naming WHERE on a malformed one (nothing filed then)."""
        checked = []
        for row, entry in enumerate(entries, 1):
            try:
                key = (int(entry[WINDOW]), str(entry[TYPE]), str(entry[NAME]), str(entry[KIND]))
                text, failures = str(entry[HDR]), int(entry.get(FAILURES) or 0)
            except (KeyError, TypeError, ValueError, AttributeError):
                raise InputError(where, f"window entry {row}: not a w/type/name/kind/hdr object") from None
            checked.append((key, text, failures))
        # Filed with plain lookups, a failure counted only when there is one: this runs for every
        # piece a master receives (13,000 a second at 1,000 workers x 10 names).
        pieces, counted, newest = self.pieces, self.failures, self.newest
        for key, text, failures in checked:
            window = key[0]
            keyed = pieces.get(window)
            if keyed is None:
                keyed = pieces[window] = {}
            texts = keyed.get(key[1:])
            if texts is None:
                keyed[key[1:]] = [text]
            else:
                texts.append(text)
            if failures:
                counted[key] += failures
            newest = window if window > newest else newest
        self.newest = newest
        self.version += 1
        for window in [w for w in self.pieces if w < self.newest - SEAL_AFTER]:
            self.seal(window, where)

    def seal(self, window: int, where: str | Path = "windows") -> None:
        """WINDOW's pieces merged (with its rows made before, if a late piece re-opened it)."""
        late = self._decode_pieces(window, where)
        for key, hist in late.items():
            self.run.add(key, hist)
        hists = self._decode_sealed(window)
        for key, hist in late.items():
            if key in hists:
                hists[key].add(hist)
            else:
                hists[key] = hist
        rows = list(self._rows(window, hists))
        buffer = io.StringIO()
        csv.writer(buffer).writerows([row[c] for c in WINDOW_COLUMNS] for row in rows)
        self.sealed[window] = buffer.getvalue().splitlines(keepends=True)
        self.summary[window] = {
            r["kind"]: _short(r) for r in rows if r["name"] == AGGREGATED and not r["type"]
        }

    def seal_all(self) -> None:
        for window in list(self.pieces):
            self.seal(window)

    def _decode_pieces(self, window: int, where: str | Path) -> dict[Key, HdrHistogram]:
        return {key: self._sum(texts, where) for key, texts in self.pieces.pop(window, {}).items()}

    def _sum(self, texts: list[str], where: str | Path) -> HdrHistogram:
        """Pieces added up; one that does not decode is left out and counted in `corrupt` (a
        worker of another version: its requests are then missing, so the run is not `exact`).
        Workers' V2 pieces go straight into the sum (hdr_add: no histogram per piece, ~10 times
        less CPU; at 1,000 workers hdrh's decode-then-add here was 3/4 of the master's CPU)."""
        hist = new_histogram()
        self.corrupt += _adder().sum_into(hist, texts, lambda text: decode(text, where, "window piece"))
        return hist

    def _decode_sealed(self, window: int) -> dict[Key, HdrHistogram]:
        """A sealed window's histograms back from its lines (the hdr column is the last, and base64
        holds no comma or quote)."""
        out: dict[Key, HdrHistogram] = {}
        for row in csv.reader(self.sealed.get(window, ())):
            request_type, name, kind = row[1:4]
            if not (name == AGGREGATED and not request_type):
                out[(request_type, name, kind)] = decode(row[-1], "windows", f"window {window}")
        return out

    def decoded(self, window: int, where: str | Path = "windows") -> dict[Key, HdrHistogram]:
        """WINDOW's histograms, each key's pieces added up."""
        out = self._decode_sealed(window)
        for key, texts in self.pieces.get(window, {}).items():
            out.setdefault(key, new_histogram()).add(self._sum(texts, where))
        return out

    def series(self, kind: str = "service") -> list[dict[str, Any]]:
        """Window by window, the Aggregated row of KIND (every request name): window_s, count,
        failures, percentiles and max, the numbers locust_latency_windows.csv holds (the web UI's
        chart). Sealed windows from what sealing made; open ones added up now (nothing sealed)."""
        out = {w: rows[kind] for w, rows in self.summary.items() if kind in rows and w not in self.pieces}
        for window in self.pieces:
            hists = {
                key: h for key, h in self.decoded(window).items() if key[2] == kind and h.get_total_count()
            }
            if hists:
                total = new_histogram()
                for hist in hists.values():
                    total.add(hist)
                failures = sum(self.failures[(window, *key)] for key in hists)
                out[window] = _short(
                    window_row(window, ("", AGGREGATED, kind), total, failures, encoded=False)
                )
        return [out[w] for w in sorted(out)]

    def totals(self) -> LatencyBook:
        """The whole run per (type, name, kind): the sealed windows' sum plus the open ones'
        pieces (exact: HDR adds losslessly). Nothing is sealed by asking."""
        book = LatencyBook()
        for key, hist in self.run.hists.items():
            book.add(key, hist)
        for keyed in self.pieces.values():
            for key, texts in keyed.items():
                book.add(key, self._sum(texts, "windows"))
        return book

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

    def _rows(self, window: int, hists: dict[Key, HdrHistogram]) -> Iterator[dict[str, Any]]:
        by_kind: dict[str, HdrHistogram] = {}
        fails: Counter[str] = Counter()
        counted = [k for k in hists if hists[k].get_total_count()]  # not one of only undecodable pieces
        for key in sorted(counted, key=lambda k: (k[1], k[0], _kind_order(k[2]))):
            request_type, name, kind = key
            failures = self.failures[(window, request_type, name, kind)]
            yield window_row(window, key, hists[key], failures)
            by_kind.setdefault(kind, new_histogram()).add(hists[key])
            fails[kind] += failures
        for kind in sorted(by_kind, key=_kind_order):
            yield window_row(window, ("", AGGREGATED, kind), by_kind[kind], fails[kind], encoded=False)

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="", encoding="utf-8") as f:
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
        hist = decode(row["hdr"], path, where)
        try:
            window, count, failures = int(row["window_s"]), int(row["count"]), int(row["failures"])
        except ValueError:
            raise InputError(path, f"{where}: window_s, count and failures must be whole numbers") from None
        if hist.get_total_count() != count:
            raise InputError(path, f"{where}: count {count} but its histogram holds {hist.get_total_count()}")
        if aggregated:
            return
        entry = {WINDOW: window // WINDOW_S, TYPE: row["type"], NAME: row["name"], KIND: row["kind"]}
        self.merge([{**entry, HDR: row["hdr"], FAILURES: failures}], path)


def window_row(
    window: int, key: Key, hist: HdrHistogram, failures: int, encoded: bool = True
) -> dict[str, Any]:
    """One CSV row; ENCODED False (an Aggregated row): its hdr blank, the sum of the others' is lossless."""
    request_type, name, kind = key
    row: dict[str, Any] = {"window_s": window * WINDOW_S, "type": request_type, "name": name, "kind": kind}
    row.update(count=hist.get_total_count(), failures=failures)
    row.update(percentile_columns(hist, WINDOW_PERCENTILES))
    row["hdr"] = histogram.encode_compact(hist) if encoded else ""
    return row


@cache
def _adder() -> Adder:
    """One Adder (its 200 KB scratch array) per process, made when a master first seals a window."""
    return Adder(new_histogram())


def _short(row: dict[str, Any]) -> dict[str, Any]:
    """A window row without its key columns and histogram: what a chart draws."""
    return {k: v for k, v in row.items() if k not in ("type", "name", "kind", "hdr")}


def _kind_order(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


_INTS = ("window_s", "count", "failures")

__all__ = ["FORMAT_VERSION", "WINDOW_COLUMNS", "WINDOW_S", "Windows", "ship", "window_of"]
