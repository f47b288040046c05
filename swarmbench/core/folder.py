"""The run folder and the sweep folder: file names, Locust's CSV columns, run ids, exclusive creation,
atomic writes.

The folder is the interface between the parts: the plugin writes it, the runner classifies it, the
analysis reads it. Every file name lives here, once.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from swarmbench.core.atomic import write_atomic

# --- results/<run-id>/ ---
CSV_PREFIX = "locust"
"""Prefix of Locust's CSV files inside a run folder (Locust's --csv)."""
STATS_CSV = f"{CSV_PREFIX}_stats.csv"
HISTORY_CSV = f"{CSV_PREFIX}_stats_history.csv"
FAILURES_CSV = f"{CSV_PREFIX}_failures.csv"
EXCEPTIONS_CSV = f"{CSV_PREFIX}_exceptions.csv"
REPORT_HTML = "report.html"
"""Swarmbench's run page (swarmbench/page/run.py): the answer, warnings, charts, settings, files.
Folders written before it hold Locust's own report under this name."""
LOCUST_REPORT_HTML = "locust_report.html"
"""Locust's own HTML report of the run (its percentiles rounded), linked from the run page."""
MANIFEST = "run.json"
"""Swarmbench's record of how the run was made (see manifest.py)."""
JUNIT_XML = "junit.xml"
"""Thresholds as JUnit XML, for CI test reporters."""
LATENCY_HDR_CSV = f"{CSV_PREFIX}_latency_hdr.csv"
"""Exact percentiles per request (type, name) and Aggregated, of the service time (every run) and,
with --arrival-rate, of the time since the intended start."""
LATENCY_HDR_JSON = f"{CSV_PREFIX}_latency_hdr.json"
"""The same HDR histograms, encoded, so an analysis can merge runs exactly."""
LATENCY_WINDOWS_CSV = f"{CSV_PREFIX}_latency_windows.csv"
"""The same per 1-second window from the test start, each row with its encoded histogram."""
LATENCY_WINDOWS_SEALED_CSV = f"{CSV_PREFIX}_latency_windows.sealed.csv"
"""While the run goes: each window's rows of LATENCY_WINDOWS_CSV appended as the master seals it, so
a master that dies loses at most the windows still open (core/salvage.py reads it back); removed
when the run's own files are written."""
RUNNER_LOG = "swarmbench.log"
"""The containers' logs of a headless run (master and workers, as `docker compose logs` gives them),
kept by the host runner: the terminal shows a progress line and a summary instead (`--verbose`
shows them as well). Written after run.json, by the runner, not the run."""
LIVE_JSON = "swarmbench_live.json"
"""The run's live status while it goes (core/live.py), rewritten every few seconds by the master
and read by the host runner's progress line; removed when the run folder is complete."""
LATENCY_FILES = (LATENCY_HDR_CSV, LATENCY_HDR_JSON, LATENCY_WINDOWS_CSV)
"""What a run recorded with exact latency holds besides RUN_FILES (run.json's `latency` lists them)."""
ARRIVAL_CSV = f"{CSV_PREFIX}_arrival.csv"
"""Open model: iterations scheduled, started and dropped in each second of the schedule."""
RUN_FILES = (STATS_CSV, HISTORY_CSV, FAILURES_CSV, EXCEPTIONS_CSV, LOCUST_REPORT_HTML, REPORT_HTML, MANIFEST)
"""What every saved run folder holds (junit.xml only when thresholds were set)."""

# --- results/<sweep-id>/ ---
SWEEP_JSON = "sweep.json"
"""A sweep's settings and every point's status (see sweepstate.py)."""
AB_JSON = "ab.json"
"""`make ab`'s settings and every run's status, the same record as sweep.json: what a rerun with
the same AB_ID resumes from."""
REPORT_DIR = "report"
"""The sweep's `python -m analysis report` output, inside the sweep folder."""
ABORTED_DIR = ".aborted"
"""Partial folders of failed or interrupted points (hidden: the analysis skips dot-folders)."""
LOGS_DIR = ".logs"
"""Each sweep point's Locust/compose output."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def make_run_id(now: datetime, user_classes: list[str], workers: int | None) -> str:
    """UTC time + user classes + worker count, e.g. 20261121T194500Z_AlbumsHttpUser_w4."""
    classes = "+".join(user_classes) or "all"
    generators = "local" if workers is None else f"w{workers}"
    return _UNSAFE.sub("-", f"{now.astimezone(UTC):%Y%m%dT%H%M%SZ}_{classes}_{generators}")


def is_folder_name(name: str) -> bool:
    """A run or sweep id that is one folder name (letters, digits, . _ + -), never a path."""
    return bool(_FOLDER_NAME.match(name)) and name not in (".", "..")


def create_run_dir(results_dir: str | Path, run_id: str, explicit: bool) -> Path:
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


RESERVED_DIR = "ids"
"""Under a results folder's LOGS_DIR: one empty folder per generated run id that another process
creates the run folder of later (reserve_run_id)."""


def reserve_run_id(results_dir: str | Path, run_id: str) -> str:
    """A generated RUN_ID for a run folder another process creates later (the plugin, in a container
    or a process of its own, refuses an id whose folder exists): taken exclusively as create_run_dir
    takes a folder, under RESULTS_DIR/LOGS_DIR/RESERVED_DIR, with a -2, -3, ... suffix where another
    invocation reserved it first (two started in the same second) or a run folder has that name."""
    root = Path(results_dir)
    while True:
        taken = create_run_dir(root / LOGS_DIR / RESERVED_DIR, run_id, explicit=False).name
        if not (root / taken).exists():
            return taken


def write_json_atomic(path: Path, data: dict) -> None:
    """DATA as PATH's JSON (indented, a final newline), replaced whole (core/atomic.py): a reader sees
    the old file or the new, never half."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def utc_iso(t: datetime | None, timespec: str = "milliseconds") -> str | None:
    """`2026-11-21T19:45:00.123Z`: run.json's, sweep.json's and the history store's time format
    (fixed width: text order is time order). A T without a time zone is taken as UTC."""
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


# --- Locust's CSV columns: an interface we do not own, named once ---------------------------------
# Every reader in this project goes through these names, so a Locust upgrade that renames a column
# breaks in exactly one place.

# --- *_stats.csv (one row per (Type, Name) plus the "Aggregated" row) ---
TYPE = "Type"
NAME = "Name"
REQUEST_COUNT = "Request Count"
FAILURE_COUNT = "Failure Count"
MEDIAN_RT = "Median Response Time"
AVG_RT = "Average Response Time"
MIN_RT = "Min Response Time"
MAX_RT = "Max Response Time"
AVG_SIZE = "Average Content Size"
RPS = "Requests/s"
FAILURES_PER_S = "Failures/s"

# --- *_stats_history.csv (one row per second; per endpoint too with --csv-full-history) ---
TIMESTAMP = "Timestamp"
USER_COUNT = "User Count"
CURRENT_RPS = "Requests/s"
CURRENT_FAILURES_PER_S = "Failures/s"
TOTAL_REQUEST_COUNT = "Total Request Count"
TOTAL_FAILURE_COUNT = "Total Failure Count"
TOTAL_MEDIAN_RT = "Total Median Response Time"
TOTAL_AVG_RT = "Total Average Response Time"

# Percentile columns are "50%", "95%", ..., "100%" in both files. In the history file they hold
# the percentile over Locust's ~10 s response-time window (with --csv-full-history), and "N/A"
# (or 0) in the first rows before any response arrived.
P50 = "50%"
P90 = "90%"
P95 = "95%"
P99 = "99%"
P999 = "99.9%"

# --- *_failures.csv ---
FAIL_METHOD = "Method"
FAIL_NAME = "Name"
FAIL_ERROR = "Error"
FAIL_OCCURRENCES = "Occurrences"

# --- *_exceptions.csv ---
EXC_COUNT = "Count"
EXC_MESSAGE = "Message"
EXC_TRACEBACK = "Traceback"
EXC_NODES = "Nodes"

# Further Locust columns the analysis reads.
P100 = "100%"  # the window's maximum: 0 there means the window held no responses (see timeseries)
FAIL_FIRST_SEEN = "First Seen"  # failures CSV, newer Locust only
FAIL_LAST_SEEN = "Last Seen"

# Older Locust header spellings -> the current names above. Headers are also matched without regard
# to case, which covers "Median response time" and friends.
LEGACY_ALIASES = {
    "# requests": REQUEST_COUNT,
    "# failures": FAILURE_COUNT,
    "Method": TYPE,  # stats CSVs of Locust < 1.0 called the request type "Method"
}
