"""Locust's CSV files for a run folder, written so they end with the run's final numbers.

Swarmbench writes Locust's CSVs itself (with Locust's own writer class, so the format is exactly
Locust's) instead of relying on `--csv`: Locust's CSV greenlet writes once a second and its last
write can predate the workers' final reports, leaving the last second out of `*_stats.csv`. Here the
files are rewritten once more after the last report, so they match the totals Locust prints.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import gevent
from locust import stats as locust_stats
from locust.env import Environment

from swarmbench.core.folder import CSV_PREFIX


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
