"""Locust's CSV files read into tidy frames, every number checked first; the analysis' two ways to
report bad input.

The two ways analysis reports bad input: an error that stops, a warning that lets the rest through.

Both carry the file (or run group) they are about, so the CLI can print one line that names it.
Warnings go through Python's `warnings` module so a notebook shows them too, and the CLI prints each
as `analysis: warning: ...`.

Numbers Locust could never have written: refused with the file and row, before anything uses them.

A count of -5, a rate of `inf`, 99,999,999 failures out of 8,305 requests parse as numbers, and
would flow into a summary (`fail_ratio=12040.9`), a fit and a verdict that contradict each other.
Every rule here is one Locust's own writer cannot break:

- counts (requests, failures, users, occurrences) are whole numbers >= 0;
- rates (requests/s, failures/s) and response times (percentiles, average, max) are finite and >= 0
  (a missing value, Locust's "N/A", is allowed where the reader allows it);
- failures <= requests on every row.

Rows are numbered as in the file: the header is row 1 (a frame's index 0 is row 2).

Locust's CSV files -> tidy pandas frames with Swarmbench's column names (analysis/columns.py).

Locust's quirks handled here, once:
- CRLF line ends (Python's csv writer): pandas and the csv module both accept them.
- The "Aggregated" row: Type is empty; it is kept as method "" and endpoint "Aggregated".
- Percentiles are "N/A" before any response; in the history with --csv-full-history they are the
  percentile over a ~10 s window and 0 while that window is empty (see `read_history`).
- Older Locust 2.x writes the same stats/history columns but fewer failure columns; still older
  spellings are mapped through columns.LEGACY_ALIASES.
A file that is not Locust's (missing columns, a cut-off row, text where a number belongs) raises
AnalysisError naming the file and line; only a cut-off LAST history row is merely warned about,
because a run killed mid-write still has every earlier second intact."""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.core.exits import InputError, read_text

# --- bad input: an error that stops, a warning that lets the rest through -------------------------

AnalysisError = InputError
"""Input the analysis cannot use: `str()` is one line, `WHERE: PROBLEM` (core's InputError, which
the run.json and sweep.json readers raise too)."""


class AnalysisWarning(UserWarning):
    """Something could not be read or inferred; everything else is still reported."""


def warn(where: str | Path, problem: str) -> str:
    """Emit an AnalysisWarning and return its text (results keep it, e.g. scaling.json's warnings)."""
    text = f"{where}: {problem}"
    # stacklevel is irrelevant for the one-line CLI output; `always` in the CLI defeats de-duplication.
    warnings.warn(text, AnalysisWarning, stacklevel=2)
    return text


# --- numbers Locust could never have written ------------------------------------------------------


def _first(bad: pd.Series) -> int | None:
    """Position of the first True in BAD, or None."""
    where = np.flatnonzero(bad.to_numpy(dtype=bool, na_value=False))
    return int(where[0]) if len(where) else None


def _fail(path: Path, frame: pd.DataFrame, pos: int, problem: str) -> None:
    """FRAME is as read (index 0 = the file's row 2, below the header), perhaps less a cut-off tail."""
    row = int(frame.index[pos]) + 2
    raise AnalysisError(path, f"row {row}: {problem}")


def _show(value: float) -> str:
    return f"{value:.15g}" if np.isfinite(value) else str(value)


def counts(frame: pd.DataFrame, cols: Sequence[str], path: Path) -> None:
    """Whole numbers >= 0 (a missing value is the reader's concern, not ours)."""
    for col in cols:
        if col not in frame:
            continue
        v = frame[col].astype("float64")
        bad = v.notna() & (~np.isfinite(v) | (v < 0) | (v != np.floor(v)))
        pos = _first(bad)
        if pos is not None:
            shown = _show(v.iloc[pos])
            _fail(path, frame, pos, f"'{col}' is {shown}; a count must be a whole number >= 0")


def nonnegative(frame: pd.DataFrame, cols: Sequence[str], path: Path, what: str) -> None:
    """Finite and >= 0 (NaN, Locust's N/A, passes: the reader decided whether it may be missing)."""
    for col in cols:
        if col not in frame:
            continue
        v = frame[col].astype("float64")
        bad = v.notna() & (~np.isfinite(v) | (v < 0))
        pos = _first(bad)
        if pos is not None:
            shown = _show(v.iloc[pos])
            _fail(path, frame, pos, f"'{col}' is {shown}; {what} must be a finite number >= 0")


def not_more(frame: pd.DataFrame, part: str, whole: str, path: Path) -> None:
    """PART <= WHOLE on every row (failures out of requests)."""
    if part not in frame or whole not in frame:
        return
    p, w = frame[part].astype("float64"), frame[whole].astype("float64")
    pos = _first(p > w)
    if pos is not None:
        _fail(
            path,
            frame,
            pos,
            f"'{part}' {_show(p.iloc[pos])} is more than '{whole}' {_show(w.iloc[pos])}",
        )


# --- Locust's CSV files -> tidy frames ------------------------------------------------------------

STATS_REQUIRED = [C.NAME, C.REQUEST_COUNT, C.FAILURE_COUNT, C.RPS]
HISTORY_REQUIRED = [C.TIMESTAMP, C.USER_COUNT, C.NAME, C.CURRENT_RPS, C.TOTAL_REQUEST_COUNT]
FAILURES_REQUIRED = [C.FAIL_NAME, C.FAIL_ERROR, C.FAIL_OCCURRENCES]
EXCEPTIONS_REQUIRED = [C.EXC_COUNT, C.EXC_MESSAGE]
PERCENTILES = {C.P50: C.P50_MS, C.P95: C.P95_MS, C.P99: C.P99_MS}
STATS_PERCENTILES = {C.P50: C.P50_MS, C.P90: C.P90_MS, C.P95: C.P95_MS, C.P99: C.P99_MS, C.P999: C.P999_MS}


# --- headers -----------------------------------------------------------------------------------


# Every Locust header the analysis knows (not our tidy names, some of which differ only in case).
LOCUST_HEADERS = [
    C.TYPE, C.NAME, C.REQUEST_COUNT, C.FAILURE_COUNT, C.MEDIAN_RT, C.AVG_RT, C.MIN_RT, C.MAX_RT,
    C.AVG_SIZE, C.RPS, C.FAILURES_PER_S, C.TIMESTAMP, C.USER_COUNT, C.TOTAL_REQUEST_COUNT,
    C.TOTAL_FAILURE_COUNT, C.TOTAL_MEDIAN_RT, C.TOTAL_AVG_RT, C.P50, C.P90, C.P95, C.P99, C.P999, C.P100,
    C.FAIL_METHOD, C.FAIL_ERROR, C.FAIL_OCCURRENCES, C.FAIL_FIRST_SEEN, C.FAIL_LAST_SEEN,
    C.EXC_COUNT, C.EXC_MESSAGE, C.EXC_TRACEBACK, C.EXC_NODES,
]  # fmt: skip


def canonical_header(header: Sequence[str], legacy: bool = True) -> list[str]:
    """Map older or differently-cased spellings onto columns.py's names."""
    known = {name.lower(): name for name in LOCUST_HEADERS}
    aliases = {k.lower(): v for k, v in C.LEGACY_ALIASES.items()} if legacy else {}
    out = []
    for raw in header:
        key = raw.strip().lower()
        out.append(aliases.get(key) or known.get(key) or raw.strip())
    return out


def _require(header: Sequence[str], required: Sequence[str], path: Path, what: str) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        names = ", ".join(f"'{c}'" for c in missing)
        raise AnalysisError(path, f"not a Locust {what}: no column {names}")


def endpoint_label(method: str, name: str) -> str:
    """How a person names a row: "GET /albums". Swarmbench's scenario already puts the method in
    the name ("GET /albums" with Type GET), plain Locust files do not ("/albums")."""
    if not method or name == C.AGGREGATED or name.startswith(f"{method} "):
        return name
    return f"{method} {name}"


# --- small files: parsed with the csv module, so every problem has a line number ---------------


def _read_rows(
    path: Path, required: Sequence[str], what: str, legacy: bool = True
) -> tuple[list[str], list[list[str]]]:
    text = read_text(path, what)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise AnalysisError(path, f"not a Locust {what}: {e}") from None
    header = canonical_header(rows[0], legacy)
    _require(header, required, path, what)
    body = rows[1:]
    for i, row in enumerate(body):
        if len(row) != len(header):
            # csv.reader counts logical rows; a quoted traceback can span lines, so name the row.
            hint = " (truncated file?)" if i == len(body) - 1 else ""
            raise AnalysisError(path, f"row {i + 2} has {len(row)} fields, the header {len(header)}{hint}")
    return header, body


def _numbers(frame: pd.DataFrame, cols: Sequence[str], path: Path, na_ok: bool) -> pd.DataFrame:
    """Coerce text columns to float; a non-number (other than Locust's N/A) is an error."""
    for col in cols:
        text = frame[col].str.strip()
        values = pd.to_numeric(text.where(text != "N/A"), errors="coerce")
        bad = values.isna() & text.ne("N/A") if na_ok else values.isna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise AnalysisError(path, f"row {row + 2}: column '{col}': {text.iloc[row]!r} is not a number")
        frame[col] = values
    return frame


def read_stats(path: Path) -> pd.DataFrame:
    """*_stats.csv -> one row per (method, name) and the Aggregated row, cumulative over the run."""
    header, body = _read_rows(path, STATS_REQUIRED, "stats CSV (*_stats.csv)")
    raw = pd.DataFrame(body, columns=header, dtype=str)
    if C.TYPE not in raw:
        raw[C.TYPE] = ""
    # Locust always writes the Aggregated row last; without it the file was cut short.
    if not (raw[C.NAME] == C.AGGREGATED).any():
        raise AnalysisError(path, f"no '{C.AGGREGATED}' row (truncated, or not written by Locust)")
    optional = [C.AVG_RT, C.MAX_RT, C.FAILURES_PER_S, *STATS_PERCENTILES]
    missing = [c for c in optional if c not in raw]
    if missing:
        warn(path, f"no column {', '.join(repr(c) for c in missing)} (older Locust?); left empty")
    for col in missing:
        raw[col] = "N/A"
    raw = _numbers(raw, [C.REQUEST_COUNT, C.FAILURE_COUNT, C.RPS], path, na_ok=False)
    raw = _numbers(raw, [C.AVG_RT, C.MAX_RT, C.FAILURES_PER_S, *STATS_PERCENTILES], path, na_ok=True)
    counts(raw, [C.REQUEST_COUNT, C.FAILURE_COUNT], path)
    nonnegative(raw, [C.RPS, C.FAILURES_PER_S], path, "a rate")
    nonnegative(raw, [C.AVG_RT, C.MAX_RT, *STATS_PERCENTILES], path, "a response time")
    not_more(raw, C.FAILURE_COUNT, C.REQUEST_COUNT, path)
    method = raw[C.TYPE].fillna("").replace("None", "")
    out = pd.DataFrame(
        {
            C.METHOD: method,
            C.ENDPOINT_NAME: raw[C.NAME],
            C.ENDPOINT: [endpoint_label(m, n) for m, n in zip(method, raw[C.NAME], strict=True)],
            C.REQUESTS: raw[C.REQUEST_COUNT].astype("int64"),
            C.FAILURES: raw[C.FAILURE_COUNT].astype("int64"),
            C.RPS_OUT: raw[C.RPS],
            C.FAIL_PER_S_OUT: raw[C.FAILURES_PER_S],
            **{ours: raw[theirs] for theirs, ours in STATS_PERCENTILES.items()},
            C.AVG_MS: raw[C.AVG_RT],
            C.MAX_MS: raw[C.MAX_RT],
        }
    )
    return out


def read_failures(path: Path) -> pd.DataFrame:
    header, body = _read_rows(path, FAILURES_REQUIRED, "failures CSV (*_failures.csv)", legacy=False)
    raw = pd.DataFrame(body, columns=header, dtype=str)
    raw = _numbers(raw, [C.FAIL_OCCURRENCES], path, na_ok=False)
    counts(raw, [C.FAIL_OCCURRENCES], path)
    method = raw[C.FAIL_METHOD] if C.FAIL_METHOD in raw else pd.Series([""] * len(raw), dtype=str)
    return pd.DataFrame(
        {
            C.METHOD: method,
            C.ENDPOINT_NAME: raw[C.FAIL_NAME],
            C.ENDPOINT: [endpoint_label(m, n) for m, n in zip(method, raw[C.FAIL_NAME], strict=True)],
            C.ERROR: raw[C.FAIL_ERROR],
            C.OCCURRENCES: raw[C.FAIL_OCCURRENCES].astype("int64"),
        }
    )


def read_exceptions(path: Path) -> pd.DataFrame:
    header, body = _read_rows(path, EXCEPTIONS_REQUIRED, "exceptions CSV (*_exceptions.csv)")
    raw = pd.DataFrame(body, columns=header, dtype=str)
    raw = _numbers(raw, [C.EXC_COUNT], path, na_ok=False)
    counts(raw, [C.EXC_COUNT], path)
    return pd.DataFrame({"count": raw[C.EXC_COUNT].astype("int64"), "message": raw[C.EXC_MESSAGE]})


# --- the history: possibly millions of rows, read with pandas' C parser ------------------------

# Only what the analysis plots, with explicit dtypes: float32 halves memory against float64 and
# keeps ms and requests/s exact enough (7 significant digits). Timestamp is read as float64 so a
# cut-off row (NaN) does not abort the whole read.
_HISTORY_DTYPES = {
    C.TIMESTAMP: "float64",
    C.USER_COUNT: "float32",
    C.TYPE: "category",
    C.NAME: "category",
    C.CURRENT_RPS: "float32",
    C.CURRENT_FAILURES_PER_S: "float32",
    C.P50: "float32",
    C.P95: "float32",
    C.P99: "float32",
    C.P100: "float32",
    C.TOTAL_REQUEST_COUNT: "float64",
    C.TOTAL_FAILURE_COUNT: "float64",
}


def _history_header(path: Path) -> list[str]:
    return csv_header(path, "history CSV")


def csv_header(path: Path, what: str) -> list[str]:
    """PATH's first line as CSV fields (AnalysisError naming the file when unreadable or empty)."""
    return next(csv.reader([read_text(path, what, first_line=True)]), [])


def csv_records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each line of PATH: the slow path that names the first bad line after pandas
    failed."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        for row in reader:
            yield reader.line_num, row


def read_frame(path: Path, **options: Any) -> pd.DataFrame:
    """pandas' read_csv of PATH with OPTIONS: the analysis' one pandas loader (the others above build
    on it, and analysis/exact.py and openmodel.py read through it)."""
    return pd.read_csv(path, **options)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            return True
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def _first_bad_line(path: Path, usecols: Sequence[str], header: list[str]) -> str:
    """Slow path, only after pandas failed: find the first line that does not parse, for the error."""
    idx = [header.index(c) for c in usecols if c not in (C.TYPE, C.NAME)]
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.reader(f), start=1):
            if lineno == 1:
                continue
            for i in idx:
                cell = row[i] if i < len(row) else ""
                if cell != "N/A":
                    try:
                        float(cell)
                    except ValueError:
                        return f"line {lineno}, column '{header[i]}': {cell!r} is not a number"
    return "unreadable rows"


def read_history(path: Path) -> pd.DataFrame:
    """*_stats_history.csv -> one row per (second, endpoint), Aggregated included.

    Percentiles with --csv-full-history are over Locust's ~10 s window, not cumulative; the frame's
    attrs["window"] says which ("10s" or "cumulative", the latter for Aggregated-only files).
    A window with no responses reads 0 in every percentile (Locust writes `int(None or 0)`), so a 0
    maximum becomes NaN: a gap in a chart, not a fake 0 ms. (A window whose every response took
    under 0.5 ms would also read 0; Locust's rounding makes that indistinguishable.)
    """
    raw_header = _history_header(path)
    header = canonical_header(raw_header)
    _require(header, HISTORY_REQUIRED, path, "history CSV (*_stats_history.csv)")
    wanted = [c for c in _HISTORY_DTYPES if c in header]
    # Read by position under canonical names, so older spellings need no second code path.
    positions = [header.index(c) for c in wanted]
    pct_na = {c: ["N/A"] for c in (C.P50, C.P95, C.P99, C.P100) if c in wanted}
    try:
        frame = read_frame(
            path,
            header=0,
            names=header,
            usecols=positions,
            dtype={c: _HISTORY_DTYPES[c] for c in wanted},
            na_values=pct_na,
            keep_default_na=False,  # an empty Type (Aggregated) must stay "", not NaN
            engine="c",
        )
    except (ValueError, pd.errors.ParserError) as e:
        problem = _first_bad_line(path, wanted, header) if isinstance(e, ValueError) else str(e).strip()
        raise AnalysisError(path, f"not a Locust history CSV: {problem}") from None
    frame = _drop_cut_off_tail(frame, path)
    _validate_history(frame, path)
    return _tidy_history(frame, path)


def _validate_history(frame: pd.DataFrame, path: Path) -> None:
    counts(frame, [C.USER_COUNT, C.TOTAL_REQUEST_COUNT, C.TOTAL_FAILURE_COUNT], path)
    nonnegative(frame, [C.TIMESTAMP], path, "a Unix time")
    nonnegative(frame, [C.CURRENT_RPS, C.CURRENT_FAILURES_PER_S], path, "a rate")
    nonnegative(frame, [C.P50, C.P95, C.P99, C.P100], path, "a response time")
    not_more(frame, C.TOTAL_FAILURE_COUNT, C.TOTAL_REQUEST_COUNT, path)


def _drop_cut_off_tail(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    broken = frame[C.TIMESTAMP].isna() | frame[C.TOTAL_REQUEST_COUNT].isna()
    if not _ends_with_newline(path) and len(frame):
        broken.iloc[-1] = True  # a last line without its line end was cut mid-write
    if not broken.any():
        return frame
    where = np.flatnonzero(broken.to_numpy())
    if len(where) == 1 and where[0] == len(frame) - 1:
        warn(path, f"last line ({len(frame) + 1}) is cut off; ignored")
        return frame.iloc[:-1]
    raise AnalysisError(path, f"line {where[0] + 2} is incomplete (not a Locust history row)")


def _tidy_history(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """FRAME (read_csv's, consumed: its columns are moved out one by one, so the raw and the tidy
    frame never both exist whole: the peak memory of a 1,000,000-row history) -> the tidy frame."""
    n = len(frame)
    method = frame.pop(C.TYPE) if C.TYPE in frame else pd.Series("", index=frame.index, dtype="category")
    name = frame.pop(C.NAME)
    max_window = frame.pop(C.P100) if C.P100 in frame else None
    empty_window = (max_window == 0).to_numpy() if max_window is not None else np.zeros(n, dtype=bool)
    del max_window
    full_history = bool((name.astype(str) != C.AGGREGATED).any())
    out = pd.DataFrame(index=frame.index)
    out[C.TIMESTAMP_OUT] = frame.pop(C.TIMESTAMP).astype("int64")
    out[C.USERS] = frame.pop(C.USER_COUNT)
    out[C.METHOD] = method
    out[C.ENDPOINT_NAME] = name
    out[C.ENDPOINT] = _endpoint_categories(method, name)
    del method, name
    out[C.RPS_OUT] = frame.pop(C.CURRENT_RPS)
    fails = frame.pop(C.CURRENT_FAILURES_PER_S) if C.CURRENT_FAILURES_PER_S in frame else np.float32(np.nan)
    out[C.FAIL_PER_S_OUT] = fails
    out[C.TOTAL_REQUESTS] = frame.pop(C.TOTAL_REQUEST_COUNT)
    out[C.TOTAL_FAILURES] = frame.pop(C.TOTAL_FAILURE_COUNT) if C.TOTAL_FAILURE_COUNT in frame else np.nan
    for theirs, ours in PERCENTILES.items():
        col = frame.pop(theirs) if theirs in frame else pd.Series(np.nan, index=frame.index, dtype="float32")
        out[ours] = col.mask(empty_window)
    start = out[C.TIMESTAMP_OUT].min() if len(out) else 0
    out[C.TIME_S] = (out[C.TIMESTAMP_OUT] - start).astype("float32")
    out.attrs["window"] = "10s" if full_history else "cumulative"
    out.attrs["source"] = str(path)
    return out


def _endpoint_categories(method: pd.Series, name: pd.Series) -> pd.Categorical:
    """endpoint_label per row, computed once per distinct (method, name) pair, not per row."""
    m = method.astype("category").cat
    n = name.astype("category").cat
    width = max(len(n.categories), 1)
    pair = m.codes.to_numpy(np.int64) * width + n.codes.to_numpy(np.int64)
    uniq, inverse = np.unique(pair, return_inverse=True)
    labels = [endpoint_label(str(m.categories[p // width]), str(n.categories[p % width])) for p in uniq]
    # Two pairs can share a label ("GET /a" under Type GET and under Type ""): keep labels unique.
    distinct = list(dict.fromkeys(labels))
    codes = np.array([distinct.index(label) for label in labels], dtype=np.int32)[inverse]
    return pd.Categorical.from_codes(codes, categories=distinct)
