"""Judging a number: the threshold grammar (`[NAME:]METRIC OP VALUE`), one evaluated threshold and how
it reads, and the verdict of a comparison's difference.

The threshold grammar: `[NAME:]METRIC OP VALUE`, several joined by `;`.

Part of swarmbench.core (standard library only): the host runner rejects a malformed LOCUST_CHECKS
with it before it builds images or starts containers, and the plugin (plugin/checks.py) evaluates
the parsed thresholds inside Locust. One grammar, two callers, no copy to drift.

    p95<300                      Aggregated p95 below 300 ms
    GET /albums/{id}:p99<=500    one endpoint (its request name, as in locust_stats.csv)
    p99.9<800; max<2000          the 99.9th percentile, the slowest request
    fail_ratio<0.01              under 1 % of requests failed
    rps>=200                     at least 200 requests/s

One evaluated threshold (core/checks.py's grammar) and how it reads: the console line, junit.xml's
failure message and run.json's `checks[]` entry. Shared by the plugin, which evaluates thresholds at
the end of a run, and the analysis, which evaluates them on a saved run folder."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from swarmbench.core.figures import show_ms

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers read it so)
if TYPE_CHECKING:
    from swarmbench.core.manifest import CheckOutcome

# --- the threshold grammar ------------------------------------------------------------------------

AGGREGATED = "Aggregated"
"""Locust's name for the all-requests row; the NAME a threshold without one applies to."""

METRICS: dict[str, str] = {
    "p50": "ms",
    "p90": "ms",
    "p95": "ms",
    "p99": "ms",
    "p99.9": "ms",
    "max": "ms",
    "fail_ratio": "",
    "rps": "req/s",
}
"""Metric -> unit. Percentiles in ms like Locust's tables; fail_ratio a fraction (0.01 = 1 %)."""

PERCENTILE_METRICS: dict[str, float] = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}
"""The percentile metrics, as percents (`max` is the 100th, measured as the largest sample)."""

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

SEPARATOR = ";"
"""Between expressions in one value (LOCUST_CHECKS, a conf line). Not ',': k6-style names and
JSON-ish values are full of commas, and a ';' never appears in a request name in practice."""

# METRIC OP VALUE after the last ':'; the operator alternatives list the two-character ones first.
_CONDITION = re.compile(r"^\s*(?P<metric>[A-Za-z_0-9.]*)\s*(?P<op><=|>=|==|!=|=|<|>)?\s*(?P<value>.*?)\s*$")


class CheckSyntaxError(ValueError):
    """A malformed threshold; the message quotes the expression and says what is wrong."""


@dataclass(frozen=True)
class Check:
    """One threshold: `name`'s `metric` must satisfy `op limit`."""

    expr: str
    name: str
    metric: str
    op: str
    limit: float

    def passes(self, measured: float) -> bool:
        return OPERATORS[self.op](measured, self.limit)

    @property
    def unit(self) -> str:
        return METRICS[self.metric]


def parse_check(expr: str) -> Check:
    """Parse one expression; the endpoint name is everything before the LAST ':' (names may
    contain ':' and spaces, a metric never does)."""
    text = expr.strip()
    if not text:
        raise CheckSyntaxError("empty threshold expression")
    name, colon, condition = text.rpartition(":")
    name = name.strip()
    if colon and not name:
        raise CheckSyntaxError(f"{text!r}: empty endpoint name before ':'")
    m = _CONDITION.match(condition)
    assert m is not None  # every group is optional
    metric, op, value = m["metric"], m["op"], m["value"]
    if metric not in METRICS:
        shown = metric or condition.strip()
        raise CheckSyntaxError(f"{text!r}: unknown metric {shown!r} (one of {', '.join(METRICS)})")
    if op not in OPERATORS:
        what = f"operator {op!r} is not supported" if op else "no comparison operator"
        raise CheckSyntaxError(f"{text!r}: {what} (use one of {' '.join(OPERATORS)})")
    limit = _number(text, metric, value)
    return Check(expr=text, name=name or AGGREGATED, metric=metric, op=op, limit=limit)


def _number(text: str, metric: str, value: str) -> float:
    try:
        limit = float(value)
    except ValueError:
        hint = " (latencies are in ms, written without a unit)" if METRICS[metric] == "ms" else ""
        raise CheckSyntaxError(f"{text!r}: {value!r} is not a number{hint}") from None
    if not math.isfinite(limit) or limit < 0:
        raise CheckSyntaxError(f"{text!r}: the limit must be a finite number >= 0")
    if metric == "fail_ratio" and limit > 1:
        raise CheckSyntaxError(f"{text!r}: fail_ratio is a fraction from 0 to 1 (1 % is 0.01)")
    return limit


def split_checks(values: Iterable[str] | str | None) -> list[str]:
    """The expressions in one or more values (each `;`-separated); empty pieces are dropped, so a
    trailing ';' is harmless."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [piece.strip() for value in values for piece in value.split(SEPARATOR) if piece.strip()]


def parse_checks(values: Iterable[str] | str | None) -> list[Check]:
    """Every threshold in VALUES, in order; the first malformed one raises CheckSyntaxError."""
    return [parse_check(expr) for expr in split_checks(values)]


# --- an evaluated threshold -----------------------------------------------------------------------

EXACT, ROUNDED = "exact", "rounded"
"""Where a latency threshold's number came from: the HDR histograms, or Locust's 2-digit buckets."""


# --- a threshold on one window (live checks: plugin/slo.py) --------------------------------------


def window_value(rows: list[dict[str, str]], check: Check, window_s: float) -> float | None:
    """CHECK's metric in one window of WINDOW_S seconds, from its ROWS (locust_latency_windows.csv's
    columns: type, name, count, failures, p50_ms .. max_ms): p50 .. max the row of its name (under
    several request types, the worst), fail_ratio failures / count, rps count / WINDOW_S. None when
    the window holds no request of its name."""
    if check.name == AGGREGATED:
        mine = [r for r in rows if not r["type"] and r["name"] == AGGREGATED]
    else:
        mine = [r for r in rows if r["type"] and r["name"] == check.name]
    count = sum(int(r["count"]) for r in mine)
    if not count:
        return None
    if check.metric == "fail_ratio":
        return round(sum(int(r["failures"]) for r in mine) / count, 6)
    if check.metric == "rps":
        return round(count / window_s, 3)
    column = "max_ms" if check.metric == "max" else f"p{PERCENTILE_METRICS[check.metric]:g}_ms"
    return max(float(r[column]) for r in mine if int(r["count"]))


def breach(rows: list[dict[str, str]], checks: list[Check], window_s: float) -> tuple[Check, float] | None:
    """The first of CHECKS one window's ROWS break, with its figure; None when all hold."""
    for check in checks:
        measured = window_value(rows, check, window_s)
        if measured is not None and not check.passes(measured):
            return check, measured
    return None


@dataclass(frozen=True)
class Outcome:
    """One evaluated threshold. `measured` is None when there was nothing to measure."""

    check: Check
    measured: float | None
    passed: bool
    reason: str = ""  # why there is no measurement
    source: str = ""  # latency metrics: EXACT or ROUNDED

    def record(self) -> CheckOutcome:
        """run.json's `checks[]` entry."""
        # imported here: the readers of a run folder need this module's names, not run.json's types
        from swarmbench.core.manifest import CheckOutcome

        c = self.check
        return CheckOutcome(
            expr=c.expr, name=c.name, metric=c.metric, op=c.op, limit=c.limit, measured=self.measured,
            passed=self.passed, exact=(self.source == EXACT) if self.source else None,
        )  # fmt: skip

    def line(self) -> str:
        """`PASS p95<300 (Aggregated): measured 12 ms` -- what the console and junit show."""
        c = self.check
        verdict = "PASS" if self.passed else "FAIL"
        head = f"{verdict} {c.metric}{c.op}{c.limit:g} ({c.name})"
        if self.measured is None:
            return f"{head}: {self.reason}"
        return f"{head}: measured {self._measured()}"

    def failure_message(self) -> str:
        """`measured 412 ms, limit < 300 ms`, or why nothing was measured."""
        c = self.check
        if self.measured is None:
            return self.reason
        return f"measured {self._measured()}, limit {c.op} {_show(c.limit, c.unit)}"

    def _measured(self) -> str:
        """`106.1 ms (exact)`: a latency says where it came from."""
        assert self.measured is not None
        shown = _show(self.measured, self.check.unit)
        return f"{shown} ({self.source})" if self.source else shown


def _show(value: float, unit: str) -> str:
    if unit == "req/s":
        return f"{value:.1f} req/s"
    if unit == "ms":
        # Every digit the latency files keep (µs), as the terminal and the page show it: `:g` would
        # print 1071.103 as 1071.1, a number that is in no file, and 1234567 as 1.23457e+06.
        return show_ms(value) + " ms"
    return f"{value:g} ({value * 100:.2f} %)"  # fail_ratio: both spellings, 0.01 is easy to misread


# --- a comparison's verdict ---------------------------------------------------------------------
#
# A difference's verdict: significance AND a minimum effect (as ASV does), never one without the other.
#
# The band is +-min-effect around zero, relative to the baseline's value. With the estimate and the
# interval [low, high] of the difference turned so that positive is worse (more latency or errors,
# less throughput):
# - `regressed`: the whole interval lies above 0 (significant) and the estimate beyond +band;
# - `improved`: the whole interval lies below 0 and the estimate beyond -band;
# - `no change`: the whole interval lies inside the band (a change, if any, smaller than we care for);
# - `inconclusive`: the interval straddles an edge of the band (more runs would tell).

COMPARE_METRICS = ("throughput", "error_rate", "p50", "p90", "p95", "p99")
"""What `swarmbench compare` judges, in its order: the run's throughput and error rate, and four
percentiles of its latency."""
HIGHER_IS_WORSE = {
    "throughput": False,
    "error_rate": True,
    "p50": True,
    "p90": True,
    "p95": True,
    "p99": True,
}
"""The bad direction of each metric: less throughput is worse, more latency or errors is worse."""

REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE = "regressed", "improved", "no change", "inconclusive"
VERDICTS = (REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE)

MIN_EFFECT = 0.05
"""Default band: changes under 5 % are not worth a failed build. Identical 15 s runs on a shared
2-core machine differ by up to ~5 % in p50 (issue 19), so a smaller band would mostly report noise."""

ERROR_RATE_FLOOR = 0.001
"""The error-rate band is at least 0.1 percentage point: 5 % of a zero error rate is zero, and a
band of zero would call one failed request in a clean run a regression."""


def band(metric: str, baseline: float, min_effect: float) -> float:
    """Half-width of the no-change band, in the metric's unit."""
    width = abs(baseline) * min_effect
    return max(width, ERROR_RATE_FLOOR) if metric == "error_rate" else width


def verdict(metric: str, d: Any, min_effect: float) -> str:
    """The verdict of D, a difference with its point estimate and interval (compare/stats.py
    Difference: baseline, diff, low, high): significance AND a minimum effect, as ASV does (a change
    is flagged when it is significant and its ratio exceeds the factor): `regressed` when the whole
    interval lies on the worse side of 0 AND the estimate beyond the band; `improved` the mirror;
    `no change` when the whole interval lies within the band; else inconclusive (also when the
    estimate or interval is unknown). Under no change P(regressed) <= P(interval excludes 0) <= its
    alpha, so the band costs no false alarms; it only keeps tiny significant changes from counting."""
    if any(math.isnan(v) for v in (d.low, d.high, d.baseline, d.diff)):
        return INCONCLUSIVE
    sign = 1 if HIGHER_IS_WORSE[metric] else -1
    low, high = sorted((sign * d.low, sign * d.high))
    point = sign * d.diff
    edge = band(metric, d.baseline, min_effect)
    if low > 0 and point > edge:
        return REGRESSED
    if high < 0 and point < -edge:
        return IMPROVED
    if -edge <= low and high <= edge:
        return NO_CHANGE
    return INCONCLUSIVE
