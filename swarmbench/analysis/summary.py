"""Per-run and per-endpoint numbers: summary.csv, the settings table, the failures table.

Throughput is Locust's own "Requests/s" from *_stats.csv (requests / (last request - start)), so
every number here can be checked against the CSV a person opens. Percentiles and the max are over
the whole run: exact from the run's HDR histograms (exact.py) when the folder has them and they
hold every request Locust counted for the row, else Locust's cumulative ones (2 significant
digits); the `latency` column says which, per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import EXACT, ROUNDED, TABLE_COLUMNS, endpoint_histogram, table_values
from swarmbench.analysis.load import Run
from swarmbench.core import verdict as rules
from swarmbench.core.pacing import paces_itself

STATUS_UNKNOWN = "unknown"
"""summary.csv's status for a run whose run.json has none (written before the harness recorded
interruptions and lost workers) or that has no run.json: nothing says it was complete, nor that it
was not (such runs stay in scaling fits, as before; analysis/health.py)."""


OWN_WAIT = "the locustfile's own wait_time"
"""A group's pacing when every user class paced itself (run.json `pacing`: no wait went through the
--wait-time option): the option recorded in run.json is then not what the users did, so it neither
labels nor splits the group."""


def pacing_key(run: Run) -> str | None:
    """The --wait-time option, or OWN_WAIT when no user class used it (measured pacing)."""
    if paces_itself(run.meta.pacing):
        return OWN_WAIT
    return run.meta.wait_time


def run_status(run: Run) -> str:
    """run.json's status, or STATUS_UNKNOWN."""
    return run.meta.status or STATUS_UNKNOWN


def summarize(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per (run, endpoint), the Aggregated row included, in columns.SUMMARY_COLUMNS order."""
    frames = [_run_rows(run) for run in runs]
    if not frames:
        return pd.DataFrame(columns=C.SUMMARY_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    for col in (C.WORKERS, C.USERS, C.REPEAT):
        out[col] = out[col].astype("Int64")  # nullable: unknown without run.json
    return out[C.SUMMARY_COLUMNS]


def _run_rows(run: Run) -> pd.DataFrame:
    s = _with_exact(run)
    requests = s[C.REQUESTS].to_numpy(dtype=float)
    # A row with 0 requests has no failure ratio (NaN), rather than a misleading 0.
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(requests > 0, s[C.FAILURES].to_numpy(dtype=float) / requests, np.nan)
    return pd.DataFrame(
        {
            C.RUN_ID: run.run_id,
            C.USER_CLASS: run.user_class,
            C.WORKERS: run.workers,
            C.USERS: run.users,
            C.MODE: run.meta.mode,
            C.STATUS: run_status(run),
            C.REPEAT: run.meta.repeat,
            C.METHOD: s[C.METHOD],
            C.ENDPOINT_NAME: s[C.ENDPOINT_NAME],
            C.ENDPOINT: s[C.ENDPOINT],
            C.REQUESTS: s[C.REQUESTS],
            C.FAILURES: s[C.FAILURES],
            C.FAIL_RATIO: ratio,
            C.RPS_OUT: s[C.RPS_OUT],
            C.P50_MS: s[C.P50_MS],
            C.P90_MS: s[C.P90_MS],
            C.P95_MS: s[C.P95_MS],
            C.P99_MS: s[C.P99_MS],
            C.P999_MS: s[C.P999_MS],
            C.AVG_MS: s[C.AVG_MS],
            C.MAX_MS: s[C.MAX_MS],
            C.LATENCY: s[C.LATENCY],
        }
    )


def _with_exact(run: Run) -> pd.DataFrame:
    """The stats rows with p50 .. p99.9 and max from the histograms where they hold exactly the
    row's requests (a generator's lost windows would make part of the run look like all of it);
    Locust's numbers, labelled rounded, elsewhere. avg_ms stays Locust's (it sums unrounded times)."""
    s = run.stats.copy()
    s[C.LATENCY] = ROUNDED
    book = run.latency.book
    if book is None:
        return s
    cols = list(TABLE_COLUMNS.values())
    s[cols] = s[cols].astype(float)
    for i, (method, name, requests) in enumerate(
        zip(s[C.METHOD], s[C.ENDPOINT_NAME], s[C.REQUESTS], strict=True)
    ):
        hist = endpoint_histogram(book, method, name)
        if requests and hist.get_total_count() == requests:
            values = table_values(hist)
            s.iloc[i, [s.columns.get_loc(c) for c in cols]] = [values[c] for c in cols]
            s.iloc[i, s.columns.get_loc(C.LATENCY)] = EXACT
    return s
    for i, (method, name, requests) in enumerate(
        zip(s[C.METHOD], s[C.ENDPOINT_NAME], s[C.REQUESTS], strict=True)
    ):
        hist = endpoint_histogram(book, method, name)
        if requests and hist.get_total_count() == requests:
            for col, value in table_values(hist).items():
                s.loc[s.index[i], col] = value
            s.loc[s.index[i], C.LATENCY] = EXACT
    return s


def aggregated(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-run rows (Aggregated) of a summary frame."""
    return summary[summary[C.ENDPOINT_NAME] == C.AGGREGATED].reset_index(drop=True)


def target_cpu_util(run: Run) -> float | None:
    """Share of the target's CPUs it used during the run (run.json's target section), 0..1."""
    return rules.target_cpu_util(run.meta.target, run.meta.duration_s)


def settings_table(runs: Sequence[Run]) -> pd.DataFrame:
    """What was run: one row per run with run.json's settings (empty cells where it is missing)."""
    rows = []
    for run in runs:
        m = run.meta
        cpu = m.worker_cpu.mean_percent if m.worker_cpu else None
        rows.append(
            {
                C.RUN_ID: run.run_id,
                C.USER_CLASS: run.user_class,
                C.MODE: m.mode,
                C.WORKERS: run.workers,
                C.USERS: m.users,
                C.SPAWN_RATE: m.spawn_rate,
                C.RUN_TIME_S: m.run_time,
                C.WAIT_TIME: pacing_key(run),
                C.HOST: m.host,
                C.STORE: m.store,
                C.LOCUST_VERSION: m.locust_version,
                C.STARTED_AT: m.started_at,
                C.DURATION_S: m.duration_s,
                C.EXIT_CODE: m.exit_code,
                C.WORKER_CPU_MEAN: cpu,
                C.TARGET_CPU_UTIL: target_cpu_util(run),
                C.GIT_COMMIT: m.git_commit,
                C.FOLDER: str(run.folder),
            }
        )
    return pd.DataFrame(rows)


def failures_table(runs: Sequence[Run]) -> pd.DataFrame:
    """Every failure row of every run, most frequent first."""
    frames = [
        run.failures.assign(**{C.RUN_ID: run.run_id})
        for run in runs
        if run.failures is not None and len(run.failures)
    ]
    cols = [C.RUN_ID, C.ENDPOINT, C.ERROR, C.OCCURRENCES]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)[cols]
    return out.sort_values(C.OCCURRENCES, ascending=False, kind="stable").reset_index(drop=True)
