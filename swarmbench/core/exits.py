"""How a command ends: the exit codes (one set for the command line, the Locust plugin and CI), and the
one way every command stops on bad input.

Exit codes: one set for `python -m swarmbench`, the Locust plugin and CI.

Locust's own codes come first (0 and 1 are Locust's, 2 is argparse's); Swarmbench adds its own
above them (3, 4, 5, 6) so CI can tell "the system under test is too slow" from "the run itself went
wrong". The docs list them in ONE table, docs/ci.md "Exit codes"; tests/test_docs.py fails when that
table and the int constants here disagree, so a new code here needs its row there.

When several apply, the first of these wins (`run_exit_code`, with the run statuses in
core/manifest.py): interrupted (130/143) > the master lost (6) > failed (5) >
degraded (4, unless --allow-degraded) > thresholds (3) > Locust's own (1 when requests failed).
A stopped run says so first (CI should not report a verdict on a run someone cancelled); a run that
served nothing says so before anything about its numbers; a run whose load generators or target
went away is not a measurement to judge thresholds on.

The one way every Swarmbench command stops on bad input: `PROG: error: ...`, one line, no traceback.

`die()` is used by the host runner (`swarmbench: error: ...`), the Locust plugin (the same prefix,
inside Locust) and the analysis CLI (`analysis: error: ...`). `UsageError` is raised by validation
code that does not decide how to exit; `InputError` names a file (or run group) that cannot be used."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import NoReturn

# --- the exit codes -------------------------------------------------------------------------------

OK = 0
"""The run finished and every threshold held."""

REQUESTS_FAILED = 1
"""Some requests failed (Locust's --exit-code-on-error, default 1)."""

CONFIG_ERROR = 2
"""Bad configuration: nothing ran. Same code argparse (and so Locust) uses for a bad command line."""

THRESHOLDS_BROKEN = 3
"""Swarmbench's own code, not Locust's: a threshold (--check/LOCUST_CHECKS) was broken. Replaces
REQUESTS_FAILED when both apply."""

DEGRADED = 4
"""run.json status `degraded`: a load generator went missing or quit early, or the target stopped
answering for part of the run. --allow-degraded/LOCUST_ALLOW_DEGRADED turns this off (the next code
down applies)."""

RUN_FAILED = 5
"""run.json status `failed`: nothing or almost nothing was served (core/health.py's rule)."""

MASTER_LOST = 6
"""run.json status `interrupted` written by the runner, not the master: the master died mid-run
(SIGKILL, an OOM kill, its node lost) before it wrote the run's record; the runner wrote it from
what survived (core/salvage.py: the last live status, Locust's CSVs, the sealed windows)."""

INTERRUPTED_SIGINT = 128 + signal.SIGINT
"""130: stopped by Ctrl-C (the shell's convention for a process ended by SIGINT)."""

INTERRUPTED_SIGTERM = 128 + signal.SIGTERM
"""143: stopped by SIGTERM (`docker compose stop`, `kill`, a CI job's timeout)."""

MEASURED = (OK, REQUESTS_FAILED, THRESHOLDS_BROKEN)
"""Codes of a run that still made a measurement (a sweep point with one of these is done)."""


def interrupted(signum: int) -> int:
    """130 for SIGINT, 143 for SIGTERM (128 + the signal's number, as shells report it)."""
    return 128 + int(signum)


# --- bad input: one line, no traceback ------------------------------------------------------------

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
