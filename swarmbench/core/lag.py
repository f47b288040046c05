"""Did the load generator keep up? Its event loop's lag, and the bound past which latency is inflated.

A Locust worker is one gevent loop: every user's request, response parsing and timer runs on it. When
the loop is busy (CPU-bound users) or the process is descheduled (a container at its CPU quota is
throttled for the rest of each 100 ms CFS period), a response that arrived is read late, and the wait
counts as the server's response time. plugin/looplag.py measures it directly: a timer set to fire
every TICK_S, and how late it actually woke. Lag is (wake time - due time), in ms.

The bound (`bound_ms`): lag p99 on any worker above max(LAG_FLOOR_MS, LAG_SHARE_OF_P50 x the run's
median response time) marks the run `latency inflated by the load generator`:

- relative: a response is delayed by at most the loop's lag when it arrives; if 1 % of wake-ups are
  late by more than a tenth of the median response time, the measured percentiles from the median
  up carry an error of that order from the generator itself -- beyond the run-to-run noise of a
  latency measurement (a few %), and the run no longer measures the server alone;
- floor: a healthy loop wakes within about a millisecond (timer slack, the 3 s stats report and
  Python's garbage collector add pauses of a few ms), and on a machine whose cores are all busy any
  runnable process may wait one CFS scheduling period (6 ms x (1 + log2 cores): 12-24 ms) for its
  turn without being saturated itself; a target answering in about a millisecond would otherwise
  make that jitter "inflate" it. Measured on this harness (2-core machine, shared): workers with a
  core to themselves stay at p99 2-3 ms, a standalone runner on a fully busy machine reaches ~10 ms;
  a worker at its 0.15-CPU quota shows p99 of 800-1500 ms (throttled for most of each 100 ms CFS
  period, with a backlog of users). LAG_FLOOR_MS sits above the first two and far below the last.

Standard library only: the plugin (which measures and records) and the verdict (which judges) share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from swarmbench.core.sections import GeneratorLag, WorkerLag

TICK_S = 0.01
"""The probe's timer period: 100 wake-ups a second (about 300 per 3 s report), cheap (<1 % of a core)."""

LAG_FLOOR_MS = 20.0
"""Lag p99 at or below this never flags a run (see the module docstring)."""

LAG_SHARE_OF_P50 = 0.10
"""Lag p99 above this share of the run's median response time flags it (and above the floor)."""

INFLATED = "latency inflated by the load generator"
"""The mark a flagged run carries: run.json's generator_lag.flag, the report, the printout, the verdict."""

_BASE_MS, _GROWTH = 0.01, 1.05
"""Histogram buckets: from 0.01 ms, each 5 % wider than the last (a percentile within 5 %)."""


def percentiles(samples: Iterable[float]) -> dict[str, Any]:
    """{"n", "p50_ms", "p99_ms", "max_ms"} of lag samples (ms), exact (nearest rank)."""
    xs = sorted(samples)
    if not xs:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}

    def rank(q: float) -> float:
        return xs[max(0, math.ceil(q * len(xs)) - 1)]

    return {
        "n": len(xs),
        "p50_ms": round(rank(0.5), 3),
        "p99_ms": round(rank(0.99), 3),
        "max_ms": round(xs[-1], 3),
    }


class Histogram:
    """Lag samples of a whole run in log buckets: constant memory, percentiles within 5 %."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0
        self.max_ms = 0.0

    def add(self, ms: float) -> None:
        i = 0 if ms <= _BASE_MS else math.ceil(math.log(ms / _BASE_MS, _GROWTH))
        self.counts[i] = self.counts.get(i, 0) + 1
        self.n += 1
        self.max_ms = max(self.max_ms, ms)

    def percentile(self, q: float) -> float | None:
        """The upper edge of the bucket holding the Q-th sample (never above the max seen)."""
        if not self.n:
            return None
        need, seen = max(1, math.ceil(q * self.n)), 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= need:
                return min(_BASE_MS * _GROWTH**i, self.max_ms)
        return self.max_ms

    def summary(self) -> dict[str, Any]:
        if not self.n:
            return percentiles([])
        p50, p99 = self.percentile(0.5), self.percentile(0.99)
        return {
            "n": self.n,
            "p50_ms": None if p50 is None else round(p50, 3),
            "p99_ms": None if p99 is None else round(p99, 3),
            "max_ms": round(self.max_ms, 3),
        }


def bound_ms(median_response_ms: float | None) -> float:
    """Lag p99 above this inflates the run's latency (module docstring)."""
    return max(LAG_FLOOR_MS, LAG_SHARE_OF_P50 * (median_response_ms or 0.0))


def inflated(p99_ms: float | None, median_response_ms: float | None) -> bool:
    return p99_ms is not None and p99_ms > bound_ms(median_response_ms)


SERIES_COLUMNS = ["t_s", "p50_ms", "p99_ms", "max_ms"]
"""The columns of each worker's lag series in run.json (one row per stats report)."""


def judge_lag(per_worker: list[WorkerLag], median_response_ms: float | None) -> GeneratorLag:
    """run.json's generator_lag: each worker's figures and the verdict on the worst p99."""
    measured = [w for w in per_worker if w.p99_ms is not None]
    worst = max(measured, key=lambda w: w.p99_ms or 0.0, default=None)
    p99 = None if worst is None else worst.p99_ms
    flagged = inflated(p99, median_response_ms)
    return GeneratorLag(
        tick_ms=TICK_S * 1000,
        series_columns=list(SERIES_COLUMNS),
        bound_ms=round(bound_ms(median_response_ms), 3),
        floor_ms=LAG_FLOOR_MS,
        share_of_median=LAG_SHARE_OF_P50,
        median_response_ms=median_response_ms,
        worst_worker=None if worst is None else worst.id,
        worst_p99_ms=p99,
        inflated=flagged,
        flag=INFLATED if flagged else None,
        per_worker=per_worker,
    )


def reason(p99_ms: float, median_response_ms: float | None) -> str:
    """Why a run is flagged, in the verdict's and the printout's words (numbers: its inputs)."""
    median = "?" if median_response_ms is None else f"{median_response_ms:.0f}"
    return (
        f"{INFLATED}: the busiest load generator's event loop woke p99 {p99_ms:.0f} ms late, above "
        f"the {bound_ms(median_response_ms):.0f} ms bound (the larger of {LAG_FLOOR_MS:.0f} ms and "
        f"{LAG_SHARE_OF_P50:.0%} of the median response time, {median} ms): its users waited for the "
        "CPU, and that wait is in the response times"
    )
