"""Swarmbench's own options, added to Locust's ONE configuration chain.

Each option is a flag, a `LOCUST_*` environment variable and a locust.conf key at once (Locust's
`init_command_line_parser` + `env_var=`), so compose files, CI and local runs configure it the same
way as Locust's built-in settings.
"""

from __future__ import annotations

from locust.argument_parser import LocustArgumentParser

from .wait import DEFAULT_WAIT_TIME

DEFAULT_RESULTS_DIR = "results"
"""Where headless runs write `<run-id>/` folders; relative to Locust's working directory."""


def add_options(parser: LocustArgumentParser) -> None:
    parser.add_argument(
        "--wait-time",
        env_var="LOCUST_WAIT_TIME",
        default=DEFAULT_WAIT_TIME,
        help=(
            "Pacing of the bundled scenario's users: 'between MIN MAX' or 'constant S' (closed loop, "
            "seconds of think time), 'throughput R' (R tasks/s per user) or 'pacing S'. "
            f"Default: '{DEFAULT_WAIT_TIME}'."
        ),
    )
    parser.add_argument(
        "--results-dir",
        env_var="LOCUST_RESULTS_DIR",
        default=DEFAULT_RESULTS_DIR,
        include_in_web_ui=False,
        help=(
            "Headless runs save CSVs, report.html and run.json to RESULTS_DIR/<run-id>/. "
            "Set to an empty string to save nothing. Default: 'results'."
        ),
    )
    parser.add_argument(
        "--run-id",
        env_var="LOCUST_RUN_ID",
        default="",
        include_in_web_ui=False,
        help=(
            "Name of the run folder (default: UTC time + user classes + worker count). "
            "An existing folder is never overwritten: the run stops before it starts."
        ),
    )
    parser.add_argument(
        "--git-commit",
        env_var="LOCUST_GIT_COMMIT",
        default="",
        include_in_web_ui=False,
        help="Commit recorded in run.json (default: asked from git when run inside a checkout).",
    )
    parser.add_argument(
        "--skip-host-check",
        env_var="LOCUST_SKIP_HOST_CHECK",
        action="store_true",
        default=False,
        include_in_web_ui=False,
        help="Do not check that the host answers before a headless run starts.",
    )
