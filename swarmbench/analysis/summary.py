"""Per-run and per-endpoint numbers: summary.csv, the settings and failures tables, and thresholds
evaluated on a saved run folder.

Per-run and per-endpoint numbers: summary.csv, the settings table, the failures table.

Throughput is Locust's own "Requests/s" from *_stats.csv (requests / (last request - start)), so
every number here can be checked against the CSV a person opens. Percentiles and the max are over
the whole run: exact from the run's HDR histograms (exact.py) when the folder has them and they
hold every request Locust counted for the row, else Locust's cumulative ones (2 significant
digits); the `latency` column says which, per row.

Thresholds on a saved run folder (`python -m analysis checks RUN EXPR...`): the same grammar and
lines as a live run's (core/checks.py, core/checks.py).

Latency metrics come from the folder's HDR histograms (locust_latency_hdr.json) when run.json's
`latency` says they hold every request ("exact"); a folder from before them, or one whose
histograms missed requests, falls back to locust_stats.csv's rounded percentiles ("rounded")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import TABLE_COLUMNS, endpoint_histogram, table_values
from swarmbench.analysis.runs import Run
from swarmbench.core import bottleneck as rules
from swarmbench.core import folder
from swarmbench.core.bottleneck import paces_itself
from swarmbench.core.checks import AGGREGATED, EXACT, PERCENTILE_METRICS, ROUNDED, Check, Outcome
from swarmbench.core.exits import InputError, read_text
from swarmbench.core.figures import number
from swarmbench.core.manifest import RunManifest
from swarmbench.core.runfolder import read_table
from swarmbench.history.record import METRICS as STORED_METRICS
from swarmbench.history.store import Store, open_store
from swarmbench.latency.histogram import LatencyBook, exact_value

# --- summary.csv, the settings and failures tables ------------------------------------------------

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


# --- thresholds on a saved run folder (`checks`) --------------------------------------------------

MAX_COLUMN = "100%"
"""locust_stats.csv's largest response time, rounded like its percentiles (its Max column is not)."""


def exact_book(run_dir: Path) -> LatencyBook | None:
    """The run's histograms, when run.json says they hold every request; None otherwise (rounded).
    InputError naming the file (and row) when they are there but unreadable."""
    manifest = RunManifest.read(run_dir / folder.MANIFEST)
    latency = manifest.latency
    if latency is None or not latency.exact or folder.LATENCY_HDR_JSON not in latency.files:
        return None
    return LatencyBook.read(run_dir / folder.LATENCY_HDR_JSON)


def stats_rows(run_dir: Path) -> list[dict[str, str]]:
    path = run_dir / folder.STATS_CSV
    read_text(path, "stats CSV")  # InputError naming the file: unreadable, not UTF-8 or empty
    table = read_table(path)  # core's one reader: a cut-off row is named by its line
    for line, row in table.numbered():
        if any(row.get(c) is None for c in (C.NAME, C.REQUEST_COUNT, C.FAILURE_COUNT)):
            raise InputError(path, f"row {line}: truncated")
    return list(table.rows)


def evaluate_folder(run_dir: Path, checks: list[Check]) -> list[Outcome]:
    book = exact_book(run_dir)
    rows = stats_rows(run_dir)
    return [_evaluate(check, rows, book, run_dir) for check in checks]


def _evaluate(check: Check, rows: list[dict[str, str]], book: LatencyBook | None, run_dir: Path) -> Outcome:
    mine = [r for r in rows if r[C.NAME] == check.name and (check.name != AGGREGATED or not r[C.TYPE])]
    requests = sum(_number(r, C.REQUEST_COUNT, run_dir) for r in mine)
    if not mine:
        return Outcome(check, None, False, f"no request named {check.name!r} in this run")
    if requests == 0:
        return Outcome(check, None, False, f"no requests recorded for {check.name!r}")
    if check.unit != "ms":
        if check.metric == "fail_ratio":
            value = round(sum(_number(r, C.FAILURE_COUNT, run_dir) for r in mine) / requests, 6)
        else:
            value = round(sum(_number(r, C.RPS, run_dir) for r in mine), 3)
        return Outcome(check, value, check.passes(value))
    exact = exact_value(book, check.name, check.metric, int(requests)) if book is not None else None
    if exact is not None:
        return Outcome(check, exact, check.passes(exact), source=EXACT)
    if len(mine) > 1:  # Locust's rounded percentiles of two request types do not add up
        return Outcome(check, None, False, f"{check.name!r} has several request types and no histograms")
    column = MAX_COLUMN if check.metric == "max" else f"{PERCENTILE_METRICS[check.metric]:g}%"
    value = _number(mine[0], column, run_dir)
    return Outcome(check, value, check.passes(value), source=ROUNDED)


def _number(row: dict[str, str], column: str, run_dir: Path) -> float:
    value = number(row.get(column))
    if value is None:
        raise InputError(run_dir / folder.STATS_CSV, f"{row.get(C.NAME)!r}: no number in {column!r}")
    return value


# --- the run history as a frame ----------------------------------------------------------------------

HISTORY_RUN_COLUMNS = ("run_id", "started_at", "git_commit", "branch", "host", "testbed", "fingerprint",
                       "precision", "status")  # fmt: skip
"""The run's identity columns of history_frame, before the per-name figures."""


def history_frame(store: str | Path | Store, branch: str | None = None) -> pd.DataFrame:
    """The run history (a store or its SQLite path / postgresql:// URL) for the notebook: one row per
    run and request name (Aggregated too), oldest run first, with the run's identity and the stored
    figures (requests, failures, rps, p50_ms ... max_ms). BRANCH: that branch's runs only."""
    own = not isinstance(store, Store)
    opened = open_store(store) if own else store
    try:
        rows = []
        for config in opened.configurations():
            if branch is not None and config.branch != branch:
                continue
            series = opened.series(config.fingerprint, config.host, config.testbed, config.branch,
                                   complete_only=False)  # fmt: skip
            for (type_, name), per in series.values.items():
                for i, run in enumerate(series.runs):
                    ident = {c: getattr(run, c) for c in HISTORY_RUN_COLUMNS}
                    rows.append({**ident, C.METHOD: type_, C.ENDPOINT_NAME: name,
                                 **{m: per[m][i] for m in STORED_METRICS}})  # fmt: skip
    finally:
        if own:
            opened.close()
    columns = [*HISTORY_RUN_COLUMNS, C.METHOD, C.ENDPOINT_NAME, *STORED_METRICS]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["started_at", C.METHOD, C.ENDPOINT_NAME], kind="stable").reset_index(drop=True)
