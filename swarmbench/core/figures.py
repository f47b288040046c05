"""A run folder's cells as numbers, and a latency, a count and a rate as every output prints them: one
parser, one rounding (show_ms, show_count, show_rate: the terminal's summary and the run page alike).

Used by the terminal (core/answer.py), the run page (page/run.py), the thresholds' text and JUnit
file (core/checks.py) and every reader of a run folder (core/runfolder.py).

Why one rule: the latency files keep microseconds (locust_latency_hdr.csv: 3 decimals) but Locust's
own maximum is a float with sub-microsecond noise (25.05221299998084); two outputs that round it
differently print one figure two ways.
"""

from __future__ import annotations

import math
import re
from typing import Any, overload

MS_DECIMALS = 3
"""Decimals of a millisecond shown: microseconds, every digit the latency files keep."""

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
"""A decimal number as Locust and the harness write one (no `inf`, `nan`, `1_000` or hex)."""


@overload
def number(value: Any, default: None = None) -> float | None: ...
@overload
def number(value: Any, default: float) -> float: ...
def number(value: Any, default: float | None = None) -> float | None:
    """VALUE (a CSV cell or a JSON value) as a finite float; DEFAULT where it is blank, `N/A`
    (Locust's for a name without responses), not a number, infinite or NaN."""
    if type(value) is str:  # the hot path: every CSV cell
        try:
            figure = float(value)
        except ValueError:
            return default
        # float() also reads `inf`, `nan` and `1_000`, which no file of ours means as a number
        return figure if math.isfinite(figure) and "_" not in value else default
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else default
    text = str(value).strip()
    return float(text) if _NUMBER.match(text) else default


def numbers(values: list[Any]) -> list[float | None]:
    """[number(v) for v in VALUES], in one pass where every value is the text of a finite number (a
    CSV row of figures, the common case: reading a run folder converts every cell of every row)."""
    try:
        figures = [float(v) for v in values]
        plain = "_" not in "".join(values)  # TypeError where a value is not text
    except (TypeError, ValueError):  # a blank, N/A, missing or non-text value: each on its own
        return [number(v) for v in values]
    # A non-finite sum: an inf or nan among them (or an overflow): each on its own, as above.
    return figures if plain and math.isfinite(sum(figures)) else [number(v) for v in values]


def count(value: Any) -> int:
    """A count: VALUE as a whole number >= 0; 0 where it is blank or not a number (a cut-off file)."""
    figure = number(value)
    return int(figure) if figure is not None and figure >= 0 else 0


def show_ms(value: float | None) -> str:
    """A latency in milliseconds as every output prints it: to the microsecond (MS_DECIMALS), trailing
    zeros dropped, a whole number without a fraction; `-` for no value. 26.959 stays 26.959 (the
    HDR files' values print unchanged), 25.05221299998084 (Locust's max) prints 25.052, 1234567.0
    prints 1234567 (never `1.23457e+06`)."""
    if value is None or not math.isfinite(value):
        return "-"
    text = f"{value:.{MS_DECIMALS}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def show_count(value: float | None) -> str:
    """A count as every output prints it: whole, thousands separated (12,345); `-` for no value."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{int(value):,}"


def show_rate(value: float | None) -> str:
    """A rate (req/s) as every output prints it: one decimal, thousands separated (1,234.5); `-` for
    no value. Locust's Requests/s is a float with noise past that (412.33333333)."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:,.1f}"
