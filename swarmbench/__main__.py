"""`python -m swarmbench headless`: one headless run of the compose stack (what `make headless` runs).

Settings come from the environment, under Locust's own names (LOCUST_USERS, LOCUST_RUN_TIME, ...)
plus WORKERS; see README.md "Settings".
"""

from __future__ import annotations

import argparse
import os
import sys

from . import compose, settings, sweep
from .errors import UsageError, die


class _Parser(argparse.ArgumentParser):
    """argparse with our one-line errors (argparse's own prints the whole usage first).
    Subcommand parsers inherit it (add_subparsers uses the parent's class)."""

    def error(self, message: str):  # type: ignore[override]
        die(f"{self.prog}: {message} (see --help)")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m swarmbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    headless = sub.add_parser("headless", help="one headless run: results/<run-id>/, exit code = Locust's")
    headless.add_argument(
        "--staging",
        action="store_true",
        help="test LOCUST_HOST (required) without starting the bundled target (what `make staging` runs)",
    )
    add_sweep_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "headless":
            return compose.run_headless(settings.headless_from_env(os.environ, staging=args.staging))
        if args.command == "sweep":
            chosen = sweep.sweep_settings(vars(args), os.environ)
            return sweep.run_sweep(chosen, os.environ, report=not args.no_report, dry_run=args.dry_run)
    except UsageError as e:
        die(str(e))
    return 2


def add_sweep_parser(sub) -> None:
    """`sweep`: each flag falls back to its make variable (WORKERS, CLASSES, ...), then a default."""
    p = sub.add_parser(
        "sweep",
        help="the scaling experiment: workers x classes x repeats -> results/<sweep-id>/ + report",
        description=sweep.__doc__.split("\n\n")[0] if sweep.__doc__ else None,
    )
    d = sweep
    p.add_argument(
        "--workers",
        metavar="LIST",
        help=f"worker counts (WORKERS; default '{' '.join(map(str, d.DEFAULT_WORKERS))}')",
    )
    p.add_argument(
        "--classes", metavar="LIST", help=f"user classes (CLASSES; default '{' '.join(d.DEFAULT_CLASSES)}')"
    )
    p.add_argument(
        "--repeats", metavar="N", help=f"repeats of every point (REPEATS; default {d.DEFAULT_REPEATS})"
    )
    p.add_argument(
        "--run-time", metavar="T", help=f"run time of each point (RUN_TIME; default {d.DEFAULT_RUN_TIME})"
    )
    p.add_argument(
        "--users",
        metavar="N",
        help=f"users: total (strong) or per worker (weak) (USERS; default {d.DEFAULT_USERS})",
    )
    p.add_argument(
        "--mode",
        metavar="MODE",
        help="strong: total users fixed; weak: users per worker fixed (MODE; default strong)",
    )
    p.add_argument(
        "--wait-time",
        metavar="SPEC",
        help="users' pacing, e.g. 'constant 0.1' (WAIT_TIME; default LOCUST_WAIT_TIME/locust.conf)",
    )
    p.add_argument(
        "--stores",
        metavar="LIST",
        help=f"target store strategies to sweep: {' '.join(d.STORES)} (STORES; default: not swept)",
    )
    p.add_argument(
        "--mixes",
        metavar="LIST",
        help=f"request mixes to sweep: {' '.join(d.MIXES)} (MIXES; default: not swept)",
    )
    p.add_argument(
        "--sweep-id",
        metavar="ID",
        help="folder under results/; the same id resumes (SWEEP_ID; default sweep-<UTC time>)",
    )
    p.add_argument(
        "--local",
        action="store_true",
        default=None,
        help="local processes instead of docker compose (LOCAL=1)",
    )
    p.add_argument("--no-report", action="store_true", help="skip `python -m analysis report` at the end")
    p.add_argument("--dry-run", action="store_true", help="print the plan (and each point's status) and exit")


if __name__ == "__main__":
    sys.exit(main())
