"""`python -m swarmbench compare ...`: the comparison is analysis-side code (numpy, matplotlib), and
this CLI is stdlib only. So it runs in the venv: directly when this interpreter has numpy (`make
compare` uses the venv's Python), else by exec'ing the checkout's .venv/bin/python -m
swarmbench.compare with the same arguments."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from swarmbench.core.exits import UsageError, die

VENV_PYTHON = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"
"""The checkout's venv (what `make .venv/.installed` creates)."""


def python() -> str:
    """The interpreter that can run the comparison in a subprocess (make ab, --baseline): this one
    when it has numpy, else the checkout's venv; UsageError when neither."""
    if importlib.util.find_spec("numpy") is not None:
        return sys.executable
    if not VENV_PYTHON.is_file():
        raise UsageError(
            "the comparison needs the analysis packages: run `make .venv/.installed` "
            f"({VENV_PYTHON} is missing)"
        )
    return str(VENV_PYTHON)


def run(argv: list[str]) -> int:
    if importlib.util.find_spec("numpy") is not None:
        from swarmbench.compare.commands import main

        return main(argv)
    if not VENV_PYTHON.is_file():
        die(f"compare needs the analysis packages: run `make .venv/.installed` ({VENV_PYTHON} is missing)")
    os.execv(VENV_PYTHON, [str(VENV_PYTHON), "-m", "swarmbench.compare", *argv])
    return 2  # not reached: execv replaces this process


__all__ = ["python", "run"]
