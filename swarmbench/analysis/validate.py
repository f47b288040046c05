"""Numbers Locust could never have written: refused with the file and row, before anything uses them.

A count of -5, a rate of `inf`, 99,999,999 failures out of 8,305 requests parse as numbers, and
would flow into a summary (`fail_ratio=12040.9`), a fit and a verdict that contradict each other.
Every rule here is one Locust's own writer cannot break:

- counts (requests, failures, users, occurrences) are whole numbers >= 0;
- rates (requests/s, failures/s) and response times (percentiles, average, max) are finite and >= 0
  (a missing value, Locust's "N/A", is allowed where the reader allows it);
- failures <= requests on every row.

Rows are numbered as in the file: the header is row 1 (a frame's index 0 is row 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from swarmbench.analysis.errors import AnalysisError


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
