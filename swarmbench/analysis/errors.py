"""The two ways analysis reports bad input: an error that stops, a warning that lets the rest through.

Both carry the file (or run group) they are about, so the CLI can print one line that names it.
Warnings go through Python's `warnings` module so a notebook shows them too, and the CLI prints each
as `analysis: warning: ...`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from swarmbench.core.errors import InputError

AnalysisError = InputError
"""Input the analysis cannot use: `str()` is one line, `WHERE: PROBLEM` (core's InputError, which
the run.json and sweep.json readers raise too)."""


class AnalysisWarning(UserWarning):
    """Something could not be read or inferred; everything else is still reported."""


def warn(where: str | Path, problem: str) -> str:
    """Emit an AnalysisWarning and return its text (results keep it, e.g. scaling.json's warnings)."""
    text = f"{where}: {problem}"
    # stacklevel is irrelevant for the one-line CLI output; `always` in the CLI defeats de-duplication.
    warnings.warn(text, AnalysisWarning, stacklevel=2)
    return text
