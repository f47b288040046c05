"""The load generator checks itself: its CPU use against its own limit (read from its cgroup), and how
late its event loop wakes.

This process's CPU limit, read from its cgroup: what a load generator's CPU use is judged against.

A container limited to 0.15 CPU that uses 0.15 CPU is saturated, although it used 15 % of a core.
Docker's `cpus:`, Swarm's `resources.limits.cpus` and Kubernetes' `limits.cpu` all set a CFS quota;
`cpuset` pins a process to some cores. Readers here, pure functions of a cgroup tree (the real
/sys/fs/cgroup, or a fixture directory in the tests; target/cgroup.go reads the same files):

    cgroup v2   <dir>/cpu.max                    "QUOTA PERIOD" (µs) or "max PERIOD"
                <dir>/cpuset.cpus.effective      "0-3,6"
    cgroup v1   <root>/cpu[,cpuacct]/<dir>/cpu.cfs_quota_us, cpu.cfs_period_us   (quota -1: none)
                <root>/cpuset/<dir>/cpuset.effective_cpus (or cpuset.cpus)

<dir> is this process's cgroup from /proc/self/cgroup; inside a container with its own cgroup
namespace (Docker's default on cgroup v2) that is "/", the mount's root. A limit anywhere on the way
up counts (a Kubernetes pod's limit sits on the pod's cgroup, above the container's): the smallest
quota from <dir> up to the mount's root wins. The effective limit is the smallest of the quota and the
cpuset's core count; with neither, the machine's cores. Standard library only.

CPU use of every load generator, measured by each process itself.

Locust's own `cpu_usage` is sampled every 10 s (its 90 % warning rarely fires in a 30 s run), so
each process also reports the CPU seconds it used since the test started: workers piggyback them on
their regular stats report (`report_to_master`, every 3 s and once more when they quit), a
standalone (local) runner samples itself. From cumulative seconds we get an exact mean over the run
and the busiest report interval.

Each process also reads its own CPU limit (plugin/generator.py: a container's quota or cpuset) and
sends it with the seconds, so its use is judged against what it may use: a worker limited to 0.15
CPU is saturated at 15 % of a core. A worker is one Python process, so it can use one core at most
whatever its limit (USABLE_MAX_CPUS).

The generator's self-check: how late its gevent loop wakes a periodic timer (core/bottleneck.py says why).

Every load generator (worker, or a standalone runner) runs a `Probe` from its test start: a greenlet
that sleeps bottleneck.TICK_S and records how late it woke. A worker ships, with each stats report
(`report_to_master`, every 3 s and once more at the end), the lag of that interval (p50/p99/max) and
of the whole run so far; the master keeps them per worker in a `LagBook`, which becomes run.json's
`generator_lag` section: the series over time, each worker's whole-run figures, and the verdict
(bottleneck.judge_lag) against the run's median response time."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import gevent
import psutil

from swarmbench.core import bottleneck
from swarmbench.core.manifest import CpuLimit, GeneratorCpu, GeneratorLag, WorkerCpu, WorkerLag

# --- this process's CPU limit, from its cgroup ----------------------------------------------------

ROOT = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")

V2_QUOTA = "cgroup2 cpu.max"
V1_QUOTA = "cgroup1 cpu.cfs_quota_us"
CPUSET = "cpuset"
HOST = "host cores"
"""`source` values: where the limit came from (HOST: no cgroup limit, the machine's cores)."""


@dataclass(frozen=True)
class CgroupLimit:
    """CPUS: how many CPUs this process may use (a fraction for a quota); SOURCE: which rule set it."""

    cpus: float
    source: str

    def to_json(self) -> dict:
        return {"cpus": round(self.cpus, 4), "source": self.source}


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 cpu.max: "15000 100000" -> 0.15 CPUs; "max 100000" (no quota) -> None."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """cgroup v1: cfs_quota_us / cfs_period_us in CPUs; a quota of -1 means none."""
    try:
        quota, period = int(quota_text.strip()), int(period_text.strip())
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cpuset(text: str) -> int | None:
    """A cpuset list ("0-3,6", "2") -> how many cores it names; None when empty or malformed."""
    cores: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            return None
        cores.update(range(first, last + 1))
    return len(cores) or None


def own_cgroups(self_cgroup: str) -> dict[str, str]:
    """/proc/self/cgroup -> {controller: path}; cgroup v2's single line is under the key ""."""
    out: dict[str, str] = {}
    for line in self_cgroup.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        for controller in fields[1].split(",") if fields[1] else [""]:
            out[controller] = fields[2]
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _dirs_up(mount: Path, cgroup_path: str | None) -> list[Path]:
    """MOUNT/CGROUP_PATH and each parent up to MOUNT (only the levels that exist here; inside a
    container's namespace the path may not exist under the mount, which is then the process's own)."""
    rel = PurePosixPath(cgroup_path or "/").relative_to("/")
    levels = [mount / PurePosixPath(*rel.parts[:i]) for i in range(len(rel.parts), 0, -1)]
    return [d for d in levels if d.is_dir()] + [mount]


def _smallest(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def quota_v2(root: Path, cgroups: dict[str, str]) -> float | None:
    return _smallest([parse_cpu_max(_read(d / "cpu.max") or "") for d in _dirs_up(root, cgroups.get(""))])


def quota_v1(root: Path, cgroups: dict[str, str]) -> float | None:
    for name in ("cpu,cpuacct", "cpu", "cpuacct,cpu"):
        mount = root / name
        if (mount / "cpu.cfs_quota_us").exists():
            dirs = _dirs_up(mount, cgroups.get("cpu"))
            return _smallest(
                [
                    parse_cfs(_read(d / "cpu.cfs_quota_us") or "", _read(d / "cpu.cfs_period_us") or "")
                    for d in dirs
                ]
            )
    return None


def cpuset_cores(root: Path, cgroups: dict[str, str]) -> int | None:
    candidates = [d / "cpuset.cpus.effective" for d in _dirs_up(root, cgroups.get(""))[:1]]
    v1 = _dirs_up(root / "cpuset", cgroups.get("cpuset"))[:1] if (root / "cpuset").is_dir() else []
    candidates += [d / name for d in v1 for name in ("cpuset.effective_cpus", "cpuset.cpus")]
    for path in candidates:
        cores = parse_cpuset(_read(path) or "")
        if cores:
            return cores
    return None


def cpu_limit(
    root: Path = ROOT, self_cgroup: str | None = None, host_cores: int | None = None
) -> CgroupLimit:
    """The CPUs this process may use: its cgroup's quota or cpuset, whichever is smaller, else
    HOST_CORES (default: the machine's). SELF_CGROUP: /proc/self/cgroup's text (read when None)."""
    if self_cgroup is None:
        self_cgroup = _read(SELF) or ""
    cgroups = own_cgroups(self_cgroup)
    quota, source = quota_v2(root, cgroups), V2_QUOTA
    if quota is None:
        quota, source = quota_v1(root, cgroups), V1_QUOTA
    cores = cpuset_cores(root, cgroups)
    if quota is not None and (cores is None or quota <= cores):
        return CgroupLimit(quota, source)
    if cores is not None:
        return CgroupLimit(float(cores), CPUSET)
    return CgroupLimit(float(host_cores or os.cpu_count() or 1), HOST)


# --- CPU use of every load generator --------------------------------------------------------------

CPU_REPORT_KEY = "swarmbench_cpu"
"""Key in the worker -> master stats report; namespaced so it never collides with Locust's."""

USABLE_MAX_CPUS = 1.0
"""One Python process (one gevent loop, one GIL) uses one core at most, whatever its limit."""


def own_limit() -> CpuLimit:
    """This process's CPU limit (core/py); a worker sends its JSON with its report."""
    found = cpu_limit()
    return CpuLimit(cpus=round(found.cpus, 4), source=found.source)


def process_cpu_seconds() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


class Running:
    """Count, sum and max of a series, in constant memory: all CpuSeries' summary reads of it."""

    __slots__ = ("n", "top", "total")

    def __init__(self) -> None:
        self.n, self.total, self.top = 0, 0.0, 0.0

    def append(self, value: float) -> None:
        self.n += 1
        self.total += value
        self.top = value if self.n == 1 else max(self.top, value)

    def __len__(self) -> int:
        return self.n


@dataclass
class CpuSeries:
    """Cumulative (wall seconds, cpu seconds) samples of one process since the test started.

    Kept as running figures, not lists: a master keeps one per worker and gets a report from each
    every 3 s and Locust's own sample of each every second, which as lists grew by ~250 MB an hour
    at 1,000 workers (bench/bench_master_scale.py) for a mean and a max."""

    samples: int = 0  # how many were added
    last: tuple[float, float] | None = None  # the latest (wall, cpu)
    anchor: tuple[float, float] = (0.0, 0.0)  # where the interval being measured began
    busiest: float | None = None  # % of one core, the busiest interval so far
    locust_reported: Running = field(default_factory=Running)
    limit: CpuLimit | None = None  # the process's own CPU limit (own_limit())
    limit_sent: dict | None = None  # the JSON LIMIT was read from: the same again is not read again

    def add(self, wall_s: float, cpu_s: float) -> None:
        """A sample; intervals under 1 s are merged into the next (see max_percent)."""
        if self.last is not None and wall_s <= self.last[0]:
            return
        self.last, self.samples = (wall_s, cpu_s), self.samples + 1
        w0, c0 = self.anchor
        if wall_s - w0 >= 1.0:
            rate = 100 * (cpu_s - c0) / (wall_s - w0)
            self.busiest = rate if self.busiest is None else max(self.busiest, rate)
            self.anchor = (wall_s, cpu_s)

    def mean_percent(self) -> float | None:
        if self.last is None or self.last[0] <= 0:
            return None
        wall, cpu = self.last
        return round(100 * cpu / wall, 1)

    def max_percent(self) -> float | None:
        """Busiest interval between two reports (intervals under 1 s are merged into the next);
        never below the mean, which a short last interval could otherwise hide."""
        mean = self.mean_percent()
        if self.busiest is None:
            return mean
        return round(max(self.busiest, mean or 0.0), 1)

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
            samples=self.samples,
            locust_reported_mean_percent=round(reported.total / reported.n, 1) if reported.n else None,
            locust_reported_max_percent=round(reported.top, 1) if reported.n else None,
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


# --- event-loop lag -------------------------------------------------------------------------------

LAG_REPORT_KEY = "swarmbench_lag"
"""Key in the worker -> master stats report; namespaced like CPU_REPORT_KEY."""

LOCAL_REPORT_S = 3.0
"""A standalone runner's probe is read this often (a worker's at each of its stats reports)."""


class Probe:
    """One process's timer-lag probe."""

    def __init__(self) -> None:
        self.greenlet: gevent.Greenlet | None = None
        self.interval: list[float] = []
        self.run = bottleneck.Histogram()

    def start(self) -> None:
        """(Re)start at a test start: a new run, new figures."""
        self.stop()
        self.interval, self.run = [], bottleneck.Histogram()
        self.greenlet = gevent.spawn(self._tick)

    def stop(self) -> None:
        if self.greenlet is not None:
            self.greenlet.kill(block=False)
            self.greenlet = None

    def _tick(self) -> None:
        while True:
            due = time.perf_counter() + bottleneck.TICK_S
            gevent.sleep(bottleneck.TICK_S)
            late_ms = max(0.0, (time.perf_counter() - due) * 1000)
            self.interval.append(late_ms)
            self.run.add(late_ms)

    def report(self) -> dict[str, Any]:
        """The figures since the last report and for the whole run; starts the next interval."""
        out = {"interval": bottleneck.percentiles(self.interval), "run": self.run.summary()}
        self.interval = []
        return out


LAG_SERIES_ROWS = 128
"""Rows a worker's lag series keeps at most (run.json's generator_lag.per_worker[].series). One row
per stats report until then (6.4 minutes at Locust's 3 s); when a series reaches this many, each
two neighbouring rows become one (their later t_s, the worst of each figure) and every row covers
twice as many reports from then on (the worker's `reports_per_row`). A master keeps a series per
worker for the whole run: one row per report was 4 numbers per worker every 3 s, ~1.2 million rows
(~100 MB of run.json) an hour at 1,000 workers; now at most this many per worker, whatever the
run's length. The chart (analysis/health.py) draws a line per worker: 64-128 points of a long run
show its shape."""


class LagSeries:
    """One worker's lag series, in constant memory: rows of [t_s, p50_ms, p99_ms, max_ms], each
    covering `span` consecutive reports (the worst figure of those, t_s the last's), and the row
    being filled."""

    __slots__ = ("filling", "rows", "span", "taken")

    def __init__(self) -> None:
        self.rows: list[list[float | None]] = []
        self.span = 1  # reports per row
        self.filling: list[float | None] | None = None
        self.taken = 0  # reports in `filling`

    def add(self, row: list[float | None]) -> None:
        self.filling = row if self.filling is None else worst(self.filling, row)
        self.taken += 1
        if self.taken < self.span:
            return
        self.rows.append(self.filling)
        self.filling, self.taken = None, 0
        if len(self.rows) >= LAG_SERIES_ROWS:
            pairs = zip(self.rows[::2], self.rows[1::2], strict=False)
            self.rows = [worst(a, b) for a, b in pairs]
            self.span *= 2

    def series(self) -> list[list[float | None]]:
        return self.rows + ([self.filling] if self.filling is not None else [])


def worst(earlier: list[float | None], later: list[float | None]) -> list[float | None]:
    """Two lag rows as one: the later's t_s, the larger of each figure (one missing: the other's)."""
    return [
        later[0],
        *(
            a if b is None else b if a is None else max(a, b)
            for a, b in zip(earlier[1:], later[1:], strict=True)
        ),
    ]


class LagBook:
    """The master's record of each generator's lag reports, for run.json: per worker a LagSeries
    and the latest whole-run figures (constant memory per worker)."""

    def __init__(self) -> None:
        self.series: dict[str, LagSeries] = {}
        self.whole: dict[str, dict[str, Any]] = {}

    def record(self, worker: str, report: dict[str, Any], t_s: float) -> None:
        interval = report.get("interval") or {}
        if interval.get("n"):
            row = [round(t_s, 1), interval.get("p50_ms"), interval.get("p99_ms"), interval.get("max_ms")]
            series = self.series.get(worker)
            if series is None:
                series = self.series[worker] = LagSeries()
            series.add(row)
        whole = report.get("run")
        if whole and whole.get("n"):
            self.whole[worker] = whole

    def section(self, median_response_ms: float | None) -> GeneratorLag | None:
        """run.json's generator_lag; None when no generator reported (an older worker image)."""
        if not self.whole:
            return None
        per_worker = []
        for w in sorted(self.whole):
            figures = WorkerLag.from_json(self.whole[w], f"worker {w}'s lag report")
            series = self.series.get(w) or LagSeries()
            figures.id, figures.series = w, series.series()
            figures.reports_per_row = series.span if series.span > 1 else None
            per_worker.append(figures)
        return bottleneck.judge_lag(per_worker, median_response_ms)


def track_local(probe: Probe, book: LagBook, started: float) -> None:
    """A standalone runner is its own generator: read its probe every LOCAL_REPORT_S (a greenlet)."""
    while True:
        gevent.sleep(LOCAL_REPORT_S)
        book.record("local", probe.report(), time.monotonic() - started)
