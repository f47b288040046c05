"""Exact latency of a run folder: the plugin's HDR histograms (whole run and per 1 s window) read into
frames, or Locust's rounded numbers where there are none.

locust_latency_windows.csv -> a compact frame: one row per (1 s window, request type, name), service
time only, its encoded histogram kept as text and decoded only when windows are merged.

The file can be large (a row per window and request name: ~18,000 rows for an hour of 4 endpoints,
each with a few hundred bytes of base64), so it is read with pandas' C parser, only the columns the
analysis uses, names as categories. Every problem is `FILE: row N: PROBLEM` (row 1 is the header).

Exact latency of a run folder from the plugin's HDR histograms, or Locust's rounded numbers.

Every run the plugin records holds locust_latency_hdr.json (the whole run per request type, name
and kind) and locust_latency_windows.csv (the same per 1 s window from the test start, each row
with its encoded histogram). From them the analysis takes exact percentiles (3 significant
digits): whole-run tables, per-window lines over time, per-step knee latency, distribution charts.
Percentiles of merged spans come from MERGING the histograms, then taking the percentile (HDR adds
losslessly); percentiles are never averaged. Folders without these files (older runs, plain
Locust) keep Locust's numbers (2 significant digits, the history's a trailing ~10 s window), and
every table and chart says which: `exact` or `rounded`."""

from __future__ import annotations

import binascii
import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram

from swarmbench.analysis import columns as C
from swarmbench.analysis.locust_csv import AnalysisError, csv_header, csv_records, endpoint_label, read_frame
from swarmbench.core import folder as F
from swarmbench.core.checks import EXACT, ROUNDED
from swarmbench.latency import histogram
from swarmbench.latency.histogram import LatencyBook, decode, new_histogram, percentile_columns
from swarmbench.latency.windows import WINDOW_COLUMNS

# --- locust_latency_windows.csv, read compactly ---------------------------------------------------

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
    header = csv_header(path, "latency windows CSV")
    if tuple(header) != WINDOW_COLUMNS:
        raise AnalysisError(path, f"row 1: expected the columns {', '.join(WINDOW_COLUMNS)}")
    try:
        frame = read_frame(
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
    """Every row's histogram is whole: the compact encoding's (the deflate stream ends where the text
    does) or,
    in older files, a compressed HdrHistogram encoding (base64, the cookie, and as many bytes as its
    header says); an Aggregated row's may be blank (derived). Cheap (a few ms for 10,000s of rows), so
    a corrupt or cut-off histogram is named at once, not only when a merge happens to decode it."""
    for text, row in zip(frame[HDR], frame[ROW], strict=True):
        if not text:
            continue  # an Aggregated row's (read_windows named any other)
        if histogram.is_compact(text):
            if not histogram.is_whole(text):
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
    for number, row in csv_records(path):
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


# --- a run's exact latency, and its percentiles ---------------------------------------------------

TABLE_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
"""The whole-run table's percentiles (with the max): those Locust's stats CSV has too, so an old
folder's rounded row has the same columns."""
TABLE_COLUMNS = {"p50_ms": C.P50_MS, "p90_ms": C.P90_MS, "p95_ms": C.P95_MS, "p99_ms": C.P99_MS}
TABLE_COLUMNS |= {"p99.9_ms": C.P999_MS, "max_ms": C.MAX_MS}
"""hdr.percentile_columns' names -> summary.csv's."""


@dataclass
class RunLatency:
    """A run's histograms: `book` the whole run (None: no histogram files, Locust's numbers rounded),
    `windows` its per-window rows (windows_csv.read_windows; None when not read or absent)."""

    book: LatencyBook | None = None
    windows: pd.DataFrame | None = None
    windows_path: Path | None = None

    @property
    def source(self) -> str:
        return EXACT if self.book is not None else ROUNDED


def read_latency(run_dir: Path, windows: bool = True) -> RunLatency:
    """The folder's histograms: locust_latency_hdr.json, else the windows file's sum; WINDOWS=False
    skips the windows file unless it is the only one (`summary` needs whole-run numbers only)."""
    out = RunLatency()
    json_path, windows_path = run_dir / F.LATENCY_HDR_JSON, run_dir / F.LATENCY_WINDOWS_CSV
    if windows_path.is_file() and (windows or not json_path.is_file()):
        out.windows, out.windows_path = read_windows(windows_path), windows_path
    if json_path.is_file():
        out.book = LatencyBook.read(json_path)
    elif out.windows is not None:
        out.book = book_of_windows(out.windows, windows_path)
    return out


def book_of_windows(frame: pd.DataFrame, path: Path) -> LatencyBook:
    """The whole run per endpoint from its windows (the file's Aggregated rows left out: derived)."""
    book = LatencyBook()
    for endpoint, rows in frame[frame[C.ENDPOINT] != C.AGGREGATED].groupby(C.ENDPOINT, observed=True):
        book.add(("", str(endpoint), SERVICE), merged(rows, path))
    return book


# --- lossless merging ------------------------------------------------------------------------------


def merge_histograms(hists: Iterable[HdrHistogram]) -> HdrHistogram:
    """One histogram holding every sample of HISTS: its percentiles are those of all the samples
    together (to the histograms' 3 significant digits), never an average of their percentiles."""
    total = new_histogram()
    for hist in hists:
        total.add(hist)
    return total


def merge_books(books: Iterable[LatencyBook]) -> LatencyBook:
    """Repeats of one configuration as one book: each (type, name, kind) merged losslessly."""
    total = LatencyBook()
    for book in books:
        for key, hist in book.hists.items():
            total.add(key, hist)
    return total


def endpoint_histogram(book: LatencyBook, method: str, name: str) -> HdrHistogram:
    """NAME's service-time histogram as Locust's stats row (METHOD, NAME) counts it; Aggregated: all."""
    if name == C.AGGREGATED and not method:
        return book.aggregated(SERVICE)
    hist = book.hists.get((method, name, SERVICE))
    if hist is None:  # a book summed from the windows file is keyed by endpoint label
        from swarmbench.analysis.locust_csv import endpoint_label

        hist = book.hists.get(("", endpoint_label(method, name), SERVICE))
    return hist if hist is not None else new_histogram()


def table_values(hist: HdrHistogram) -> dict[str, float]:
    """summary.csv's p50 .. p99.9 and max of HIST, ms (one pass over its counts)."""
    values = percentile_columns(hist, TABLE_PERCENTILES)
    return {ours: values[theirs] for theirs, ours in TABLE_COLUMNS.items()}


# --- windows against the history's clock -----------------------------------------------------------


def window_offset_s(history: pd.DataFrame | None, started_at: str | None) -> float:
    """History seconds (t_s) + this = seconds since the test start (the windows' clock), to the
    nearest second: the history's first Unix second minus the test start (run.json), plus half a
    second (a history row written in second T counts requests that ended up to ~T + 0.5 on average)."""
    if history is None or history.empty or not started_at:
        return 0.5
    t0 = datetime.fromisoformat(started_at.replace("Z", "+00:00")).timestamp()
    return float(history[C.TIMESTAMP_OUT].min()) - t0 + 0.5


def window_range(start: float, end: float, offset_s: float) -> tuple[int, int]:
    """The 1 s windows [first, stop) that tile the history span (START, END] (history seconds)."""
    return math.floor(start + offset_s), math.floor(end + offset_s)


def span_percentiles(
    windows: pd.DataFrame,
    path: str | Path,
    endpoint: str,
    first: int,
    stop: int,
    percentiles: dict[str, float],
) -> dict[str, float]:
    """ENDPOINT's PERCENTILES ({column: p}) over windows FIRST..STOP-1, ms, from their histograms
    merged (NaN without samples). One window: the file's own values, nothing decoded."""
    rows = windows[(windows[WINDOW] >= first) & (windows[WINDOW] < stop) & (windows[C.ENDPOINT] == endpoint)]
    return _percentiles(rows, path, percentiles, windows)


def _percentiles(
    rows: pd.DataFrame, path: str | Path, percentiles: dict[str, float], windows: pd.DataFrame
) -> dict[str, float]:
    rows = rows[rows[COUNT] > 0]
    if rows.empty:
        return dict.fromkeys(percentiles, float("nan"))
    if len(rows) == 1 and set(percentiles) <= set(PCT_COLUMNS):
        return {col: float(rows[col].iloc[0]) for col in percentiles}
    values = merged(histogram_rows(windows, rows), path).get_percentile_to_value_dict(
        list(percentiles.values())
    )
    return {col: round(values[p] / 1000, 3) for col, p in percentiles.items()}


def series_percentiles(
    windows: pd.DataFrame, path: str | Path, bounds: list[tuple[int, int]], offset_s: float
) -> pd.DataFrame:
    """Per endpoint and history window (start, end]: p50/p95/p99 of the 1 s windows inside it,
    merged. Columns: endpoint, t_s (the end), p50_ms, p95_ms, p99_ms."""
    pcts = {C.P50_MS: 50.0, C.P95_MS: 95.0, C.P99_MS: 99.0}
    which = np.full(len(windows), -1, dtype=np.int64)
    w = windows[WINDOW].to_numpy()
    for i, (start, end) in enumerate(bounds):
        first, stop = window_range(start, end, offset_s)
        which[(w >= first) & (w < stop)] = i
    tagged = windows.assign(_bound=which)
    tagged = tagged[tagged["_bound"] >= 0]
    rows = []
    for (endpoint, i), group in tagged.groupby([C.ENDPOINT, "_bound"], observed=True, sort=True):
        rows.append(
            {
                C.ENDPOINT: str(endpoint),
                C.TIME_S: bounds[int(i)][1],
                **_percentiles(group, path, pcts, windows),
            }
        )
    return pd.DataFrame(rows, columns=[C.ENDPOINT, C.TIME_S, *pcts])


# --- the latency distribution (HdrHistogram's percentile plot) --------------------------------------

MAX_NINES = 5
"""The plot's right end at most: 99.999 % (1/(1-q) = 10^5); further needs more samples than a run of
minutes has, and the last point is the max anyway."""
POINTS = 200
"""Percentiles evaluated per line: smooth at report size, one pass over the counts."""


def distribution(hist: HdrHistogram) -> pd.DataFrame:
    """HIST's percentile curve: columns `x` = 1/(1-q) (1 = the min, 10 = p90, 100 = p99 ...),
    `percentile` (q in %), `ms`; x log-spaced up to the sample count (past it every percentile is
    the max), the max as the last point. Empty for an empty histogram."""
    n = hist.get_total_count()
    if not n:
        return pd.DataFrame(columns=["x", "percentile", "ms"])
    top = min(float(n), 10.0**MAX_NINES)
    x = np.unique(np.logspace(0, math.log10(top), POINTS)) if top > 1 else np.array([1.0])
    q = 100.0 * (1.0 - 1.0 / x)
    values = hist.get_percentile_to_value_dict(q.tolist())
    ms = [values[p] / 1000 for p in q.tolist()]
    frame = pd.DataFrame({"x": x, "percentile": q, "ms": ms})
    last = pd.DataFrame(
        {"x": [top], "percentile": [100.0 * (1 - 1 / top)], "ms": [hist.get_max_value() / 1000]}
    )
    return pd.concat([frame, last], ignore_index=True)
