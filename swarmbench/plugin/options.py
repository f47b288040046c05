"""Swarmbench's configuration inside Locust: its options group, stopping on a bad value, and the
staging host's headers on every user class.

Stopping a run on bad configuration from inside Locust: core's die(), after the forked workers.

Every Swarmbench option, in ONE "Swarmbench options" group of Locust's configuration chain.

Each option is a flag, a `LOCUST_*` environment variable and a locust.conf key at once (Locust's
`init_command_line_parser` + `env_var=`), so compose files, CI and local runs configure it the same
way as Locust's built-in settings: locust.conf < LOCUST_* variables < flags.

Extra request headers (tokens, API keys) for a staging host, kept out of images and results.

Two sources, both read at run time in each Locust process:

- LOCUST_HEADERS_FILE (--headers-file): a file of `Name: value` lines; `make staging` mounts the
  host's SWARMBENCH_HEADERS_FILE read-only into the containers and points this at it;
- LOCUST_HEADERS: the same lines in an environment variable (e.g. a CI secret); wins on a name
  that both give.

LOCUST_HEADERS is deliberately NOT a Locust option: an option can be set as a flag (visible in
`ps`) or in locust.conf (committed), and Locust ships every option from master to workers and
into its web UI. Values are never logged, never in error messages, never in run.json: only the
header NAMES are recorded ("request_headers"). A value that cannot be sent (a curly quote, a
control character: core/headers.py) stops the run with its source, line and name; and should a
server or locustfile echo a value anyway, core/headers.py's redaction removes it from the logs and
the run folder.

Every HttpUser and FastHttpUser class of the run sends them with every request (a header a task
passes explicitly still wins for that request)."""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any, NoReturn

import psutil
from locust import HttpUser
from locust.argument_parser import LocustArgumentParser
from locust.contrib.fasthttp import FastHttpUser
from locust.env import Environment

from swarmbench.core import exits
from swarmbench.core.headers import HeaderSyntaxError, load_headers
from swarmbench.core.loadspec import DEFAULT_MIX, DEFAULT_WAIT_TIME, MIXES, SWEEP_MODES

# --- stopping on bad configuration ----------------------------------------------------------------


def die(message: str) -> NoReturn:
    """`swarmbench: error: MESSAGE`, exit code 2, no traceback.

    With --processes, Locust has already forked its workers when our checks run; they would
    otherwise retry connecting to a master that is gone for minutes, so they go first.
    """
    for child in psutil.Process().children():
        child.terminate()
    exits.die(message)


# --- the options ----------------------------------------------------------------------------------

DEFAULT_RESULTS_DIR = "results"
"""Where headless runs write `<run-id>/` folders; relative to Locust's working directory."""

GROUP_TITLE = "Swarmbench options"


def _add(group, *flags: str, web_ui: bool = False, **kwargs: Any) -> None:
    """An option of the group. Locust reads `include_in_web_ui` off the action (its parser's own
    add_argument sets it; a group's does not), so it is set here: only --wait-time is a UI field."""
    action = group.add_argument(*flags, **kwargs)
    action.include_in_web_ui = web_ui
    action.is_secret = action.is_required = action.is_multiple = False


def add_options(parser: LocustArgumentParser, **_kw: Any) -> None:
    # Long on purpose: one flat declaration per option, each reading like the --help entry it makes,
    # is easier to review than a table that hides env_var/default/help behind indirection.
    g = parser.add_argument_group(GROUP_TITLE, "Added by Swarmbench's plugin (docs/headless.md: Settings).")
    _add(
        g,
        "--wait-time",
        env_var="LOCUST_WAIT_TIME",
        default=DEFAULT_WAIT_TIME,
        web_ui=True,
        help=(
            "Pacing of the bundled scenario's users: 'between MIN MAX' or 'constant S' (closed loop, "
            "seconds of think time), 'throughput R' (R tasks/s per user) or 'pacing S'. "
            f"Default: '{DEFAULT_WAIT_TIME}'."
        ),
    )
    _add(
        g,
        "--results-dir",
        env_var="LOCUST_RESULTS_DIR",
        default=DEFAULT_RESULTS_DIR,
        help=(
            "Headless runs save CSVs, the run page report.html and run.json to RESULTS_DIR/<run-id>/. "
            "Set to an empty string to save nothing. Default: 'results'."
        ),
    )
    _add(
        g,
        "--run-id",
        env_var="LOCUST_RUN_ID",
        default="",
        help=(
            "Name of the run folder (default: UTC time + user classes + worker count). "
            "An existing folder is never overwritten: the run stops before it starts."
        ),
    )
    _add(
        g,
        "--git-commit",
        env_var="LOCUST_GIT_COMMIT",
        default="",
        help="Commit recorded in run.json (default: asked from git when run inside a checkout).",
    )
    _add(
        g,
        "--git-branch",
        env_var="LOCUST_GIT_BRANCH",
        default="",
        help="Branch recorded in run.json, what the run history compares within (default: git's, "
        "else the CI's branch variable).",
    )
    _add(
        g,
        "--testbed",
        env_var="LOCUST_TESTBED",
        default="",
        help="The machine's name in run.json: runs are compared with history only on the same "
        "testbed (default: this machine's CPU model and count, e.g. 'AMD EPYC 7B13 x2').",
    )
    _add(
        g,
        "--skip-host-check",
        env_var="LOCUST_SKIP_HOST_CHECK",
        action="store_true",
        default=False,
        help="Do not check that the host answers before a headless run starts.",
    )
    _add(
        g,
        # '--checks' too, so locust.conf can say `checks = ...` like the LOCUST_CHECKS variable.
        "--check",
        "--checks",
        dest="check",
        action="append",
        env_var="LOCUST_CHECKS",
        default=None,
        metavar="EXPR",
        help=(
            "Threshold that fails a headless run (exit code 3) when broken: [NAME:]METRIC OP VALUE, "
            "METRIC one of p50 p95 p99 (ms) fail_ratio rps, OP one of < <= > >=, NAME a request "
            "name (default Aggregated). Repeatable; several per value separated by ';', e.g. "
            "LOCUST_CHECKS='p95<300;GET /albums/{id}:p99<500;fail_ratio<0.01;rps>=200'."
        ),
    )
    _add(
        g,
        "--abort-on-fail",
        env_var="LOCUST_ABORT_ON_FAIL",
        action="store_true",
        default=False,
        help=(
            "Check the thresholds (--check) live, on each sealed 1 s window's exact figures merged "
            "over every worker, and stop the whole run at the first window that breaks one: saved "
            "complete with status 'aborted', exit code 3 (k6's abortOnFail). Needs --check."
        ),
    )
    _add(
        g,
        "--abort-grace",
        env_var="LOCUST_ABORT_GRACE",
        default="10s",
        metavar="DURATION",
        help=(
            "With --abort-on-fail: windows of the first DURATION of the test are not checked "
            "(the ramp-up; k6's delayAbortEval). Default: 10s."
        ),
    )
    _add(
        g,
        "--allow-degraded",
        env_var="LOCUST_ALLOW_DEGRADED",
        action="store_true",
        default=False,
        help=(
            "Do not fail a degraded run (a load generator lost, or the target gone, for part of it) "
            "with exit code 4; run.json still says status 'degraded'."
        ),
    )
    _add(
        g,
        "--headers-file",
        env_var="LOCUST_HEADERS_FILE",
        default="",
        help=(
            "File of 'Name: value' lines sent as headers with every request of HttpUser and "
            "FastHttpUser users (tokens for a staging host). Values are never logged or saved. "
            "The LOCUST_HEADERS environment variable takes the same lines."
        ),
    )
    _add(
        g,
        "--exact-latency",
        env_var="LOCUST_EXACT_LATENCY",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=(
            "Record every request's latency in HDR histograms per 1-second window (the exact "
            "percentiles of run.json, the thresholds and the web UI's Exact latency tab). "
            "--no-exact-latency (LOCUST_EXACT_LATENCY=false) turns it off to measure its cost: "
            "thresholds then use Locust's rounded percentiles and say so. Always on with --arrival-rate."
        ),
    )
    _add(
        g,
        "--metrics-port",
        env_var="SWARMBENCH_METRICS_PORT",
        default="",
        metavar="PORT",
        help=(
            "Serve Prometheus metrics at http://HOST:PORT/metrics from the master (or a standalone "
            "process): the exact merged percentiles so far and of the last sealed window, counts, "
            "users, workers (docs/live.md). Default: off."
        ),
    )
    for name, help_text in (
        ("id", "Sweep this run belongs to (recorded in run.json's `sweep`)."),
        ("mode", f"Sweep scaling mode: {' or '.join(SWEEP_MODES)} (total users / users per worker fixed)."),
        ("repeat", "Repeat number of this point within its sweep (1, 2, ...)."),
        ("point", "Point id within its sweep (also the run folder's name)."),
    ):
        _add(g, f"--sweep-{name}", env_var=f"LOCUST_SWEEP_{name.upper()}", default="", help=help_text)
    _add(
        g,
        "--albums-mix",
        env_var="LOCUST_ALBUMS_MIX",
        default=DEFAULT_MIX,
        help="Request mix of the albums scenario: "
        + ", ".join(f"{name} ({ratio} GET:POST)" for name, ratio in MIXES.items())
        + ".",
    )
    _add(
        g,
        "--step-users",
        env_var="LOCUST_STEP_USERS",
        default="",
        help=(
            "Step load for knee finding, 'START STEP SECONDS MAX' (e.g. '10 10 20 80'): needs "
            "locustfiles/step_load.py in the locustfile list; without this option that file is inert."
        ),
    )
    _add(
        g,
        "--arrival-rate",
        env_var="LOCUST_ARRIVAL_RATE",
        default="",
        metavar="STAGES",
        help=(
            "Open model: start R iterations (tasks) per second across all workers, whatever the "
            "responses take; --users is the pool that runs them, and an iteration finding no idle "
            "user is dropped and counted. Stages 'RATE[@DURATION]; ...' ramp linearly, the last rate "
            "holds: '100', '50; 100@30s; 400@1m', '100@10s'. Replaces the users' wait time."
        ),
    )
    _add(
        g,
        "--arrival-max-wait",
        env_var="LOCUST_ARRIVAL_MAX_WAIT",
        default="0",
        metavar="DURATION",
        help=(
            "With --arrival-rate: how long an iteration that finds no idle user may wait for one "
            "(e.g. '2s'); it is dropped after that, and the wait counts in its intended-start "
            "latency. Default 0: dropped at once."
        ),
    )


# --- request headers on every user class ----------------------------------------------------------

logger = logging.getLogger("swarmbench")

_PATCHED = "_swarmbench_headers"


def install_headers(user_class: type, headers: dict[str, str]) -> bool:
    """Make USER_CLASS's client send HEADERS; False for a class with no HTTP client we know."""
    if issubclass(user_class, FastHttpUser):
        # FastHttpUser passes default_headers to its session: exactly this hook.
        user_class.default_headers = {**(user_class.default_headers or {}), **headers}
        return True
    if issubclass(user_class, HttpUser):
        # HttpUser has no such attribute; its requests.Session is made in __init__, so extend that.
        if not vars(user_class).get(_PATCHED):
            original = user_class.__init__

            def __init__(self, *args, **kwargs) -> None:
                original(self, *args, **kwargs)
                self.client.headers.update(headers)

            user_class.__init__ = __init__
            setattr(user_class, _PATCHED, True)
        return True
    return False


def load(opts: Any) -> dict[str, str]:
    """This process's headers (--headers-file, then LOCUST_HEADERS); a malformed source stops the
    run with one line naming the source and line, never a value."""
    try:
        return load_headers(opts.headers_file, os.environ)
    except HeaderSyntaxError as e:
        die(str(e))


def install_all(environment: Environment, headers: dict[str, str]) -> None:
    """Every user class of the run sends HEADERS (load generators only: a master sends nothing)."""
    classes = {*environment.user_classes, *(environment.available_user_classes or {}).values()}
    for cls in sorted(classes, key=lambda c: c.__name__):
        if not install_headers(cls, headers):
            logger.warning("%s has no HTTP client we know: its requests get no extra headers", cls.__name__)
    logger.info("Sending extra request headers: %s (values hidden)", ", ".join(sorted(headers)))
