"""The words run.json uses for how a run went: its status, who started it, and its event kinds.

Named once here (standard library, no imports): the plugin decides them (plugin/health.py), the
exit codes follow them (core/exits.py), the runner and the analysis read them back.
"""

from __future__ import annotations

from swarmbench.core import exits

COMPLETE = "complete"
"""Ran as asked."""
INTERRUPTED = "interrupted"
"""Stopped by a signal (Ctrl-C, SIGTERM, the stack stopped) before its end."""
DEGRADED = "degraded"
"""A load generator went missing or quit early, fewer than expected were connected for part of the
run, or the target stopped answering for part of it."""
FAILED = "failed"
"""Nothing or almost nothing was served."""

STATUSES = (COMPLETE, INTERRUPTED, DEGRADED, FAILED)
"""run.json `status` (plugin/health.py decides; docs/results.md "Run status")."""

HEADLESS = "headless"
UI = "ui"
STARTED_FROM = (HEADLESS, UI)
"""Who started the run: a headless command line, or Start in the web UI (each Start->Stop is a run)."""

LOCAL = "local"
DISTRIBUTED = "distributed"
PROCESSES = "processes"
MODES = (LOCAL, DISTRIBUTED, PROCESSES)
"""local: one process; distributed: a master + workers; processes: Locust's --processes N."""

# Event kinds (run.json `events[].kind`), in the order a run meets them.
WORKER_JOINED = "worker_joined"
USERS_SPAWNED = "users_spawned"
WORKER_MISSING = "worker_missing"
WORKER_REJOINED = "worker_rejoined"
WORKER_QUIT = "worker_quit"
SIGNAL = "signal_received"
TARGET_UNREACHABLE = "target_unreachable"
TARGET_BACK = "target_answering"
STATS_RESET = "stats_reset"
RUN_END = "run_end"
EVENT_KINDS = (
    WORKER_JOINED,
    USERS_SPAWNED,
    WORKER_MISSING,
    WORKER_REJOINED,
    WORKER_QUIT,
    SIGNAL,
    TARGET_UNREACHABLE,
    TARGET_BACK,
    STATS_RESET,
    RUN_END,
)


def run_exit_code(run_status: str, signum: int | None, allow_degraded: bool, base: int) -> int:
    """The exit code of a run with run.json STATUS; BASE is what Locust and the thresholds decided
    (0, 1, 3, ...). SIGNUM is the signal that interrupted it, if any."""
    if run_status == INTERRUPTED and signum:
        return exits.interrupted(signum)
    if run_status == FAILED:
        return exits.RUN_FAILED
    if run_status == DEGRADED and not allow_degraded:
        return exits.DEGRADED
    return base
