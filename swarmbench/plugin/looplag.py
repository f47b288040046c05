"""The generator's self-check: how late its gevent loop wakes a periodic timer (core/lag.py says why).

Every load generator (worker, or a standalone runner) runs a `Probe` from its test start: a greenlet
that sleeps lag.TICK_S and records how late it woke. A worker ships, with each stats report
(`report_to_master`, every 3 s and once more at the end), the lag of that interval (p50/p99/max) and
of the whole run so far; the master keeps them per worker in a `LagBook`, which becomes run.json's
`generator_lag` section: the series over time, each worker's whole-run figures, and the verdict
(lag.judge_lag) against the run's median response time.
"""

from __future__ import annotations

import time
from typing import Any

import gevent

from swarmbench.core import lag
from swarmbench.core.sections import GeneratorLag, WorkerLag

LAG_REPORT_KEY = "swarmbench_lag"
"""Key in the worker -> master stats report; namespaced like CPU_REPORT_KEY."""

LOCAL_REPORT_S = 3.0
"""A standalone runner's probe is read this often (a worker's at each of its stats reports)."""


class Probe:
    """One process's timer-lag probe."""

    def __init__(self) -> None:
        self.greenlet: gevent.Greenlet | None = None
        self.interval: list[float] = []
        self.run = lag.Histogram()

    def start(self) -> None:
        """(Re)start at a test start: a new run, new figures."""
        self.stop()
        self.interval, self.run = [], lag.Histogram()
        self.greenlet = gevent.spawn(self._tick)

    def stop(self) -> None:
        if self.greenlet is not None:
            self.greenlet.kill(block=False)
            self.greenlet = None

    def _tick(self) -> None:
        while True:
            due = time.perf_counter() + lag.TICK_S
            gevent.sleep(lag.TICK_S)
            late_ms = max(0.0, (time.perf_counter() - due) * 1000)
            self.interval.append(late_ms)
            self.run.add(late_ms)

    def report(self) -> dict[str, Any]:
        """The figures since the last report and for the whole run; starts the next interval."""
        out = {"interval": lag.percentiles(self.interval), "run": self.run.summary()}
        self.interval = []
        return out


class LagBook:
    """The master's record of each generator's lag reports, for run.json."""

    def __init__(self) -> None:
        self.series: dict[str, list[list[float | None]]] = {}
        self.whole: dict[str, dict[str, Any]] = {}

    def record(self, worker: str, report: dict[str, Any], t_s: float) -> None:
        interval = report.get("interval") or {}
        if interval.get("n"):
            row = [round(t_s, 1), interval.get("p50_ms"), interval.get("p99_ms"), interval.get("max_ms")]
            self.series.setdefault(worker, []).append(row)
        if (report.get("run") or {}).get("n"):
            self.whole[worker] = report["run"]

    def section(self, median_response_ms: float | None) -> GeneratorLag | None:
        """run.json's generator_lag; None when no generator reported (an older worker image)."""
        if not self.whole:
            return None
        per_worker = []
        for w in sorted(self.whole):
            figures = WorkerLag.from_json(self.whole[w], f"worker {w}'s lag report")
            figures.id, figures.series = w, self.series.get(w, [])
            per_worker.append(figures)
        return lag.judge_lag(per_worker, median_response_ms)


def track_local(probe: Probe, book: LagBook, started: float) -> None:
    """A standalone runner is its own generator: read its probe every LOCAL_REPORT_S (a greenlet)."""
    while True:
        gevent.sleep(LOCAL_REPORT_S)
        book.record("local", probe.report(), time.monotonic() - started)
