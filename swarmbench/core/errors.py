"""The one way every Swarmbench command stops on bad input: `PROG: error: ...`, one line, no traceback.

`die()` is used by the host runner (`swarmbench: error: ...`), the Locust plugin (the same prefix,
inside Locust) and the analysis CLI (`analysis: error: ...`). `UsageError` is raised by validation
code that does not decide how to exit; `InputError` names a file (or run group) that cannot be used.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

from swarmbench.core.exits import CONFIG_ERROR

PROG = "swarmbench"


class UsageError(Exception):
    """Bad input a person can fix; the message names the setting and the value."""


class InputError(Exception):
    """A file the analysis (or a schema reader) cannot use: `str()` is one line, `WHERE: PROBLEM`."""

    def __init__(self, where: str | Path, problem: str) -> None:
        self.where = str(where)
        self.problem = problem
        super().__init__(f"{self.where}: {problem}")


def die(message: str, prog: str = PROG, code: int = CONFIG_ERROR) -> NoReturn:
    """Print `PROG: error: MESSAGE` on stderr and exit with CODE (SystemExit passes through
    Locust's event hooks, which catch only Exception)."""
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def read_text(path: Path, kind: str | None = None, first_line: bool = False) -> str:
    """PATH's UTF-8 text (only its first line with FIRST_LINE: a history CSV can be huge).

    InputError naming the file when it cannot be read, is not UTF-8 (`not a Locust KIND: ...`) or
    is empty: the one way every reader of a run folder's files says so.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.readline() if first_line else f.read()
    except UnicodeDecodeError:
        raise InputError(path, f"not a Locust {kind}: not UTF-8 text" if kind else "not UTF-8 text") from None
    except OSError as e:
        raise InputError(path, f"cannot read ({e.strerror or e})") from None
    if not text.strip():
        raise InputError(path, "empty file")
    return text
