"""CPU use of every load generator, measured by each process itself.

Locust's own `cpu_usage` is sampled every 10 s (its 90 % warning rarely fires in a 30 s run), so
each process also reports the CPU seconds it used since the test started: workers piggyback them on
their regular stats report (`report_to_master`, every 3 s and once more when they quit), a
standalone (local) runner samples itself. From cumulative seconds we get an exact mean over the run
and the busiest report interval.

Each process also reads its own CPU limit (core/cgroup.py: a container's quota or cpuset) and
sends it with the seconds, so its use is judged against what it may use: a worker limited to 0.15
CPU is saturated at 15 % of a core. A worker is one Python process, so it can use one core at most
whatever its limit (USABLE_MAX_CPUS).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import psutil

from swarmbench.core import cgroup
from swarmbench.core.sections import CpuLimit, GeneratorCpu, WorkerCpu

CPU_REPORT_KEY = "swarmbench_cpu"
"""Key in the worker -> master stats report; namespaced so it never collides with Locust's."""

USABLE_MAX_CPUS = 1.0
"""One Python process (one gevent loop, one GIL) uses one core at most, whatever its limit."""


def own_limit() -> CpuLimit:
    """This process's CPU limit (core/cgroup.py); a worker sends its JSON with its report."""
    found = cgroup.cpu_limit()
    return CpuLimit(cpus=round(found.cpus, 4), source=found.source)


def process_cpu_seconds() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


@dataclass
class CpuSeries:
    """Cumulative (wall seconds, cpu seconds) samples of one process since the test started."""

    samples: list[tuple[float, float]] = field(default_factory=list)
    locust_reported: list[float] = field(default_factory=list)
    limit: CpuLimit | None = None  # the process's own CPU limit (own_limit())

    def add(self, wall_s: float, cpu_s: float) -> None:
        if not self.samples or wall_s > self.samples[-1][0]:
            self.samples.append((wall_s, cpu_s))

    def mean_percent(self) -> float | None:
        if not self.samples or self.samples[-1][0] <= 0:
            return None
        wall, cpu = self.samples[-1]
        return round(100 * cpu / wall, 1)

    def max_percent(self) -> float | None:
        """Busiest interval between two reports (intervals under 1 s are merged into the next);
        never below the mean, which a short last interval could otherwise hide."""
        best, (w0, c0) = None, (0.0, 0.0)
        for w, c in self.samples:
            if w - w0 >= 1.0:
                rate = 100 * (c - c0) / (w - w0)
                best = rate if best is None else max(best, rate)
                w0, c0 = w, c
        mean = self.mean_percent()
        if best is None:
            return mean
        return round(max(best, mean or 0.0), 1)

    def of_limit(self, percent: float | None) -> float | None:
        """PERCENT (of one core) as a share of what this process may use, in %."""
        if percent is None or not self.limit or not self.limit.cpus:
            return None
        return round(percent / min(USABLE_MAX_CPUS, self.limit.cpus), 1)

    def summary(self, worker_id: str) -> WorkerCpu:
        reported = self.locust_reported
        mean, peak = self.mean_percent(), self.max_percent()
        return WorkerCpu(
            id=worker_id,
            mean_percent=mean,
            max_percent=peak,
            samples=len(self.samples),
            locust_reported_mean_percent=round(sum(reported) / len(reported), 1) if reported else None,
            locust_reported_max_percent=round(max(reported), 1) if reported else None,
            cpu_limit=self.limit,
            mean_percent_of_limit=self.of_limit(mean),
            max_percent_of_limit=self.of_limit(peak),
        )


class CpuClock:
    """This process's CPU seconds and wall seconds since `start()`."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.c0 = process_cpu_seconds()

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.c0 = process_cpu_seconds()

    def read(self) -> tuple[float, float]:
        return time.monotonic() - self.t0, process_cpu_seconds() - self.c0


def summarize(series: dict[str, CpuSeries]) -> GeneratorCpu:
    """run.json's worker_cpu: the mean over workers of each one's mean, the max over all."""
    per_worker = [s.summary(wid) for wid, s in sorted(series.items())]
    means = [w.mean_percent for w in per_worker if w.mean_percent is not None]
    maxes = [w.max_percent for w in per_worker if w.max_percent is not None]
    of_limit = [w.mean_percent_of_limit for w in per_worker if w.mean_percent_of_limit is not None]
    return GeneratorCpu(
        mean_percent=round(sum(means) / len(means), 1) if means else None,
        max_percent=max(maxes) if maxes else None,
        # the busiest worker's mean use as a share of its own limit (the verdict's figure)
        max_mean_percent_of_limit=max(of_limit) if of_limit else None,
        per_worker=per_worker,
    )
