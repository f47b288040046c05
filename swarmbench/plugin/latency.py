"""Exact latency for every run, inside Locust: HDR histograms per request and 1 s window, shipped to
the master and merged, and shown in the web UI while the run goes (plugin/latency_ui.py).

Locust rounds every response time to 2 significant digits before it counts it (106 ms is filed as
110), so its percentiles are bucket edges. Here every request's time is counted again, exactly
(3 significant digits), in every run: headless or web UI, local or distributed, closed or open.

Who does what:

    generators    a request listener batches each request's service time (and, in the open model,
                  its time since the intended start: openmodel.py) into the window it ended in
                  (latency/recorder.Recorder); each stats report carries the encoded windows since the
                  last one (deltas) under REPORT_KEY
    master        at the test start tells every worker (and any that connects later) the start's
                  time (MESSAGE): all generators count windows from the same instant, run.json's
                  `started_at`; it files the reports' windows (latency/windows.py); at the end the
                  thresholds read the
                  run's totals, and the folder gets locust_latency_hdr.csv/.json,
                  locust_latency_windows.csv and run.json's `latency`
    standalone    both roles in one process, without messages
    --reset-stats at the end of the ramp-up each process drops what it holds, as Locust drops its
                  stats (on_spawning_complete): the run's files hold what locust_stats.csv counts
    reset         (web UI "Reset stats") the master sends the new start: every generator counts
                  from it at once, and re-files what it had not shipped yet; a report that was on
                  its way says which start its windows count from (its "t0"), and the master re-files
                  it too. Either way requests that ended before the reset land in window 0 of the
                  new folder (Locust counts them in the new stats as well)
    off           --no-exact-latency records nothing (its cost measured: bench/bench_latency.py);
                  the thresholds then read Locust's rounded percentiles, and say so"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import gevent
from locust.env import Environment
from locust.runners import MasterRunner, Runner, WorkerRunner

from swarmbench.core import folder
from swarmbench.core.exits import InputError
from swarmbench.core.manifest import ExactLatency
from swarmbench.latency import histogram
from swarmbench.latency.histogram import (
    FORMAT_VERSION,
    SIGNIFICANT_FIGURES,
    LatencyBook,
    Timeline,
)
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import WINDOW_S, WIRE_VERSION, Shipment, Windows, rebase, window_of
from swarmbench.plugin.latency_ui import install
from swarmbench.plugin.lifecycle import Run

# --- recording, shipping, merging -----------------------------------------------------------------

logger = logging.getLogger("swarmbench")

MESSAGE = "swarmbench_latency_t0"
"""Custom master -> worker message: {"t0": the test start, epoch seconds}."""

REPORT_KEY = "swarmbench_latency"
"""Key in the worker -> master stats report: {"v": the windows' WIRE_VERSION, "t0": the start its
windows count from, "keys" and "windows": a latency/windows.py Shipment, "timeline": {...}} (deltas)."""


def payload(
    t0: float, shipment: Shipment, timeline: dict[str, dict[str, str]], upto: float | None = None
) -> dict[str, Any]:
    """What a worker's stats report carries under REPORT_KEY: Recorder.take()'s SHIPMENT and
    TIMELINE, counted from T0, with the windows' wire version (the master refuses another one,
    saying so) and UPTO, the worker's clock (epoch seconds) when it took them: every request that
    ended before then is in this report or an earlier one (a master of an earlier version ignores
    it; a worker of one sends none, and its windows seal SEAL_AFTER behind, as before)."""
    return {
        "v": WIRE_VERSION,
        "t0": t0,
        "keys": shipment.keys,
        "windows": shipment.windows,
        "timeline": timeline,
        "upto": upto,
    }


SWEEP_S = 0.5
"""(master) seal_covered looks at most this often on a worker's report (each look is a pass over the
workers); the live thresholds' loop looks every slo.CHECK_INTERVAL_S as well, so a window is sealed
within 0.5 s of the report that completes it (0.25 s with --abort-on-fail)."""


COLLECT_S = 0.25
"""(standalone) How often the process that sends the requests files its own samples into the run's
windows, seals the windows behind it and counts the open ones (_collect_often), in a greenlet of its
own: small steps, the requests let go between each (gevent.sleep(0)), so no one step holds the
gevent loop for long. Filed only when someone asked (the live status every 2 s, the UI), 2 s of
samples at 1,000/s took ~14 ms at once (py-spy), and sealing a window in one go 2-5 ms: every
request due in those ms started that late, and the open model's intended-start p99 rose with it
(bench/bench_open_model.py --against). A window is sealed once, within COLLECT_S of its end; the
live thresholds (slo.py) see it then."""


Intended = Callable[[float | None, float], tuple[float, int] | None]
"""The open model's (openmodel.py Pool): a request's (ms since its intended start, schedule second),
or None."""


class Latency:
    """This process's exact-latency recording (generators) and collection (master, standalone)."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin  # the Swarmbench object: its `run` is the folder being recorded
        self.runner: Runner | None = None
        self.recorder = Recorder()  # generators: since the last report
        self.windows = Windows()  # master/standalone: the run's
        self.timeline = Timeline()  # master/standalone: the open model's per-schedule-second curves
        self.intended: Intended | None = None  # set by the open model (openmodel.py)
        self.t0 = time.time()
        self.t0_from_master = False
        self.started = False
        self._live: tuple[tuple[int, int], LatencyBook] | None = None
        self._series: tuple[tuple[int, int], list[dict[str, Any]]] | None = None
        self.shown: tuple[LatencyBook, list[dict[str, Any]]] | None = None  # a finished web-UI run's
        self.enabled = True  # --exact-latency (options.py); off: nothing recorded, thresholds rounded
        self._totals: LatencyBook | None = None
        self.refused: set[str] = set()  # workers whose windows are of another wire version (said once)
        self._journaled = False  # this run's sealed windows go to the run folder as they seal
        # (master) each worker's last report's UPTO (payload()) counted from self.t0: the windows
        # before the earliest of them are whole, and are sealed then (seal_covered).
        self.covered: dict[str, float] = {}
        self._swept = -math.inf  # when seal_covered last looked (time.monotonic())
        self._collector: gevent.Greenlet | None = None  # (standalone) _collect_often
        self._sealing = False  # seal_in_steps is under way (it yields)

    # --- set up and the test's clock -------------------------------------------------------------

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        self.runner = runner
        opts = environment.parsed_options
        self.enabled = switched_on(opts, isinstance(runner, WorkerRunner))
        if environment.web_ui is not None:
            install(environment.web_ui, self)  # the UI's Exact latency tab and page
        if not self.enabled:
            return
        if isinstance(runner, WorkerRunner):
            runner.register_message(MESSAGE, self.on_message)
        if not isinstance(runner, MasterRunner):  # a master sends no requests
            environment.events.request.add_listener(self.on_request)

    def on_test_start(self, **_kw: Any) -> None:
        """A new test: Locust clears its stats, so do we; windows count from its start."""
        self.recorder.clear()
        if isinstance(self.runner, WorkerRunner):
            if not self.t0_from_master:  # a master that never said (it always does, first)
                self.t0 = time.time()
            return
        self._restart()

    def on_reset_stats(self, **_kw: Any) -> None:
        """(web UI) Stats reset: the previous folder was written (write()); the next counts anew."""
        if not isinstance(self.runner, WorkerRunner) and self.started:
            self._restart()

    def on_spawning_complete(self, **_kw: Any) -> None:
        """--reset-stats: Locust resets every runner's stats when that runner has spawned its users
        (a worker: its own; the master: the merged ones, when every worker has said so). Each
        process drops what it holds at the same instant, in the same event: a worker what it has
        not reported yet, the master (or a standalone process) the run's windows. Reports carry
        Locust's stats and the windows together, so the two lose the same requests and the
        histograms still hold exactly what locust_stats.csv counts (run.json's latency.exact)."""
        if not self.enabled or self.runner is None or not self.runner.environment.reset_stats:
            return
        self.recorder.clear()
        if not isinstance(self.runner, WorkerRunner):
            self.reset()
            logger.info("exact latency: stats reset after the ramp-up (--reset-stats); windows start over")

    def _collect_often(self) -> None:
        """(standalone) Every COLLECT_S for the life of the process: its samples filed, the windows
        behind them sealed a row at a time (Windows.sealing), the open ones counted; the requests
        let go between each step (COLLECT_S)."""
        while True:
            gevent.sleep(COLLECT_S)
            upto = self._file_local()
            if upto is None:
                continue
            gevent.sleep(0)
            self.seal_in_steps(window_of(upto))
            self.count_in_steps()  # counted now, a little at a time, not by the next reader

    def _restart(self) -> None:
        if self.enabled:
            histogram.warm()  # before the users start: not at the first window sealed under load
            if self._collector is None and not isinstance(self.runner, MasterRunner):
                self._collector = gevent.spawn(self._collect_often)
        run = self.plugin.run
        t0 = run.started_at.timestamp() if run is not None and run.started_at else time.time()
        self.shown = None  # the UI shows this test now, not the last one's final numbers
        self._move_t0(t0)  # standalone: what this process has not filed yet counts from the new start
        self.reset()
        self.started = True
        if isinstance(self.runner, MasterRunner) and self.enabled:
            self.runner.send_message(MESSAGE, {"t0": self.t0})

    def on_worker_connect(self, client_id: str, **_kw: Any) -> None:
        """(master) A worker joining a running test counts windows from the same start."""
        if self.started and self.enabled and isinstance(self.runner, MasterRunner):
            self.runner.send_message(MESSAGE, {"t0": self.t0}, client_id=client_id)

    def on_message(self, msg: Any, **_kw: Any) -> None:
        """(worker) The master's test start, or (a reset) a new start while the test runs."""
        self._move_t0(float((msg.data or {})["t0"]))
        self.t0_from_master = True

    def _move_t0(self, t0: float) -> None:
        """Count windows from T0 on; the samples not shipped yet are re-filed from it too."""
        self.recorder.rebase(self.t0, t0)
        self.t0 = t0

    # --- the hot path ----------------------------------------------------------------------------

    def on_request(
        self,
        request_type: str,
        name: str,
        response_time: float | None,
        response_length: int = 0,
        response: Any = None,
        context: Any = None,
        exception: BaseException | None = None,
        start_time: float | None = None,
        url: str | None = None,
        **_kw: Any,
    ) -> None:
        """One request, filed under the window it ENDED in (start + response time: a task that
        reads the body in `catch_response` fires the event later). A request without a response
        time has no latency (Locust counts it in no percentile either). Every keyword Locust's
        request event passes is named, unused or not: an argument that lands in **_kw costs a dict
        on every request (0.5 vs 0.27 µs a call here)."""
        if response_time is None:
            return
        end = start_time + response_time / 1000 if start_time else time.time()
        if self.intended is None:  # the closed model: one call (the hot path of every such run)
            self.recorder.record_closed(
                end - self.t0, request_type, name, response_time, exception is not None
            )
            return
        intended = self.intended(start_time, response_time)
        window = window_of(end - self.t0)
        self.recorder.record(window, request_type, name, response_time, exception is not None, intended)

    # --- reports ---------------------------------------------------------------------------------

    def on_report_to_master(self, client_id: str, data: dict, **_kw: Any) -> None:
        if not self.enabled:
            return
        upto = time.time()  # before take(): a request that ends in between is in the next report
        data[REPORT_KEY] = payload(self.t0, *self.recorder.take(), upto=upto)

    def on_worker_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        report = data.get(REPORT_KEY)
        if not isinstance(report, dict) or not self.enabled:
            return
        if report.get("v") != WIRE_VERSION:  # a worker of another Swarmbench version: said once, left out
            if client_id not in self.refused:
                self.refused.add(client_id)
                logger.error(
                    "exact latency: worker %s ships its windows in format %s, this master reads format %s "
                    "(another Swarmbench version): its windows are left out, so the run's latency is not "
                    "exact; run the same image on the master and every worker",
                    client_id,
                    report.get("v", 1),
                    WIRE_VERSION,
                )
            return
        self._add(report, f"worker {client_id}'s report")
        upto, sent_t0 = report.get("upto"), report.get("t0")
        if isinstance(upto, int | float) and isinstance(sent_t0, int | float):
            self.covered[client_id] = float(upto) - self.t0
            self.seal_covered(SWEEP_S)

    def seal_covered(self, every: float = 0.0) -> None:
        """(master) Seal the windows every worker has reported past: the live thresholds and the
        metrics' last window then see a window one report after it ends (3 s; 1 s with
        --abort-on-fail, slo.LIVE_REPORT_S), not SEAL_AFTER windows and a report later. Every
        connected worker counts, a missing one too: until it has said how far it got (a worker of an
        earlier version never does), nothing is sealed early.
        EVERY: not again within that many seconds (a look is one pass over the workers: on each of
        1,000 workers' reports that would be a million a report interval); the live thresholds'
        loop looks every slo.CHECK_INTERVAL_S regardless."""
        now = time.monotonic()
        if now < self._swept + every:
            return
        self._swept = now
        runner = self.runner
        if not isinstance(runner, MasterRunner) or not runner.clients:
            return
        marks = [self.covered.get(client_id) for client_id in runner.clients]
        if all(m is not None for m in marks):
            self.seal_in_steps(window_of(min(m for m in marks if m is not None)))

    def seal_in_steps(self, before: int) -> None:
        """The open windows before BEFORE sealed a row at a time (Windows.sealing), the other
        greenlets let go between rows: in one go, a master at 1,000 workers x 10 names held its loop
        20 ms or more several times a run sealing (gevent's monitor at 20 ms, bench_master_scale.py),
        and a standalone runner 2-5 ms a second, every request due then starting late. A call made
        while one is under way returns at once: that one seals them (the live thresholds' loop and
        the reports both ask)."""
        if self._sealing:
            return
        self._sealing = True
        try:
            for _ in self.windows.sealing_before(before):
                gevent.sleep(0)
        finally:
            self._sealing = False

    def _add(self, report: dict, where: str) -> None:
        shipment = Shipment(report.get("keys"), report.get("windows"))
        sent_t0 = report.get("t0")
        try:
            if isinstance(sent_t0, int | float) and sent_t0 != self.t0:  # sent before a reset reached it
                shipment = rebase(shipment, float(sent_t0), self.t0)
            if not self._journaled:
                self._journal()
            self.windows.merge(shipment, where)
        except InputError as e:  # a generator of another version: its requests are not exact
            logger.error("exact latency: %s (its windows are left out)", e)
            return
        self.timeline.merge(report.get("timeline") or {})
        self._totals = None

    def _journal(self) -> None:
        """Sealed windows appended to the run folder as they seal (Windows.journal_to), once the
        folder is there: a master that dies keeps them (core/salvage.py). Tried once per run; a
        folder that cannot take it costs only that."""
        run = self.plugin.run
        if run is None or not run.run_dir or not run.run_dir.is_dir():
            return  # no folder yet: tried again with the next report
        self._journaled = True
        try:
            self.windows.journal_to(run.run_dir / folder.LATENCY_WINDOWS_SEALED_CSV)
        except OSError as e:
            logger.warning("exact latency: sealed windows not kept as they seal (%s)", e.strerror or e)

    def collect_local(self) -> None:
        """(standalone) This process's own samples into the run's windows, the whole ones sealed."""
        upto = self._file_local()
        if upto is not None and self.windows:  # every request that ended before UPTO is filed
            self.windows.seal_before(window_of(upto))

    def count_in_steps(self) -> None:
        """What came since the last count counted a batch at a time (Windows.counting), the other
        greenlets let go between (the requests, a scrape, the worker reports): what a reader asks
        next (totals(), with the loop held) finds little left to count. The master's metrics and
        live status call it before they read."""
        self._file_local()
        for _ in self.windows.counting():
            gevent.sleep(0)

    def _file_local(self) -> float | None:
        """(standalone) This process's own samples into the run's windows; the time (s from t0)
        before which every request that ended is filed now (None: not a standalone process)."""
        if self.runner is None or isinstance(self.runner, MasterRunner | WorkerRunner):
            return None
        upto = time.time() - self.t0
        shipment, timeline = self.recorder.take()
        if shipment.windows or timeline:
            self._add(payload(self.t0, shipment, timeline), "this process")
        return upto

    # --- the end ---------------------------------------------------------------------------------

    def totals(self) -> LatencyBook:
        """The run per (type, name, kind), every window added up (what the thresholds read): the
        run's end, so every window is sealed."""
        self.collect_local()
        if self._totals is None:
            self.windows.seal_all()
            self._totals = self.windows.totals()
        return self._totals

    def live_totals(self) -> LatencyBook:
        """The run so far (the web UI's tab): nothing sealed by asking; recomputed only when a
        report came since the last time (a UI polls every 2 s, workers report every 3 s)."""
        self._file_local()  # sealing is _collect_often's, a row at a time
        if self._live is None or self._live[0] != (id(self.windows), self.windows.version):
            self._live = ((id(self.windows), self.windows.version), self.windows.totals())
        return self._live[1]

    def live_series(self) -> list[dict[str, Any]]:
        """Per window so far, every request's service time together (the web UI's chart), cached as
        live_totals() is."""
        self._file_local()
        key = (id(self.windows), self.windows.version)
        if self._series is None or self._series[0] != key:
            self._series = (key, self.windows.series("service"))
        return self._series[1]

    def ui_totals(self) -> LatencyBook:
        """The web UI's table: the run so far; after a web-UI run ended, until the next test starts,
        that run's final numbers (its folder's), not the empty windows of the next."""
        return self.shown[0] if self.shown is not None and not self.windows else self.live_totals()

    def ui_series(self) -> list[dict[str, Any]]:
        """The web UI's chart, per window, as ui_totals() chooses (asked only by the chart: a table
        poll does not pay for it)."""
        return self.shown[1] if self.shown is not None and not self.windows else self.live_series()

    def write(self, run: Run) -> None:
        """The run's latency files and run.json's `latency` (before run.json is written), then start
        over (a web-UI run's next folder). Off: neither (the folder is like one from before them)."""
        if not self.enabled:
            return
        book = self.totals()
        hists = book.aggregated("service")
        total = run.env.stats.total
        locust_count = total.num_requests - total.num_none_requests
        run.manifest.latency = ExactLatency(
            window_s=WINDOW_S,
            format_version=FORMAT_VERSION,
            significant_figures=SIGNIFICANT_FIGURES,
            files=list(folder.LATENCY_FILES) if run.run_dir else [],
            exact=hists.get_total_count() == locust_count,
            requests=hists.get_total_count(),
        )
        if run.run_dir:
            book.write_csv(run.run_dir / folder.LATENCY_HDR_CSV)
            folder.write_json_atomic(run.run_dir / folder.LATENCY_HDR_JSON, book.to_json())
            self.windows.write_csv(run.run_dir / folder.LATENCY_WINDOWS_CSV)
            with contextlib.suppress(OSError):  # the whole file is written: the journal is not needed
                (run.run_dir / folder.LATENCY_WINDOWS_SEALED_CSV).unlink(missing_ok=True)
        self.shown = (book, self.windows.series("service"))
        self.reset()

    def reset(self) -> None:
        """A new set of windows; the live tab's cache goes with the old one (it is keyed by the
        Windows object's id, which a new object may reuse)."""
        self.windows, self.timeline, self._totals = Windows(), Timeline(), None
        self._journaled = False
        self.covered = {}  # reports counted from the old start say nothing of the new windows
        self._live = self._series = None


def switched_on(opts: Any, is_worker: bool) -> bool:
    """--exact-latency (default on); the open model's intended-start latency needs it, so
    --arrival-rate keeps it on (said once, by the master or the standalone process)."""
    wanted = getattr(opts, "exact_latency", True) is not False
    if getattr(opts, "arrival_rate", "") and not wanted:
        if not is_worker:
            logger.warning("--no-exact-latency is ignored with --arrival-rate (its latency needs it)")
        return True
    if not wanted and not is_worker:
        logger.info(
            "exact latency recording is off (--no-exact-latency): thresholds use Locust's rounded percentiles"
        )
    return wanted
