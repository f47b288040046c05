"""The run's live status inside Locust: a headless run's clock, users, workers, counts, rate and exact
percentiles so far, written into the run folder every 2 s (core/live.py's record) for the host
runner's progress line.

Why a file: the host runner is the standard library alone and the run happens in containers (or
processes) of its own; the results folder is the one thing both already share (a bind mount). A
headless master has no web UI to ask, and its log holds Locust's rounded numbers only. The exact
percentiles are the master's merged windows so far (plugin/latency.py live_totals, what the web UI's
tab shows), so the progress line and the final summary come from the same histograms. The file is
removed once the run folder is complete: run.json and the run page never depend on it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

import gevent
from locust.runners import MasterRunner

from swarmbench.core import folder
from swarmbench.core.checks import EXACT, ROUNDED
from swarmbench.core.live import LiveStatus
from swarmbench.core.manifest import HEADLESS
from swarmbench.latency.histogram import percentile_columns
from swarmbench.plugin.lifecycle import Run

logger = logging.getLogger("swarmbench")

LIVE_INTERVAL_S = 2.0
"""How often the status is rewritten: Locust's own UI polls every 2 s and workers report every 3 s,
so a faster file would mostly repeat itself; the runner's line moves about as often as the UI's."""

PERCENTILES = (50.0, 95.0, 99.0)


def status(run: Run, latency: Any) -> LiveStatus:
    """RUN as of now; LATENCY: the plugin's exact-latency object (its totals so far), or one that
    records nothing (then Locust's rounded percentiles, said so)."""
    runner, total = run.runner, run.env.stats.total
    started = run.started_at.timestamp() if run.started_at else time.time()
    values = {p: None for p in PERCENTILES}
    source = ROUNDED
    if latency.enabled:
        hist = latency.live_totals().aggregated("service")
        if hist.get_total_count():
            columns = percentile_columns(hist, PERCENTILES)  # the files' figures, in ms
            values = {p: columns[f"p{p:g}_ms"] for p in PERCENTILES}
        source = EXACT
    elif total.num_requests:
        values = {p: float(total.get_response_time_percentile(p / 100)) for p in PERCENTILES}
    is_master = isinstance(runner, MasterRunner)
    return LiveStatus(
        run_id=run.manifest.run_id or "",
        written_at=round(time.time(), 3),
        state=str(runner.state),
        elapsed_s=round(max(0.0, time.time() - started), 1),
        run_time_s=run.run_time,
        users=int(runner.user_count),
        workers=runner.worker_count if is_master else None,
        workers_expected=run.health.expected if is_master else None,
        requests=total.num_requests,
        failures=total.num_failures,
        rps=round(float(total.current_rps), 1),
        p50_ms=values[50.0],
        p95_ms=values[95.0],
        p99_ms=values[99.0],
        latency=source,
    )


class Live:
    """Writes a headless run's live status while its test goes; nothing for web-UI runs (no runner
    reads them) or runs saved nowhere."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin  # the Swarmbench object: its run and its latency
        self.greenlet: gevent.Greenlet | None = None

    def on_test_start(self, **_kw: Any) -> None:
        run = self.plugin.run
        if self.greenlet is None and run is not None and run.run_dir and run.started_from == HEADLESS:
            self.greenlet = gevent.spawn(self._loop, run)

    def _loop(self, run: Run) -> None:
        """Every LIVE_INTERVAL_S until the run's end (stop()). A folder that cannot take the file
        costs the progress line, never the run: said once in the log, then no more tries."""
        while True:
            self.plugin.latency.count_in_steps()  # the bulk a batch at a time; write() the rest
            try:
                self.write(run)
            except OSError as e:
                logger.warning("live status not written (%s): no progress line for this run", e.strerror or e)
                return
            gevent.sleep(LIVE_INTERVAL_S)

    def write(self, run: Run) -> None:
        """One status into the run folder (atomically: the runner never reads half of one)."""
        assert run.run_dir is not None
        folder.write_json_atomic(run.run_dir / folder.LIVE_JSON, status(run, self.plugin.latency).to_json())

    def stop(self, run: Run) -> None:
        """The run folder is complete: no more status, and none left behind."""
        if self.greenlet is not None:
            self.greenlet.kill(block=True)
            self.greenlet = None
        if run.run_dir is not None:
            with contextlib.suppress(OSError):
                (run.run_dir / folder.LIVE_JSON).unlink(missing_ok=True)
