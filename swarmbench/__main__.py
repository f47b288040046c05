"""`python -m swarmbench headless`: one headless run of the compose stack (what `make headless` runs).

Settings come from the environment, under Locust's own names (LOCUST_USERS, LOCUST_RUN_TIME, ...)
plus WORKERS; see README.md "Settings".
"""

from __future__ import annotations

import argparse
import os
import sys

from . import compose, settings
from .errors import UsageError, die


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m swarmbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    headless = sub.add_parser("headless", help="one headless run: results/<run-id>/, exit code = Locust's")
    headless.add_argument(
        "--staging",
        action="store_true",
        help="test LOCUST_HOST (required) without starting the bundled target (what `make staging` runs)",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "headless":
            return compose.run_headless(settings.headless_from_env(os.environ, staging=args.staging))
    except UsageError as e:
        die(str(e))
    return 2


if __name__ == "__main__":
    sys.exit(main())
