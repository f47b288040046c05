"""The locustfile's content hash recorded in run.json: two runs with the same hash ran the same code
(a comparison refuses to compare runs of different locustfiles; swarmbench/compare/fairness.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def locustfile_sha256(spec: str | None) -> str | None:
    """SHA-256 over the contents of the locustfile(s) Locust's --locustfile names (a comma-separated
    list, each a .py file or a folder of them, in sorted order); None when one cannot be read (a
    module name, a missing file): no hash is better than a wrong one."""
    if not spec:
        return None
    digest = hashlib.sha256()
    for part in sorted(p.strip() for p in spec.split(",") if p.strip()):
        path = Path(part)
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            try:
                digest.update(file.read_bytes())
            except OSError:
                return None
            digest.update(b"\0")
    return digest.hexdigest()
