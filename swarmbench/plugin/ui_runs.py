"""Web-UI runs are runs: each Start -> Stop writes results/<run-id>/ like a headless run.

`docker compose up` starts a master with the web UI; a test there starts at Start (Locust's
test_start) and ends at Stop, at the UI's run time, at the end of a shape, or when the last worker
is lost (Locust's test_stop, fired on the master after every worker reported it stopped, so their
final stats are in). Each such test gets a NEW folder (a generated run id, never the last one's);
"Reset stats" in the middle of a test closes the current folder and opens the next one, so no
folder mixes numbers from before and after a reset. run.json says `started_from: "ui"`.
"""

from __future__ import annotations

import logging
from typing import Any

from locust.env import Environment
from locust.runners import WorkerRunner

from swarmbench.core.status import STATS_RESET
from swarmbench.plugin import checks, experiment, lifecycle
from swarmbench.plugin.lifecycle import Run

logger = logging.getLogger("swarmbench")


def applies(environment: Environment) -> bool:
    """This process runs the web UI's tests: a master or standalone runner that is not headless."""
    opts = environment.parsed_options
    return bool(opts) and not opts.headless and not isinstance(environment.runner, WorkerRunner)


def begin_ui_run(environment: Environment) -> Run:
    """Start was pressed: a new run folder and its first sections (lifecycle.start follows)."""
    assert environment.runner is not None
    run = lifecycle.open_ui_run(environment, environment.runner)
    experiment.record(run, environment.parsed_options, environment)
    return run


def end_ui_run(run: Run, plugin: Any, reason: str | None = None) -> None:
    """The UI test ended: thresholds, then the folder (CSVs, report.html, run.json). At the test's
    end the workers' final reports are in (ending.Closer waits for their goodbyes first)."""
    run.health.closing = True
    if reason:  # the test goes on: reports still in flight belong to the next folder
        run.health.record(STATS_RESET, reason)
    env = run.env
    if plugin.checks:
        # Recorded in this run's folder; the process's own exit code is not this run's business.
        keep = env.process_exit_code
        plugin.outcomes = checks.finish(run, plugin.checks, env, plugin.latency.totals())
        env.process_exit_code = keep
        checks.print_outcomes(plugin.outcomes)
    if plugin.headers:
        run.manifest.request_headers = sorted(plugin.headers)
    plugin.write_run(run, None)
