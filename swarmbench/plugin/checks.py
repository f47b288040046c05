"""Thresholds (SLOs) that decide a headless run: `--check 'p95<300'`, LOCUST_CHECKS, `checks = ...`.

Locust alone can only fail a run on any error (--exit-code-on-error). Here each threshold is an
expression `[NAME:]METRIC OP VALUE` (grammar: swarmbench.core.checks) evaluated on the master (or a
standalone runner) once the test is over, on the same cumulative numbers Locust writes to
locust_stats.csv:

    p50 / p90 / p95 / p99 / p99.9 / max
                     exact: from the run's HDR histograms (plugin/latency.py), 3 significant
                     digits; "rounded": Locust's StatsEntry percentiles (2 digits: 106 ms reads
                     110) where the histograms do not hold every request of that name
    fail_ratio       failures / requests of that name
    rps              StatsEntry.total_rps: requests of that name / seconds from the test's start to
                     its last request, i.e. the "Requests/s" column of locust_stats.csv

A broken threshold makes the process exit with exits.THRESHOLDS_BROKEN (3). Every threshold is printed
as one line, recorded in run.json ("checks", "checks_passed") and written to junit.xml in the run
folder (one testcase each) for CI test reporters.
"""

from __future__ import annotations

import logging
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locust.env import Environment
from locust.stats import RequestStats, StatsEntry

from swarmbench.core import exits
from swarmbench.core.atomic import write_atomic
from swarmbench.core.checks import (
    AGGREGATED,
    EXACT,
    PERCENTILE_METRICS,
    ROUNDED,
    Check,
    CheckSyntaxError,
    Outcome,
    parse_checks,
)
from swarmbench.core.folder import JUNIT_XML
from swarmbench.core.junit import Case, junit_xml
from swarmbench.latency.histogram import LatencyBook, exact_value
from swarmbench.plugin.lifecycle import Run
from swarmbench.plugin.options import die

logger = logging.getLogger("swarmbench")

# --- validation ---------------------------------------------------------------------------------


def validate(opts: Any) -> list[Check]:
    """The thresholds of this run; a malformed one stops it before it starts (and before a run
    folder exists: the plugin validates everything before it creates one)."""
    try:
        checks = parse_checks(opts.check)
    except CheckSyntaxError as e:
        die(f"--check/LOCUST_CHECKS: {e}")
    if checks and not opts.headless:
        logger.warning("Thresholds (--check/LOCUST_CHECKS) are evaluated in headless runs only")
    return checks


# --- evaluation ---------------------------------------------------------------------------------


def entry_for(stats: RequestStats, name: str) -> StatsEntry | None:
    """The stats row of NAME; rows of one name under several methods are combined (Locust keys
    rows by (name, method), a threshold by name). None when no request had that name."""
    if name == AGGREGATED:
        return stats.total
    rows = [e for (n, _method), e in stats.entries.items() if n == name]
    if len(rows) <= 1:
        return rows[0] if rows else None
    combined = StatsEntry(stats, name, "", use_response_times_cache=False)
    for row in rows:
        combined.extend(row)
    return combined


def measure(entry: StatsEntry, metric: str) -> float:
    """METRIC from Locust's cumulative numbers (latencies: its rounded percentiles)."""
    if metric in PERCENTILE_METRICS:
        return float(entry.get_response_time_percentile(PERCENTILE_METRICS[metric] / 100))
    if metric == "max":
        return float(entry.max_response_time)
    if metric == "fail_ratio":
        return round(entry.fail_ratio, 6)
    return round(float(entry.total_rps), 3)  # rps


def evaluate(checks: list[Check], stats: RequestStats, book: LatencyBook | None = None) -> list[Outcome]:
    """Each threshold against the cumulative stats (latencies from BOOK where it holds every
    request of the name). No data is a failure, never a pass: a p95 of an endpoint that was never
    called, or of a test that sent nothing, proves nothing."""
    outcomes = []
    for check in checks:
        entry = entry_for(stats, check.name)
        if entry is None:
            reason = f"no request named {check.name!r} in this run (names are locust_stats.csv's Name column)"
            outcomes.append(Outcome(check, None, False, reason))
        elif entry.num_requests == 0:
            outcomes.append(Outcome(check, None, False, f"no requests recorded for {check.name!r}"))
        elif check.unit == "ms":
            timed = entry.num_requests - entry.num_none_requests
            exact = exact_value(book, check.name, check.metric, timed) if book is not None else None
            value, source = (exact, EXACT) if exact is not None else (measure(entry, check.metric), ROUNDED)
            outcomes.append(Outcome(check, value, check.passes(value), source=source))
        else:
            value = measure(entry, check.metric)
            outcomes.append(Outcome(check, value, check.passes(value)))
    return outcomes


def finish(
    run: Run,
    checks: list[Check],
    environment: Environment,
    book: LatencyBook | None = None,
    live: Outcome | None = None,
) -> list[Outcome]:
    """Evaluate CHECKS on the final stats (and BOOK, the run's exact latency), record them in the run
    (run.json, junit.xml) and set the exit code; LIVE, the live threshold that stopped the run
    (plugin/slo.py), first. Called at `quitting`: the stats are final there (the plugin ends a
    distributed run only after the workers' last reports) and Locust reads the exit code right
    after."""
    outcomes = ([live] if live is not None else []) + evaluate(checks, environment.stats, book)
    passed = all(o.passed for o in outcomes)
    run.manifest.checks = [o.record() for o in outcomes]
    run.manifest.checks_passed = passed
    if run.run_dir:
        started, ended = run.started_at, run.ended_at or datetime.now(UTC)
        seconds = (ended - started).total_seconds() if started else 0.0
        timestamp = started.isoformat(timespec="seconds") if started else ""
        write_junit(run.run_dir / JUNIT_XML, outcomes, seconds, timestamp)
    if not passed and not environment.process_exit_code:
        environment.process_exit_code = exits.THRESHOLDS_BROKEN
    return outcomes


def print_outcomes(outcomes: list[Outcome], code: int = exits.THRESHOLDS_BROKEN) -> None:
    """The verdict last, after Locust's final tables, where a CI log reader looks first. CODE: the
    process's exit code (a degraded, failed or interrupted run outranks thresholds: core/exits.py)."""
    for outcome in outcomes:
        sys.stdout.write(f"swarmbench: check {outcome.line()}\n")
    if outcomes and not all(o.passed for o in outcomes):
        broken = sum(not o.passed for o in outcomes)
        sys.stdout.write(f"swarmbench: {broken} of {len(outcomes)} thresholds broken (exit code {code})\n")
    sys.stdout.flush()


# --- junit.xml ----------------------------------------------------------------------------------


def write_junit(path: Path, outcomes: list[Outcome], seconds: float, timestamp: str) -> None:
    """One testcase per threshold, a <failure> when broken (core/junit.py), written whole."""
    cases = [
        Case(
            "swarmbench.checks",
            o.check.expr,
            o.line(),
            failure=None if o.passed else o.failure_message(),
            kind="ThresholdBroken",
            detail=None if o.passed else f"{o.check.expr}: {o.failure_message()}",
        )
        for o in outcomes
    ]
    xml = junit_xml("swarmbench.checks", cases, seconds, timestamp, hostname=socket.gethostname())
    write_atomic(path, xml)
