"""run.json's sections: one small typed record per object, defined once (schema.py reads and writes them).

Each class is the object under one run.json key (`RunManifest` in manifest.py lists the keys). The
plugin fills them, the runner and the analysis read them; no module outside core spells one of
these keys as a string. A field is None where the run did not measure it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swarmbench.core.schema import Record, count

# --- load generators and the machine ---------------------------------------------------------------


@dataclass
class CpuLimit(Record):
    """The CPUs a process may use, read from its own cgroup (core/cgroup.py): quota or cpuset, else
    the machine's cores; `source` says which."""

    cpus: float | None = None
    source: str | None = None


@dataclass
class WorkerCpu(Record):
    """One load generator's CPU, measured by the process itself (plugin/cpu.py), % of one core."""

    id: str | None = None
    mean_percent: float | None = None  # CPU seconds / wall seconds over the run
    max_percent: float | None = None  # the busiest report interval (>= 1 s)
    samples: int | None = count()
    locust_reported_mean_percent: float | None = None  # Locust's own 10 s samples, for comparison
    locust_reported_max_percent: float | None = None
    cpu_limit: CpuLimit | None = None
    mean_percent_of_limit: float | None = None  # of min(1 core, cpu_limit): what it may use
    max_percent_of_limit: float | None = None


@dataclass
class GeneratorCpu(Record):
    """`worker_cpu`: every load generator's CPU; mean of their means, max over all."""

    mean_percent: float | None = None
    max_percent: float | None = None
    max_mean_percent_of_limit: float | None = None  # the busiest worker's mean, of its own limit
    per_worker: list[WorkerCpu] = field(default_factory=list)

    @property
    def busiest_mean_percent(self) -> float | None:
        """The busiest generator's mean, % of one core."""
        means = [w.mean_percent for w in self.per_worker if w.mean_percent is not None]
        return max(means) if means else None

    @property
    def busiest_of_limit(self) -> WorkerCpu | None:
        """The generator with the highest mean share of its own limit (what the verdict judges)."""
        known = [w for w in self.per_worker if w.mean_percent_of_limit is not None]
        return max(known, key=lambda w: w.mean_percent_of_limit or 0.0, default=None)


@dataclass
class HostCpu(Record):
    """`host_cpu`: the whole machine's CPU while the test ran (all cores, %, 1 s samples)."""

    cpus: int | None = None
    mean_percent: float | None = None
    max_percent: float | None = None
    samples: int | None = count()


@dataclass
class TargetCounters(Record):
    """`target`: what the bundled target served during the run (core/target.py scrapes /metrics)."""

    store: str | None = None  # its ALBUMS_STORE strategy
    cpus: float | None = None  # its Go scheduler's CPUs (GOMAXPROCS)
    cpu_limit: float | None = None  # its own cgroup's limit, from its /metrics
    cpu_limit_source: str | None = None
    cpu_seconds: float | None = None
    cpu_share_of_limit: float | None = None  # cpu_seconds / (duration x the smaller of cpus, cpu_limit)
    requests: dict[str, int] = field(default_factory=dict)  # by route, every status code
    album_requests: int | None = count()  # the routes the scenario drives (core/target.ALBUM_ROUTES)


@dataclass
class Totals(Record):
    """`totals`: Locust's final counts, as the master received them (= locust_stats.csv's Aggregated)."""

    requests: int | None = count()
    failures: int | None = count()


# --- what the experiment varied --------------------------------------------------------------------


@dataclass
class SweepMembership(Record):
    """`sweep`: which sweep, mode, repeat and point a run belongs to (python -m swarmbench sweep)."""

    id: str | None = None
    mode: str | None = None  # core/experiment.SWEEP_MODES
    repeat: int | None = None
    point: str | None = None


@dataclass
class LoadShape(Record):
    """`load_shape`: a step load's users START, START+STEP, ... up to MAX, SECONDS per step."""

    kind: str | None = None  # "step"
    start: int | None = None
    step: int | None = None
    seconds: float | None = None
    max: int | None = None


@dataclass
class ClassPacing(Record):
    """`pacing[user class]`: the waits the class's users actually took (plugin/pacing.py)."""

    users: int | None = count()  # the peak number of its users
    waits: int | None = count()
    mean_wait_s: float | None = None  # None: its users never called the class's wait_time
    wait_time_option_used: bool | None = None  # False: the class paced itself (its own wait_time)
    open_loop: bool | None = None  # constant_pacing/constant_throughput: a rate, not a think time


# --- outcomes --------------------------------------------------------------------------------------


@dataclass
class CheckOutcome(Record):
    """`checks[]`: one threshold (core/checks.py grammar) and what it measured."""

    expr: str | None = None
    name: str | None = None  # the request name it applies to (Aggregated: all)
    metric: str | None = None
    op: str | None = None
    limit: float | None = None
    measured: float | None = None  # None: nothing to measure (no such request name)
    passed: bool | None = None
    exact: bool | None = None  # latency metrics: True from the HDR histograms, False Locust's rounded

    OMIT_WHEN_NONE = frozenset({"exact"})  # not a latency metric


@dataclass
class PacingClassInputs(Record):
    """One user class's pacing as the verdict used it (core/pacing.py): `cap` is the tasks/s its
    users can start at most (None: no cap known)."""

    name: str | None = None
    users: int | None = None
    waits: int | None = None
    mean_wait_s: float | None = None
    own_wait_time: bool | None = None
    open_loop: bool | None = None
    cap: float | None = None


@dataclass
class VerdictInputs(Record):
    """The numbers a verdict rests on (core/verdict.py), recorded next to it: every number the
    reason quotes is one of these."""

    rps: float | None = None  # Locust's Requests/s (the plugin passes its own figure)
    run_rps: float | None = None  # totals.requests / duration_s
    avg_response_ms: float | None = None
    requests: int | None = None
    failures: int | None = None
    worker_cpu_max_mean_percent: float | None = None
    worker_cpu_max_percent_of_limit: float | None = None
    worker_cpu_limit: float | None = None
    generator_lag_p99_ms: float | None = None
    generator_lag_median_ms: float | None = None
    host_cpu_mean_percent: float | None = None
    host_cpus: float | None = None
    target_cpu_util: float | None = None
    target_cpus: float | None = None
    users: int | None = None
    wait_time: str | None = None
    pacing_measured: bool | None = None
    pacing: list[PacingClassInputs] = field(default_factory=list)
    requests_per_task: float | None = None
    offered_rate_cap: float | None = None
    think_time_s: float | None = None


@dataclass
class Bottleneck(Record):
    """`bottleneck`: what limited the run (core/verdict.VERDICTS), why, and from which numbers."""

    verdict: str | None = None
    reason: str | None = None
    inputs: VerdictInputs | None = None


# --- exact latency ---------------------------------------------------------------------------------


@dataclass
class ExactLatency(Record):
    """`latency`: the run recorded HDR histograms of every request (plugin/latency.py), so its
    percentiles are exact to 3 significant digits, not Locust's 2-digit buckets."""

    window_s: int | None = None  # seconds per window of locust_latency_windows.csv, from the test start
    format_version: int | None = None  # of the encoded histograms (swarmbench/hdr.py FORMAT_VERSION)
    significant_figures: int | None = None
    files: list[str] = field(default_factory=list)  # the latency files this folder holds
    exact: bool | None = (
        None  # the histograms hold every request Locust counted (False: a generator's were lost)
    )
    requests: int | None = count()  # requests in the histograms (Aggregated, service time)


# --- the open model --------------------------------------------------------------------------------


@dataclass
class LatencyFigures(Record):
    """Exact latency of one kind (service, or from the intended start), all requests, ms."""

    count: int | None = count()
    p50: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass
class OpenLatency(Record):
    """`open_model.latency_ms`: both kinds and the coordinated-omission gap at p99."""

    service: LatencyFigures | None = None
    intended: LatencyFigures | None = None
    p99_gap: float | None = None  # intended p99 - service p99
    name: str | None = None  # the request name the figures cover (Aggregated)

    OMIT_WHEN_NONE = frozenset({"service", "intended", "p99_gap"})


@dataclass
class GeneratorIterations(Record):
    """`open_model.per_worker[id]`: one generator's share of the schedule."""

    scheduled: int | None = count()
    started: int | None = count()
    dropped: int | None = count()
    span: list[float] = field(default_factory=list)  # [first, last] second of the schedule covered


@dataclass
class OpenCapacity(Record):
    """`open_model.capacity`: was the offered rate held, and if not, what limited it (verdict.py)."""

    capacity_reached: bool | None = None
    by: str | None = None  # generator CPU, target CPU or neither; None while held
    reason: str | None = None


@dataclass
class OpenModel(Record):
    """`open_model` (--arrival-rate runs): what was offered, what started, what was dropped. Rates
    are per second over the window the generators covered (core/arrival.summarize)."""

    arrival_rate: str | None = None  # the spec as given
    schedule: str | None = None  # the spec normalised
    pool_users: int | None = None
    window_s: float | None = None
    window_start_s: float | None = None
    offered_rate: float | None = None
    scheduled_rate: float | None = None
    achieved_rate: float | None = None
    iterations_scheduled: int | None = count()
    iterations_started: int | None = count()
    dropped_iterations: int | None = count()
    unscheduled_iterations: int | None = count()  # offered, but by no generator (one was lost)
    dropped_ratio: float | None = None
    max_dropped_per_s: int | None = count()
    pool_exhaustion_events: int | None = count()
    queued_iterations: int | None = count()  # waited for a free user (--arrival-max-wait)
    max_wait_s: float | None = None
    # is the intended-start latency still growing? p99 of the first and last third of the seconds
    intended_p99_first_third_ms: float | None = None
    intended_p99_last_third_ms: float | None = None
    latency_ms: OpenLatency | None = None
    per_worker: dict[str, GeneratorIterations] = field(default_factory=dict)
    capacity: OpenCapacity | None = None

    OMIT_WHEN_NONE = frozenset(
        {"max_wait_s", "intended_p99_first_third_ms", "intended_p99_last_third_ms", "capacity"}
    )


# --- what happened while it ran --------------------------------------------------------------------


@dataclass
class Event(Record):
    """`events[]`: one thing that happened to the run (plugin/health.py), in order."""

    at: str | None = None  # UTC ISO-8601
    t_s: float | None = None  # seconds since the test started
    # status.EVENT_KINDS, not enforced when reading: a newer harness may add kinds an older reader
    # should still show.
    kind: str | None = None
    detail: str | None = None


@dataclass
class WorkersPoint(Record):
    """`workers_timeline[]`: the connected load generators from T_S seconds on (the first sample,
    then each change)."""

    t_s: float | None = None
    connected: int | None = count()


@dataclass
class Node(Record):
    """A Swarm node that ran part of the stack (runner/swarm.py): id, hostname, role."""

    id: str | None = None
    hostname: str | None = None
    role: str | None = None
    replicas: int | None = count()  # workers only: how many worker replicas ran there

    OMIT_WHEN_NONE = frozenset({"hostname", "role", "replicas"})


@dataclass
class Nodes(Record):
    """`nodes` (swarm runs): where the master, the target and each worker replica ran."""

    master: Node | None = None
    target: Node | None = None
    workers: list[Node] = field(default_factory=list)

    OMIT_WHEN_NONE = frozenset({"master", "target"})


# --- the generator's self-check --------------------------------------------------------------------


@dataclass
class WorkerLag(Record):
    """One load generator's event-loop lag (plugin/looplag.py): whole-run figures and, per stats
    report, [t_s, p50_ms, p99_ms, max_ms] (GeneratorLag.series_columns)."""

    id: str | None = None
    n: int | None = count()
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    series: list[list[float | None]] = field(default_factory=list)


@dataclass
class GeneratorLag(Record):
    """`generator_lag`: did the load generators keep up? Each one's event-loop lag, and the verdict
    against the bound (core/lag.py): a p99 above it marks the run `flag` (lag.INFLATED)."""

    tick_ms: float | None = None  # the probe timer's period
    series_columns: list[str] = field(default_factory=list)
    bound_ms: float | None = None
    floor_ms: float | None = None
    share_of_median: float | None = None
    median_response_ms: float | None = None
    worst_worker: str | None = None
    worst_p99_ms: float | None = None
    inflated: bool | None = None
    flag: str | None = None
    per_worker: list[WorkerLag] = field(default_factory=list)
