"""The command lines of the swarmbench commands the runner starts in a process of its own: each built
here by one function, with the flag names swarmbench/cli.py's parser declares them under.

The runner is the standard library and core only (pyproject.toml [tool.importlinter]), so it cannot
import the comparison, the report or the history: it runs `swarmbench compare|floor|report|history
add|headless` as subprocesses. An import would be an arrow import-linter sees; an argv is not, so
a flag renamed in the parser would break the runner only when a Docker end-to-end test runs. Hence:

- every flag the runner passes is a constant here, and cli.py's parser declares the flag under
  that constant (cli is the top layer: it may import core; the runner may not import cli);
- every command the runner starts has ONE builder here, returning the words after the program
  (`PROGRAM`), and the runner builds no argv of its own;
- tests/test_cmdline.py builds every argv these functions can make (each branch) and parses it with
  cli.py's real parser (`cli.parse_args`), checking each value lands where the builder meant it:
  a renamed flag, a swapped positional or a changed nargs fails in a second, without Docker.

Flags the runner never passes stay literal in cli.py: this module names the runner's arrows only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

PROGRAM = (sys.executable, "-m", "swarmbench")
"""`swarmbench` in a process of its own, with this interpreter (no PATH lookup, the same venv)."""

# --- the flags the runner passes (cli.py declares each under this name) -----------------------------

OUT = "-o"
"""compare, floor, report, history export, trend: the output folder (also `--out`)."""
HISTORY = "--history"
"""The run history store: `history add RUN... --history STORE`, `compare RUN --history [STORE]`."""
TITLE = "--title"
"""report: the page title."""
KNEE_P99_MS = "--knee-p99-ms"
"""report: the open-model knee's intended-start p99 bound in ms."""
DUET = "--duet"
"""compare: one duet run's (or a folder of them) two sides, paired in time (make ab's DUET=1)."""
STAGING = "--staging"
"""headless: test LOCUST_HOST without starting the bundled target."""
SWARM = "--swarm"
"""headless: run as a Docker Swarm stack."""
SEQUENTIAL = "--sequential"
"""compare: the sequential A/B's planned pairs K (its repeated CIs, compare/sequential.py)."""
FIRST_LOOK = "--first-look"
"""compare --sequential: the first look (pairs)."""
LOOK = "--look"
"""compare --sequential: one look only, its decision state as JSON on stdout; nothing written."""


# --- one builder per command ----------------------------------------------------------------------


def headless(*, staging: bool = False, swarm: bool = False) -> list[str]:
    """`swarmbench headless [--staging] [--swarm]`: a sweep's or an A/B run's point (its settings
    travel in the environment, under Locust's names)."""
    return ["headless", *([STAGING] if staging else []), *([SWARM] if swarm else [])]


def compare(
    candidate: Path,
    out: Path,
    *,
    baseline: Path | None = None,
    history: str | None = None,
    options: Sequence[str] = (),
    sequential: tuple[int, int] | None = None,
    look: bool = False,
) -> list[str]:
    """`swarmbench compare BASELINE CANDIDATE -o OUT [OPTIONS]`; or, with HISTORY instead of
    BASELINE (a store, '' for the command's default one), `swarmbench compare CANDIDATE -o OUT
    --history [STORE]`: the run gated against the run history. OPTIONS: make ab's COMPARE_ARGS,
    already checked by the same parser (cli.check_compare_args). SEQUENTIAL: (K, first look) of a
    sequential A/B (`--sequential K --first-look F`); LOOK: one look, no outputs (OUT not passed)."""
    if (baseline is None) == (history is None):
        raise ValueError("compare: give a baseline folder or a history store, not both or neither")
    if baseline is not None:
        seq = [SEQUENTIAL, str(sequential[0]), FIRST_LOOK, str(sequential[1])] if sequential else []
        if look:
            return ["compare", str(baseline), str(candidate), *options, *seq, LOOK]
        return ["compare", str(baseline), str(candidate), OUT, str(out), *options, *seq]
    # --history last: its value is optional, so before the run it would take the run as the store.
    return ["compare", str(candidate), OUT, str(out), *options, HISTORY, *([history] if history else [])]


def duet(
    folder: Path,
    out: Path,
    *,
    options: Sequence[str] = (),
    sequential: tuple[int, int] | None = None,
    look: bool = False,
) -> list[str]:
    """`swarmbench compare --duet FOLDER -o OUT [OPTIONS]`: a duet run's two sides compared in pairs
    (OPTIONS: COMPARE_ARGS). SEQUENTIAL and LOOK as compare's: each duet run is one pair (DUET=1 with
    BUDGET)."""
    seq = [SEQUENTIAL, str(sequential[0]), FIRST_LOOK, str(sequential[1])] if sequential else []
    if look:
        return ["compare", DUET, str(folder), *options, *seq, LOOK]
    return ["compare", DUET, str(folder), OUT, str(out), *options, *seq]


def floor(a: Path, b: Path, out: Path, *, options: Sequence[str] = ()) -> list[str]:
    """`swarmbench floor A B -o OUT [OPTIONS]`: an A/A run's noise floor (OPTIONS: COMPARE_ARGS)."""
    return ["floor", str(a), str(b), OUT, str(out), *options]


def report(
    paths: Iterable[Path], out: Path, *, title: str | None = None, knee_p99_ms: float | None = None
) -> list[str]:
    """`swarmbench report PATH... -o OUT [--title T] [--knee-p99-ms MS]` (None: the command's
    default; MS is written as repr writes the float, so the report gets the exact bound)."""
    words = ["report", *map(str, paths), OUT, str(out)]
    if title is not None:
        words += [TITLE, title]
    if knee_p99_ms is not None:
        words += [KNEE_P99_MS, str(knee_p99_ms)]
    return words


def history_add(runs: Iterable[Path], store: str) -> list[str]:
    """`swarmbench history add RUN... --history STORE`: finished runs into the run history."""
    return ["history", "add", *map(str, runs), HISTORY, store]
