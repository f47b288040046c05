"""--arrival-rate: open-model load across all load generators (the grammar: core/arrival.py).

Who does what:

    every process   init: parse the schedule (a bad value stops the run with one line)
    generators      the users wait for iterations from a Pool (pool.py), which tells the
                    exact-latency recorder (latency.py) each request's intended-start latency;
                    each stats report carries the counts since the last one (deltas)
    master          from the end of spawning (the pool is ready) to the stop, tells each worker
                    every COORDINATE_INTERVAL_S its share of the rate (its users / all users of
                    the connected workers; equal shares until they report users), its phase, and
                    how far into the schedule the run is; a worker that joins or goes missing
                    changes the shares at the next tick. It sums the reports and, at quitting,
                    writes locust_arrival.csv and run.json's `open_model` (the latency
                    files are every run's: latency.py)
    standalone      both roles in one process, without messages

The clock of the schedule is the master's: a worker sets its second 0 from the elapsed time in the
first message, so every generator ramps together however late it joined.
"""

from __future__ import annotations

import csv
import logging
import time
from pathlib import Path
from typing import Any

import gevent
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner, Runner, WorkerRunner

from swarmbench.core import folder
from swarmbench.core.arrival import ArrivalSchedule, parse_arrival_rate
from swarmbench.core.arrival_counts import (
    PER_SECOND_COLUMNS,
    ArrivalCounts,
    generator_iterations,
    summarize,
)
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.durations import parse_duration
from swarmbench.core.sections import LatencyFigures, OpenLatency, OpenModel
from swarmbench.hdr import TIMELINE_COLUMNS, LatencyBook, percentile_ms
from swarmbench.plugin.errors import die
from swarmbench.plugin.pool import Pool, install_users

logger = logging.getLogger("swarmbench")

MESSAGE = "swarmbench_arrival"
"""Custom master -> worker message: {"spec", "share", "phase", "elapsed_s"}."""

REPORT_KEY = "swarmbench_arrival"
"""Key in the worker -> master stats report; namespaced so it never collides with Locust's."""

COORDINATE_INTERVAL_S = 0.5
"""How often the master re-sends each worker its share: a worker that joins gets its share, and
the others theirs re-split, within this long (each message is a few bytes)."""


class ArrivalLoad:
    """The open model in this process; inactive (no listener does anything) without the option."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin  # the Swarmbench object: its `run` is the folder to write to
        self.spec = ""
        self.max_wait_s = 0.0
        self.schedule: ArrivalSchedule | None = None
        self.runner: Runner | None = None
        self.pool: Pool | None = None  # load generators only
        self.counts = ArrivalCounts()  # master/standalone: the run's sum
        self.per_worker: dict[str, ArrivalCounts] = {}
        self.clock0 = 0.0  # time.monotonic() at the schedule's second 0 (master/standalone)
        self.clock0_epoch = 0.0  # the same moment, time.time(): the CSV's timestamps
        self.coordinator: gevent.Greenlet | None = None
        self.stopping = False

    @property
    def active(self) -> bool:
        return self.schedule is not None

    # --- init -----------------------------------------------------------------------------------

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        opts = environment.parsed_options
        spec = (getattr(opts, "arrival_rate", "") or "").strip() if opts is not None else ""
        if isinstance(runner, WorkerRunner):
            runner.register_message(MESSAGE, self.on_message)  # also to say when the flag is missing
        if not spec:
            return
        try:
            self.schedule = parse_arrival_rate(spec)
        except ValueError as e:
            die(f"--arrival-rate/LOCUST_ARRIVAL_RATE: {e}")
        try:
            self.max_wait_s = parse_duration(str(getattr(opts, "arrival_max_wait", "0") or "0"))
        except ValueError as e:
            die(f"--arrival-max-wait/LOCUST_ARRIVAL_MAX_WAIT: {e}")
        self.spec, self.runner = spec, runner
        if isinstance(runner, MasterRunner):
            return  # a master runs no users
        self.pool = Pool()
        self.pool.max_wait_s = self.max_wait_s
        install_users(environment.user_classes, self.pool)
        self.plugin.latency.intended = self.pool.intended  # its requests' intended-start latency

    # --- the test -------------------------------------------------------------------------------

    def on_test_start(self, **_kw: Any) -> None:
        self.stopping = False

    def on_spawning_complete(self, **_kw: Any) -> None:
        """The pool is there: the schedule starts (once per test; a re-spawn keeps it)."""
        if not self.active or isinstance(self.runner, WorkerRunner) or self.coordinator is not None:
            return
        self.clock0, self.clock0_epoch = time.monotonic(), time.time()
        self.coordinator = gevent.spawn(self._coordinate)
        logger.info("Open model: arrival rate %r (iterations/s) starts now", self.spec)

    def _coordinate(self) -> None:
        while True:
            elapsed = time.monotonic() - self.clock0
            if isinstance(self.runner, MasterRunner):
                for client_id, share, phase in shares(self.runner):
                    data = {"spec": self.spec, "max_wait_s": self.max_wait_s, "share": share}
                    data.update(phase=phase, elapsed_s=elapsed)
                    self.runner.send_message(MESSAGE, data, client_id=client_id)
            elif self.pool is not None and self.schedule is not None:
                self.pool.configure(self.schedule, 1.0, elapsed, 0.0)
            gevent.sleep(COORDINATE_INTERVAL_S)

    def on_message(self, msg: Any, **_kw: Any) -> None:
        """(worker) The master's share for this worker."""
        data = msg.data or {}
        if self.pool is None:
            if not self.stopping:  # once: its users already run closed-loop, so the run is not open
                logger.error(
                    "the master runs --arrival-rate %r but this worker has no --arrival-rate: set "
                    "LOCUST_ARRIVAL_RATE for the workers too",
                    data.get("spec"),
                )
                self.stopping = True
            return
        if self.stopping:
            return
        if data.get("spec") != self.spec:  # the master's value wins (a worker started with another)
            self.spec, self.schedule = data["spec"], parse_arrival_rate(data["spec"])
        assert self.schedule is not None
        self.pool.max_wait_s = float(data.get("max_wait_s", self.max_wait_s))
        self.pool.configure(
            self.schedule, float(data["share"]), float(data["elapsed_s"]), float(data["phase"])
        )

    def on_test_stopping(self, **_kw: Any) -> None:
        """Stop offering iterations before the users stop: users being stopped are no drops."""
        if not self.active:
            return
        self.stopping = True
        if self.coordinator is not None:
            self.coordinator.kill(block=False)
            self.coordinator = None
        if self.pool is not None:
            self.pool.stop()

    # --- reports --------------------------------------------------------------------------------

    def on_report_to_master(self, client_id: str, data: dict, **_kw: Any) -> None:
        if self.pool is not None:
            data[REPORT_KEY] = self.pool.take_report()

    def on_worker_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        report = data.get(REPORT_KEY)
        if self.active and isinstance(report, dict):
            self.add_report(client_id, report)

    def add_report(self, source: str, report: dict) -> None:
        counts = report.get("counts") or {}
        self.counts.add_report(counts)
        self.per_worker.setdefault(source, ArrivalCounts()).add_report({**counts, "per_second": {}})

    # --- the end --------------------------------------------------------------------------------

    def on_quitting(self, **_kw: Any) -> None:
        if not self.active or isinstance(self.runner, WorkerRunner):
            return
        self.on_test_stopping()  # a run that ends without a stop (Ctrl-C) stops offering too
        if self.pool is not None:
            self.add_report("local", self.pool.take_report())
        summary = self.summary()
        logger.info(
            "Open model: offered %.1f/s, achieved %.1f/s, %d dropped (%d pool exhaustion events)",
            summary.offered_rate,
            summary.achieved_rate,
            summary.dropped_iterations,
            summary.pool_exhaustion_events,
        )
        run = self.plugin.run
        if run is None:
            return
        run.manifest.open_model = summary
        if run.run_dir:
            self.write(run.run_dir)

    def summary(self) -> OpenModel:
        assert self.schedule is not None
        opts = self.runner.environment.parsed_options if self.runner else None
        out = summarize(self.spec, self.schedule, self.counts, getattr(opts, "num_users", None))
        out.max_wait_s = self.max_wait_s
        seconds = len(self.counts.rows())
        book, timeline = self.plugin.latency.totals(), self.plugin.latency.timeline  # after totals()
        if seconds >= 3:  # is the intended-start latency still growing? (core/verdict.judge_open)
            third = seconds // 3
            out.intended_p99_first_third_ms = timeline.percentile_between("intended", 0, third, 99)
            out.intended_p99_last_third_ms = timeline.percentile_between(
                "intended", seconds - third, seconds, 99
            )
        out.latency_ms = latency_summary(book)
        out.per_worker = {wid: generator_iterations(c) for wid, c in sorted(self.per_worker.items())}
        return out

    def write(self, run_dir: Path) -> None:
        self.plugin.latency.totals()  # this process's own samples filed (standalone)
        curves = self.plugin.latency.timeline.percentiles()
        with open(run_dir / folder.ARRIVAL_CSV, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(("timestamp", *PER_SECOND_COLUMNS, *TIMELINE_COLUMNS))
            for second, *counts in self.counts.rows():
                latency = curves.get(second, {})
                stamp = round(self.clock0_epoch + second, 3)
                writer.writerow([stamp, second, *counts, *(latency.get(c, "") for c in TIMELINE_COLUMNS)])


def shares(runner: MasterRunner) -> list[tuple[str, float, float]]:
    """(worker id, share of the rate, phase) for every connected worker: shares in proportion to
    the users each runs (they are the pool), equal while none has reported users yet."""
    live = sorted((c for c in runner.clients.values() if c.state != STATE_MISSING), key=lambda c: c.id)
    if not live:
        return []
    users = [c.user_count for c in live]
    total = sum(users)
    n = len(live)
    return [
        (c.id, (u / total) if total else 1 / n, i / n)
        for i, (c, u) in enumerate(zip(live, users, strict=True))
    ]


def latency_summary(book: LatencyBook) -> OpenLatency:
    """Aggregated p50/p99/max of both kinds, and the coordinated-omission gap at p99."""
    out = OpenLatency(name=AGGREGATED)
    for kind in ("service", "intended"):
        hist = book.aggregated(kind)
        if hist.get_total_count():
            figures = LatencyFigures(
                count=hist.get_total_count(),
                p50=percentile_ms(hist, 50),
                p99=percentile_ms(hist, 99),
                max=round(hist.get_max_value() / 1000, 3),
            )
            setattr(out, kind, figures)
    if out.service and out.intended and out.service.p99 is not None and out.intended.p99 is not None:
        out.p99_gap = round(out.intended.p99 - out.service.p99, 3)
    return out
