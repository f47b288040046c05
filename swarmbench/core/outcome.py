"""One evaluated threshold (core/checks.py's grammar) and how it reads: the console line, junit.xml's
failure message and run.json's `checks[]` entry. Shared by the plugin, which evaluates thresholds at
the end of a run, and the analysis, which evaluates them on a saved run folder."""

from __future__ import annotations

from dataclasses import dataclass

from swarmbench.core.checks import Check
from swarmbench.core.sections import CheckOutcome

EXACT, ROUNDED = "exact", "rounded"
"""Where a latency threshold's number came from: the HDR histograms, or Locust's 2-digit buckets."""


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
        return f"{value:g} ms"
    return f"{value:g} ({value * 100:.2f} %)"  # fail_ratio: both spellings, 0.01 is easy to misread
