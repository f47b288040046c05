"""The run folder: results/<run-id>/ with Locust's CSVs, its HTML report and run.json.

Swarmbench writes Locust's CSVs itself (with Locust's own writer class, so the format is exactly
Locust's) instead of relying on `--csv`: Locust's CSV greenlet writes once a second and its last
write can predate the workers' final reports, leaving the last second out of `*_stats.csv`. Here the
files are rewritten once more after the last report, so they match the totals Locust prints.
"""

from __future__ import annotations

import csv
import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import gevent
from locust import stats as locust_stats
from locust.env import Environment

# Names shared with analysis/: analysis/columns.py holds the same literals (the folder is the
# interface between the two; a test checks they agree).
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


class CsvFiles:
    """Locust's four CSV files for one run, kept live during the test and finalized at the end."""

    def __init__(self, environment: Environment, run_dir: Path) -> None:
        self.prefix = str(run_dir / CSV_PREFIX)
        self.writer = locust_stats.StatsCSVFileWriter(
            environment, locust_stats.PERCENTILES_TO_REPORT, self.prefix, full_history=True
        )
        self.greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        if self.greenlet is None:
            self.greenlet = gevent.spawn(self.writer.stats_writer)

    def finalize(self) -> None:
        """Stop the periodic writer and write the final numbers once more."""
        if self.greenlet is not None:
            self.greenlet.kill(block=True)
        self.writer.close_files()
        w = self.writer
        for suffix, write in (
            ("_stats.csv", w.requests_csv),
            ("_failures.csv", w.failures_csv),
            ("_exceptions.csv", w.exceptions_csv),
        ):
            with open(self.prefix + suffix, "w", newline="", encoding="utf-8") as f:
                write(csv.writer(f))
        history = w.stats_history_file_name()
        with open(history, "a", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            if f.tell() == 0:  # the test never started: the writer never wrote its header
                out.writerow(w.stats_history_csv_columns)
            # One last row: the history's final cumulative counts equal _stats.csv's.
            w._stats_history_data_rows(out, time.time())


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
