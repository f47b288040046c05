"""Helpers of the hardening tests (test_hardening*.py): their fixtures' folder, and what "nothing
changed" means."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from harness import FIXTURES

HARDENING = FIXTURES / "hardening"


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under FOLDER: content hash and mode (what "nothing changed" means)."""
    if not folder.exists():
        return {}
    out = {}
    for p in sorted(folder.rglob("*")):
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        out[str(p.relative_to(folder))] = (digest, stat.S_IMODE(p.stat().st_mode))
    return out
