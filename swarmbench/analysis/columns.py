"""The analysis' column names: Swarmbench's tidy frames (summary.csv, timeseries.csv, the settings
table), and Locust's CSV columns and run-folder names (swarmbench/core/folder.py), re-exported so
every reader needs one import.

Locust's CSV headers are an interface we do not own: every reader in this project goes through
these names so a Locust upgrade that renames a column breaks in exactly one place.
"""

from swarmbench.core.checks import AGGREGATED as AGGREGATED
from swarmbench.core.folder import (
    AVG_RT as AVG_RT,
)
from swarmbench.core.folder import (
    AVG_SIZE as AVG_SIZE,
)
from swarmbench.core.folder import (
    CSV_PREFIX as CSV_PREFIX,
)
from swarmbench.core.folder import (
    CURRENT_FAILURES_PER_S as CURRENT_FAILURES_PER_S,
)
from swarmbench.core.folder import (
    CURRENT_RPS as CURRENT_RPS,
)
from swarmbench.core.folder import (
    EXC_COUNT as EXC_COUNT,
)
from swarmbench.core.folder import (
    EXC_MESSAGE as EXC_MESSAGE,
)
from swarmbench.core.folder import (
    EXC_NODES as EXC_NODES,
)
from swarmbench.core.folder import (
    EXC_TRACEBACK as EXC_TRACEBACK,
)
from swarmbench.core.folder import (
    EXCEPTIONS_CSV as EXCEPTIONS_CSV,
)
from swarmbench.core.folder import (
    FAIL_ERROR as FAIL_ERROR,
)
from swarmbench.core.folder import (
    FAIL_FIRST_SEEN as FAIL_FIRST_SEEN,
)
from swarmbench.core.folder import (
    FAIL_LAST_SEEN as FAIL_LAST_SEEN,
)
from swarmbench.core.folder import (
    FAIL_METHOD as FAIL_METHOD,
)
from swarmbench.core.folder import (
    FAIL_NAME as FAIL_NAME,
)
from swarmbench.core.folder import (
    FAIL_OCCURRENCES as FAIL_OCCURRENCES,
)
from swarmbench.core.folder import (
    FAILURE_COUNT as FAILURE_COUNT,
)
from swarmbench.core.folder import (
    FAILURES_CSV as FAILURES_CSV,
)
from swarmbench.core.folder import (
    FAILURES_PER_S as FAILURES_PER_S,
)
from swarmbench.core.folder import (
    HISTORY_CSV as HISTORY_CSV,
)
from swarmbench.core.folder import (
    LATENCY_WINDOWS_CSV as LATENCY_WINDOWS_CSV,
)
from swarmbench.core.folder import (
    LEGACY_ALIASES as LEGACY_ALIASES,
)
from swarmbench.core.folder import (
    MANIFEST as MANIFEST,
)
from swarmbench.core.folder import (
    MAX_RT as MAX_RT,
)
from swarmbench.core.folder import (
    MEDIAN_RT as MEDIAN_RT,
)
from swarmbench.core.folder import (
    MIN_RT as MIN_RT,
)
from swarmbench.core.folder import (
    NAME as NAME,
)
from swarmbench.core.folder import (
    P50 as P50,
)
from swarmbench.core.folder import (
    P90 as P90,
)
from swarmbench.core.folder import (
    P95 as P95,
)
from swarmbench.core.folder import (
    P99 as P99,
)
from swarmbench.core.folder import (
    P100 as P100,
)
from swarmbench.core.folder import (
    P999 as P999,
)
from swarmbench.core.folder import (
    REPORT_HTML as REPORT_HTML,
)
from swarmbench.core.folder import (
    REQUEST_COUNT as REQUEST_COUNT,
)
from swarmbench.core.folder import (
    RPS as RPS,
)
from swarmbench.core.folder import (
    STATS_CSV as STATS_CSV,
)
from swarmbench.core.folder import (
    TIMESTAMP as TIMESTAMP,
)
from swarmbench.core.folder import (
    TOTAL_AVG_RT as TOTAL_AVG_RT,
)
from swarmbench.core.folder import (
    TOTAL_FAILURE_COUNT as TOTAL_FAILURE_COUNT,
)
from swarmbench.core.folder import (
    TOTAL_MEDIAN_RT as TOTAL_MEDIAN_RT,
)
from swarmbench.core.folder import (
    TOTAL_REQUEST_COUNT as TOTAL_REQUEST_COUNT,
)

# Locust's columns and file names, re-exported: one import for every reader.
from swarmbench.core.folder import (
    TYPE as TYPE,
)
from swarmbench.core.folder import (
    USER_COUNT as USER_COUNT,
)

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
