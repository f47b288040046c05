"""One exit path for bad input: `swarmbench: error: ...` on one line, exit code 2, no traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

USAGE_EXIT = 2


class UsageError(Exception):
    """Bad input a person can fix; the message names the setting and the value."""


def die(message: str) -> NoReturn:
    print(f"swarmbench: error: {message}", file=sys.stderr)
    raise SystemExit(USAGE_EXIT)
