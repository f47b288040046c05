"""Helpers of the hardening tests (test_hardening*.py): the fixtures' folders, what "nothing
changed" means, one-line errors, `python -m swarmbench`."""

from __future__ import annotations

import hashlib
import stat
import subprocess
from pathlib import Path

from conftest import ROOT, run_module

FIXTURES = ROOT / "tests" / "fixtures"
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


def error_lines(text: str, prog: str) -> list[str]:
    assert "Traceback" not in text, text[-3000:]
    return [line for line in text.splitlines() if line.startswith(f"{prog}: error: ")]


def swarmbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_module("swarmbench", *args, env=env, timeout=60)
