"""One way to stop a run on bad configuration: a one-line message, exit code 2, no traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

import psutil

CONFIG_ERROR_EXIT = 2
"""Same code argparse (and so Locust) uses for a malformed command line."""


def die(message: str) -> NoReturn:
    sys.stderr.write(f"swarmbench: error: {message}\n")
    sys.stderr.flush()
    # With --processes, Locust has already forked its workers when our checks run; they would
    # otherwise retry connecting to a master that is gone for minutes.
    for child in psutil.Process().children():
        child.terminate()
    # SystemExit passes through Locust's event hooks (they catch only Exception).
    raise SystemExit(CONFIG_ERROR_EXIT)
