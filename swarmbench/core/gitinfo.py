"""The commit a run was made from, recorded in run.json and sweep.json."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git_commit(cwd: str | Path | None = None) -> str | None:
    """`git rev-parse HEAD` in CWD (default: the current directory); None outside a checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None
