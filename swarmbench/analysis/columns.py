"""Locust's CSV columns and Swarmbench's run-folder names, named once.

Locust's CSV headers are an interface we do not own: every reader in this project goes through
these names so a Locust upgrade that renames a column breaks in exactly one place.
"""

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

# The row Locust adds with totals over every endpoint (the thresholds' default name, too).
from swarmbench.core.checks import AGGREGATED as AGGREGATED  # noqa: E402

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

# --- A Swarmbench run folder: results/<run-id>/ (its file names are swarmbench.core.folder's,
# re-exported so every reader needs one import) ---
from swarmbench.core.folder import CSV_PREFIX as CSV_PREFIX  # noqa: E402
from swarmbench.core.folder import EXCEPTIONS_CSV as EXCEPTIONS_CSV  # noqa: E402
from swarmbench.core.folder import FAILURES_CSV as FAILURES_CSV  # noqa: E402
from swarmbench.core.folder import HISTORY_CSV as HISTORY_CSV  # noqa: E402
from swarmbench.core.folder import MANIFEST as MANIFEST  # noqa: E402
from swarmbench.core.folder import REPORT_HTML as REPORT_HTML  # noqa: E402
from swarmbench.core.folder import STATS_CSV as STATS_CSV  # noqa: E402

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

# --- Swarmbench's tidy frames (summary.csv, time series, scaling points) ---
RUN_ID = "run_id"
USER_CLASS = "user_class"
WORKERS = "workers"
USERS = "users"
MODE = "mode"
STATUS = "status"  # run.json's status (complete, interrupted, degraded, failed) or "unknown"
REPEAT = "repeat"
METHOD = "method"
ENDPOINT_NAME = "name"
ENDPOINT = "endpoint"  # "GET /albums", or "Aggregated": method and name as a person reads them
REQUESTS = "requests"
FAILURES = "failures"
FAIL_RATIO = "fail_ratio"
RPS_OUT = "rps"
FAIL_PER_S_OUT = "failures_per_s"
P50_MS = "p50_ms"
P90_MS = "p90_ms"
P95_MS = "p95_ms"
P99_MS = "p99_ms"
P999_MS = "p99.9_ms"
LATENCY = "latency"  # where a row's percentiles come from: exact (HDR histograms) or rounded (Locust's)
AVG_MS = "avg_ms"
MAX_MS = "max_ms"
TIME_S = "t_s"  # seconds since the run's first history row
TIMESTAMP_OUT = "timestamp"
TOTAL_REQUESTS = "total_requests"
TOTAL_FAILURES = "total_failures"
ERROR = "error"
# timeseries.csv: throughput from differences of the cumulative counts over windows (timeseries.py)
WINDOW_S = "window_s"  # the window (t_s - window_s, t_s] a row's rates are over
FAIL_PER_S_WINDOW = "fail_per_s"
PARTIAL = "partial"  # True: the window holds the workers' first or last reports (start/stop)
OCCURRENCES = "occurrences"

# Column order of summary.csv.
SUMMARY_COLUMNS = [
    RUN_ID,
    USER_CLASS,
    WORKERS,
    USERS,
    MODE,
    STATUS,
    REPEAT,
    METHOD,
    ENDPOINT_NAME,
    ENDPOINT,
    REQUESTS,
    FAILURES,
    FAIL_RATIO,
    RPS_OUT,
    P50_MS,
    P90_MS,
    P95_MS,
    P99_MS,
    P999_MS,
    AVG_MS,
    MAX_MS,
    LATENCY,
]

# Column order of timeseries.csv.
TIMESERIES_COLUMNS = [
    RUN_ID,
    ENDPOINT,
    TIME_S,
    WINDOW_S,
    USERS,
    RPS_OUT,
    FAIL_PER_S_WINDOW,
    P50_MS,
    P95_MS,
    P99_MS,
    PARTIAL,
    LATENCY,
]

# --- the settings table (one row per run) ---
SPAWN_RATE = "spawn_rate"
RUN_TIME_S = "run_time_s"
WAIT_TIME = "wait_time"
HOST = "host"
LOCUSTFILE = "locustfile"
STORE = "store"
LOCUST_VERSION = "locust_version"
STARTED_AT = "started_at"
DURATION_S = "duration_s"
EXIT_CODE = "exit_code"
GIT_COMMIT = "git_commit"
WORKER_CPU_MEAN = "worker_cpu_mean_pct"
TARGET_CPU_UTIL = "target_cpu_util"
FOLDER = "folder"
