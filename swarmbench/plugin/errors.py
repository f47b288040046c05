"""Stopping a run on bad configuration from inside Locust: core's die(), after the forked workers."""

from __future__ import annotations

from typing import NoReturn

import psutil

from swarmbench.core import errors


def die(message: str) -> NoReturn:
    """`swarmbench: error: MESSAGE`, exit code 2, no traceback.

    With --processes, Locust has already forked its workers when our checks run; they would
    otherwise retry connecting to a master that is gone for minutes, so they go first.
    """
    for child in psutil.Process().children():
        child.terminate()
    errors.die(message)
