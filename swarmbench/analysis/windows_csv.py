"""locust_latency_windows.csv -> a compact frame: one row per (1 s window, request type, name), service
time only, its encoded histogram kept as text and decoded only when windows are merged.

The file can be large (a row per window and request name: ~18,000 rows for an hour of 4 endpoints,
each with a few hundred bytes of base64), so it is read with pandas' C parser, only the columns the
analysis uses, names as categories. Every problem is `FILE: row N: PROBLEM` (row 1 is the header).
"""

from __future__ import annotations

import binascii
import csv
import struct
from pathlib import Path

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram

from swarmbench import hdr_compact
from swarmbench.analysis import columns as C
from swarmbench.analysis.errors import AnalysisError
from swarmbench.analysis.locust_csv import endpoint_label
from swarmbench.core.errors import read_text
from swarmbench.hdr import decode, new_histogram
from swarmbench.hdr_windows import WINDOW_COLUMNS

SERVICE = "service"
"""The kind the report's tables, lines and knee read: Locust's own response time (hdr.KINDS)."""

WINDOW, TYPE, NAME, KIND, COUNT, HDR, ROW = "window_s", "type", "name", "kind", "count", "hdr", "row"
PCT_COLUMNS = {C.P50_MS: "p50_ms", C.P95_MS: "p95_ms", C.P99_MS: "p99_ms"}
"""Ours <- the file's: the per-window percentiles the over-time lines draw when a line's window is
one file window (no histogram to decode then)."""
_DTYPES = {
    WINDOW: "float64",  # float first: a cut-off row reads NaN and is named, not a parser crash
    TYPE: "category",
    NAME: "category",
    KIND: "category",
    COUNT: "float64",
    **dict.fromkeys(PCT_COLUMNS.values(), "float64"),  # as written: 3 decimals, no float32 noise
    HDR: "str",
}


def read_windows(path: Path) -> pd.DataFrame:
    """The file's service-time rows (per request name and Aggregated) with the columns WINDOW, the
    endpoint (columns.ENDPOINT, as Locust's stats name it), COUNT, the file's p50/p95/p99 and HDR,
    plus ROW (the file's row number, for errors). AnalysisError naming the file and row when the
    header is not the windows file's, a row is cut off or holds text where a number belongs."""
    header = next(csv.reader([read_text(path, "latency windows CSV", first_line=True)]), [])
    if tuple(header) != WINDOW_COLUMNS:
        raise AnalysisError(path, f"row 1: expected the columns {', '.join(WINDOW_COLUMNS)}")
    try:
        frame = pd.read_csv(
            path, usecols=list(_DTYPES), dtype=_DTYPES, keep_default_na=False, na_values={WINDOW: [""]}
        )
    except (ValueError, pd.errors.ParserError) as e:
        raise AnalysisError(path, _first_bad_row(path) or f"unreadable ({str(e).strip()})") from None
    frame[ROW] = np.arange(2, len(frame) + 2, dtype=np.int64)
    aggregated = (frame[NAME] == C.AGGREGATED) & (frame[TYPE] == "")
    bad = frame[WINDOW].isna() | frame[COUNT].isna() | frame[HDR].isna() | ((frame[HDR] == "") & ~aggregated)
    bad |= frame[WINDOW] < 0
    bad |= frame[COUNT] < 0
    if bad.any():
        row = int(frame[ROW][bad].iloc[0])
        raise AnalysisError(path, f"row {row}: cut off, or a negative window_s or count")
    _check_encodings(frame, path)
    service = frame[frame[KIND] == SERVICE]
    out = pd.DataFrame(
        {
            WINDOW: service[WINDOW].astype(np.int64),
            C.ENDPOINT: _endpoints(service[TYPE], service[NAME]),
            COUNT: service[COUNT].astype(np.int64),
            **{ours: service[theirs] for ours, theirs in PCT_COLUMNS.items()},
            HDR: service[HDR],
            ROW: service[ROW],
        }
    )
    out.attrs["source"] = str(path)
    return out.reset_index(drop=True)


COMPRESSED_COOKIE = 0x1C849314
"""The first 4 bytes of an HdrHistogram's compressed encoding (V2, what hdrh's encode() writes)."""


def _check_encodings(frame: pd.DataFrame, path: Path) -> None:
    """Every row's histogram is whole: hdr_compact's (the deflate stream ends where the text does) or,
    in older files, a compressed HdrHistogram encoding (base64, the cookie, and as many bytes as its
    header says); an Aggregated row's may be blank (derived). Cheap (a few ms for 10,000s of rows), so
    a corrupt or cut-off histogram is named at once, not only when a merge happens to decode it."""
    for text, row in zip(frame[HDR], frame[ROW], strict=True):
        if not text:
            continue  # an Aggregated row's (read_windows named any other)
        if hdr_compact.is_compact(text):
            if not hdr_compact.is_whole(text):
                raise AnalysisError(path, f"row {row}: hdr is not a whole encoded HDR histogram (cut off?)")
            continue
        try:
            raw = binascii.a2b_base64(text, strict_mode=True)
            cookie, length = struct.unpack(">ii", raw[:8])
        except (binascii.Error, struct.error, ValueError):
            raise AnalysisError(path, f"row {row}: hdr is not base64 of an HDR histogram") from None
        if cookie != COMPRESSED_COOKIE or length != len(raw) - 8:
            raise AnalysisError(path, f"row {row}: hdr is not a whole encoded HDR histogram (cut off?)")


def _first_bad_row(path: Path) -> str | None:
    """Slow path, only after pandas failed: the first row that is not a windows row, for the error."""
    numbers = [i for i, c in enumerate(WINDOW_COLUMNS) if c not in (TYPE, NAME, KIND, HDR)]
    with open(path, encoding="utf-8", newline="") as f:
        for number, row in enumerate(csv.reader(f), 1):
            if number == 1:
                continue
            if len(row) != len(WINDOW_COLUMNS):
                return f"row {number}: {len(row)} fields, expected {len(WINDOW_COLUMNS)} (cut off?)"
            for i in numbers:
                try:
                    float(row[i])
                except ValueError:
                    return f"row {number}: column '{WINDOW_COLUMNS[i]}': {row[i]!r} is not a number"
    return None


def _endpoints(types: pd.Series, names: pd.Series) -> pd.Categorical:
    """endpoint_label per row, computed once per distinct (type, name) pair."""
    pairs = pd.MultiIndex.from_arrays([types.astype(str), names.astype(str)])
    codes, uniques = pairs.factorize()
    labels = [endpoint_label(t, n) for t, n in uniques]
    distinct = list(dict.fromkeys(labels))
    remap = np.array([distinct.index(label) for label in labels], dtype=np.int32)
    return pd.Categorical.from_codes(remap[codes] if len(codes) else codes, categories=distinct)


def histogram_rows(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of FRAME (read_windows') whose histograms add up to ROWS': an Aggregated row's are its
    window's other rows (its own hdr is blank: derived; files that still hold one hold that sum)."""
    aggregated = rows[C.ENDPOINT] == C.AGGREGATED
    if not aggregated.any():
        return rows
    windows = rows.loc[aggregated, WINDOW].unique()
    names = frame[(frame[C.ENDPOINT] != C.AGGREGATED) & frame[WINDOW].isin(windows)]
    return pd.concat([rows[~aggregated], names])


def merged(rows: pd.DataFrame, path: str | Path) -> HdrHistogram:
    """The histograms of ROWS (a slice of read_windows' frame) added up: exact, HDR adds losslessly.
    AnalysisError naming the file and row when one is no histogram or holds another count."""
    total = new_histogram()
    for text, count, row in zip(rows[HDR], rows[COUNT], rows[ROW], strict=True):
        hist = decode(text, path, f"row {row}")
        if hist.get_total_count() != count:
            raise AnalysisError(
                path, f"row {row}: count {count} but its histogram holds {hist.get_total_count()}"
            )
        total.add(hist)
    return total
