"""Thresholds (SLOs) that decide a headless run: `--check 'p95<300'`, LOCUST_CHECKS, `checks = ...`.

Locust alone can only fail a run on any error (--exit-code-on-error). Here each threshold is an
expression `[NAME:]METRIC OP VALUE` (grammar in checks_syntax.py) evaluated on the master (or a
standalone runner) once the test is over, on the same cumulative numbers Locust writes to
locust_stats.csv:

    p50 / p95 / p99  StatsEntry.get_response_time_percentile (ms, Locust's rounding)
    fail_ratio       failures / requests of that name
    rps              StatsEntry.total_rps: requests of that name / seconds from the test's start to
                     its last request, i.e. the "Requests/s" column of locust_stats.csv

A broken threshold makes the process exit with THRESHOLDS_BROKEN_EXIT. Every threshold is printed
as one line, recorded in run.json ("checks", "checks_passed") and written to junit.xml in the run
folder (one testcase each) for CI test reporters.
"""

from __future__ import annotations

import logging
import socket
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from locust import events
from locust.argument_parser import LocustArgumentParser
from locust.env import Environment
from locust.runners import Runner, WorkerRunner
from locust.stats import RequestStats, StatsEntry

from .checks_syntax import AGGREGATED, Check, CheckSyntaxError, parse_checks
from .errors import die
from .lifecycle import current_run

logger = logging.getLogger("swarmbench")

THRESHOLDS_BROKEN_EXIT = 3
"""Exit code when a threshold is broken. Distinct from Locust's 1 (requests failed, with
--exit-code-on-error's default) and 2 (bad configuration), so CI can tell "the system under test
is too slow" from "the run itself went wrong". It replaces Locust's 1 when both apply."""

JUNIT_XML = "junit.xml"
"""File name in the run folder; CI test reporters pick it up like any test result."""

_PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}

_checks: list[Check] = []
_outcomes: list[Outcome] = []


@dataclass(frozen=True)
class Outcome:
    """One evaluated threshold. `measured` is None when there was nothing to measure."""

    check: Check
    measured: float | None
    passed: bool
    reason: str = ""  # why there is no measurement

    def as_json(self) -> dict:
        c = self.check
        return {
            "expr": c.expr,
            "name": c.name,
            "metric": c.metric,
            "op": c.op,
            "limit": c.limit,
            "measured": self.measured,
            "passed": self.passed,
        }

    def line(self) -> str:
        """`PASS p95<300 (Aggregated): measured 12 ms` -- what the console and junit show."""
        c = self.check
        verdict = "PASS" if self.passed else "FAIL"
        head = f"{verdict} {c.metric}{c.op}{c.limit:g} ({c.name})"
        if self.measured is None:
            return f"{head}: {self.reason}"
        return f"{head}: measured {_show(self.measured, c.unit)}"

    def failure_message(self) -> str:
        """`measured 412 ms, limit < 300 ms`, or why nothing was measured."""
        c = self.check
        if self.measured is None:
            return self.reason
        return f"measured {_show(self.measured, c.unit)}, limit {c.op} {_show(c.limit, c.unit)}"


def _show(value: float, unit: str) -> str:
    if unit == "req/s":
        return f"{value:.1f} req/s"
    if unit == "ms":
        return f"{value:g} ms"
    return f"{value:g} ({value * 100:.2f} %)"  # fail_ratio: both spellings, 0.01 is easy to misread


# --- options and validation ---------------------------------------------------------------------


def add_options(parser: LocustArgumentParser) -> None:
    parser.add_argument(
        # '--checks' too, so locust.conf can say `checks = ...` like the LOCUST_CHECKS variable.
        "--check",
        "--checks",
        dest="check",
        action="append",
        env_var="LOCUST_CHECKS",
        default=None,
        include_in_web_ui=False,
        metavar="EXPR",
        help=(
            "Threshold that fails a headless run (exit code 3) when broken: [NAME:]METRIC OP VALUE, "
            "METRIC one of p50 p95 p99 (ms) fail_ratio rps, OP one of < <= > >=, NAME a request "
            "name (default Aggregated). Repeatable; several per value separated by ';', e.g. "
            "LOCUST_CHECKS='p95<300;GET /albums/{id}:p99<500;fail_ratio<0.01;rps>=200'."
        ),
    )


def on_init(environment: Environment, runner: Runner, **_kw) -> None:
    """Reject a malformed threshold before the test starts (and before a run folder exists:
    the package registers this listener ahead of the run folder's)."""
    global _checks
    opts = environment.parsed_options
    if opts is None or isinstance(runner, WorkerRunner):
        return
    try:
        _checks = parse_checks(opts.check)
    except CheckSyntaxError as e:
        die(f"--check/LOCUST_CHECKS: {e}")
    if _checks and not opts.headless:
        logger.warning("Thresholds (--check/LOCUST_CHECKS) are evaluated in headless runs only")


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
    if metric in _PERCENTILES:
        return float(entry.get_response_time_percentile(_PERCENTILES[metric]))
    if metric == "fail_ratio":
        return round(entry.fail_ratio, 6)
    return round(float(entry.total_rps), 3)  # rps


def evaluate(checks: list[Check], stats: RequestStats) -> list[Outcome]:
    """Each threshold against the cumulative stats. No data is a failure, never a pass: a p95
    of an endpoint that was never called, or of a test that sent nothing, proves nothing."""
    outcomes = []
    for check in checks:
        entry = entry_for(stats, check.name)
        if entry is None:
            reason = f"no request named {check.name!r} in this run (names are locust_stats.csv's Name column)"
            outcomes.append(Outcome(check, None, False, reason))
        elif entry.num_requests == 0:
            outcomes.append(Outcome(check, None, False, f"no requests recorded for {check.name!r}"))
        else:
            value = measure(entry, check.metric)
            outcomes.append(Outcome(check, value, check.passes(value)))
    return outcomes


def on_quitting(environment: Environment, **_kw) -> None:
    """Stats are final here (the plugin ends a distributed run only after the workers' last
    reports), and the exit code is still ours to set: Locust reads it right after this event."""
    global _outcomes
    run = current_run()
    if run is None or not _checks:
        return
    _outcomes = evaluate(_checks, environment.stats)
    passed = all(o.passed for o in _outcomes)
    run.extra["checks"] = [o.as_json() for o in _outcomes]
    run.extra["checks_passed"] = passed
    if run.run_dir:
        started, ended = run.started_at, run.ended_at or datetime.now(UTC)
        seconds = (ended - started).total_seconds() if started else 0.0
        timestamp = started.isoformat(timespec="seconds") if started else ""
        write_junit(run.run_dir / JUNIT_XML, _outcomes, seconds, timestamp)
    if not passed and not environment.process_exit_code:
        environment.process_exit_code = THRESHOLDS_BROKEN_EXIT


def on_quit(**_kw) -> None:
    """The verdict last, after Locust's final tables, where a CI log reader looks first."""
    for outcome in _outcomes:
        sys.stdout.write(f"swarmbench: check {outcome.line()}\n")
    if _outcomes and not all(o.passed for o in _outcomes):
        broken = sum(not o.passed for o in _outcomes)
        code = THRESHOLDS_BROKEN_EXIT
        sys.stdout.write(f"swarmbench: {broken} of {len(_outcomes)} thresholds broken (exit code {code})\n")
    sys.stdout.flush()


# --- junit.xml ----------------------------------------------------------------------------------


def junit_tree(outcomes: list[Outcome], seconds: float, timestamp: str) -> ET.ElementTree:
    """One testsuite, one testcase per threshold, a <failure> when broken (JUnit XML as read by
    GitHub/GitLab/Jenkins reporters)."""
    failures = sum(not o.passed for o in outcomes)
    common = {"tests": str(len(outcomes)), "failures": str(failures), "errors": "0", "time": f"{seconds:.3f}"}
    root = ET.Element("testsuites", name="swarmbench", **common)
    suite = ET.SubElement(
        root,
        "testsuite",
        name="swarmbench.checks",
        skipped="0",
        timestamp=timestamp,
        hostname=socket.gethostname(),
        **common,
    )
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="swarmbench.checks", name=o.check.expr, time="0")
        ET.SubElement(case, "system-out").text = o.line()
        if not o.passed:
            message = o.failure_message()
            failure = ET.SubElement(case, "failure", message=message, type="ThresholdBroken")
            failure.text = f"{o.check.expr}: {message}"
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, outcomes: list[Outcome], seconds: float, timestamp: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    junit_tree(outcomes, seconds, timestamp).write(tmp, encoding="utf-8", xml_declaration=True)
    tmp.replace(path)


def register() -> None:
    events.init_command_line_parser.add_listener(add_options)
    events.init.add_listener(on_init)
    events.quitting.add_listener(on_quitting)
    events.quit.add_listener(on_quit)
