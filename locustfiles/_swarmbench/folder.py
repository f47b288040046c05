"""The run folder's names and its creation: results/<run-id>/, never overwritten.

Standard library only, so the host-side tools and the tests can use it without importing Locust.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

# Names shared with analysis/: analysis/columns.py holds the same literals (the folder is the
# interface between the two, and the Locust image has no pandas to import analysis with);
# tests/test_plugin_units.py checks they agree.
CSV_PREFIX = "locust"
MANIFEST = "run.json"
REPORT_HTML = "report.html"

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def make_run_id(now: datetime, user_classes: list[str], workers: int | None) -> str:
    """UTC time + user classes + worker count, e.g. 20261121T194500Z_AlbumsHttpUser_w4."""
    classes = "+".join(user_classes) or "all"
    generators = "local" if workers is None else f"w{workers}"
    return _UNSAFE.sub("-", f"{now.astimezone(UTC):%Y%m%dT%H%M%SZ}_{classes}_{generators}")


def create_run_dir(results_dir: str, run_id: str, explicit: bool) -> Path:
    """Create the folder exclusively: an existing run is never touched.

    An explicit --run-id that exists is an error (FileExistsError); a generated one gets a -2, -3...
    suffix (two runs started in the same second).
    """
    root = Path(results_dir)
    root.mkdir(parents=True, exist_ok=True)
    candidate, n = root / run_id, 1
    while True:
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            if explicit:
                raise
            n += 1
            candidate = root / f"{run_id}-{n}"


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
