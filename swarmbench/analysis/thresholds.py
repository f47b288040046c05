"""Thresholds on a saved run folder (`python -m analysis checks RUN EXPR...`): the same grammar and
lines as a live run's (core/checks.py, core/outcome.py).

Latency metrics come from the folder's HDR histograms (locust_latency_hdr.json) when run.json's
`latency` says they hold every request ("exact"); a folder from before them, or one whose
histograms missed requests, falls back to locust_stats.csv's rounded percentiles ("rounded").
"""

from __future__ import annotations

import csv
from pathlib import Path

from swarmbench.analysis import columns as C
from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED, PERCENTILE_METRICS, Check
from swarmbench.core.errors import InputError, read_text
from swarmbench.core.manifest import RunManifest
from swarmbench.core.outcome import EXACT, ROUNDED, Outcome
from swarmbench.hdr import LatencyBook, exact_value

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
    rows = list(csv.DictReader(read_text(path, "stats CSV").splitlines()))
    for number, row in enumerate(rows, 2):
        if None in row or any(row.get(c) is None for c in (C.NAME, C.REQUEST_COUNT, C.FAILURE_COUNT)):
            raise InputError(path, f"row {number}: truncated")
    return rows


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
    try:
        return float(row[column])
    except (KeyError, TypeError, ValueError):
        raise InputError(
            run_dir / folder.STATS_CSV, f"{row.get(C.NAME)!r}: no number in {column!r}"
        ) from None
