"""Throughput over time from Locust's cumulative counts: the one place every per-time rate comes from.

Locust's history `Requests/s` is a trailing average of the per-second counts from ~t-12 s to t-2 s:
it lags every change by several seconds (a run at full rate from its first second reads as a 10 s
warm-up). The history's `Total Request Count` is exact but arrives in chunks: a worker reports every
3 s (locust.runners.WORKER_REPORT_INTERVAL), so per-second differences of a distributed run alternate
0 / 3 s worth. Differences of the counts over a window one report interval long (or a multiple)
hold exactly one report per worker, whatever the phase: that is the series here, per endpoint and
Aggregated, each row labelled with its window (t_s - window_s, t_s].

The report interval is inferred from the data (the period at which the per-second count changes
repeat), not assumed: 1 s for a local run, 3 s for a distributed one. The first window (holding each
worker's first, partial report) and the last (their final flush at stop) are flagged `partial`.
Tiling the run with windows means sum(rps x window_s) == the final count, exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import EXACT, ROUNDED, series_percentiles, window_offset_s
from swarmbench.analysis.runs import Run

MAX_POINTS = 400
"""Windows per line at most: ~ the pixel width of a report chart. Longer runs get wider windows (a
multiple of the report interval), so a 55-hour history still draws in well under a second."""
MAX_REPORT_INTERVAL_S = 10
"""Longest report interval looked for. Locust's is 3 s; a 10 s cap keeps a short run's handful of
per-second differences from being read as one long period."""
PERIOD_TOLERANCE = 1.5
"""A window length whose periodicity error is within this factor (plus PERIOD_NOISE) of the best
candidate's is as good: pick the shortest such, so noise never picks 9 s over 3 s."""
PERIOD_NOISE = 0.1
"""...plus this absolute share of the mean per-second count: counts of a local run vary ~5-30 %
second to second; a staggered distributed run's per-second differences vary by 50-300 %."""
PCT_WINDOW_S = 10
"""Locust's window for the history percentiles with --csv-full-history
(locust.stats.CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW). Windows up to this long take Locust's value at
their end; longer ones the mean of their rows."""
PERCENTILE_COLS = (C.P50_MS, C.P95_MS, C.P99_MS)


# --- Locust's rounding of response times (locust.stats.bucket_response_time) --------------------


def resolution_ms(value: float) -> float:
    """The step between the response times Locust can report near VALUE ms: percentiles come from
    rounded response times (1 ms below 100 ms, 10 ms to 1 s, 100 ms to 10 s, 1 s above)."""
    if value < 100:
        return 1.0
    if value < 1000:
        return 10.0
    return 100.0 if value < 10000 else 1000.0


def resolution_note(values: Sequence[float]) -> str:
    """'resolution 1 ms' or 'resolution 1 ms below 100 ms, 10 ms above' for the range plotted."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return "resolution 1 ms below 100 ms, 10 ms to 1 s, 100 ms above"
    tiers = sorted({resolution_ms(v) for v in finite})
    bounds = {1.0: "below 100 ms", 10.0: "100 ms–1 s", 100.0: "1–10 s", 1000.0: "above 10 s"}
    if len(tiers) == 1:
        return f"Locust's resolution here {tiers[0]:g} ms"
    return "Locust's resolution " + ", ".join(f"{t:g} ms {bounds[t]}" for t in tiers)


# --- the per-second grid -------------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """One endpoint's history on whole seconds t0..tN: counts carried forward over missing seconds
    (0 before the endpoint's first row), percentiles NaN there. `t` is an int array."""

    t: np.ndarray
    requests: np.ndarray
    failures: np.ndarray
    users: np.ndarray
    pct: dict[str, np.ndarray]

    def index(self, t: int) -> int:
        return int(t - self.t[0])


def grids(history: pd.DataFrame) -> dict[str, Grid]:
    """Per endpoint (Aggregated included) the history on one grid of whole seconds; of two rows in
    one second the later wins. Works on positions and numpy arrays: no copy of a 1M-row frame.

    When the first row already counts requests (made in the second before it), the grid starts one
    second earlier with zero counts, so every request lies inside some window."""
    t_all = history[C.TIME_S].to_numpy().astype(np.int64)
    rows_of = history.groupby(C.ENDPOINT, observed=True, sort=False).indices
    agg_rows = rows_of.get(C.AGGREGATED, np.array([], dtype=np.int64))
    first_count = (
        history[C.TOTAL_REQUESTS].to_numpy()[agg_rows[np.argmin(t_all[agg_rows])]] if len(agg_rows) else 0
    )
    start = int(t_all.min()) - (1 if first_count > 0 else 0)
    t = np.arange(start, int(t_all.max()) + 1, dtype=np.int64)
    users = _carried(_on(history, C.USERS, agg_rows, t_all, start, len(t)))
    out: dict[str, Grid] = {}
    for endpoint, rows in rows_of.items():

        def on(col: str, rows=rows) -> np.ndarray:
            return _on(history, col, rows, t_all, start, len(t))

        out[str(endpoint)] = Grid(
            t=t,
            requests=_carried(on(C.TOTAL_REQUESTS)),
            failures=_carried(on(C.TOTAL_FAILURES)),
            users=users,
            pct={c: on(c) for c in PERCENTILE_COLS},
        )
    return out


def _on(frame: pd.DataFrame, col: str, rows: np.ndarray, t_all: np.ndarray, start: int, n: int) -> np.ndarray:
    """COL of ROWS placed at their seconds on a grid of N seconds from START (NaN where none)."""
    out = np.full(n, np.nan)
    if col in frame and len(rows):
        order = rows[np.argsort(t_all[rows], kind="stable")]  # file order kept within a second
        ts = t_all[order]
        last = np.append(ts[1:] != ts[:-1], True)  # the later of two rows in one second wins
        out[ts[last] - start] = frame[col].to_numpy(dtype=float)[order[last]]
    return out


def _carried(values: np.ndarray) -> np.ndarray:
    """Cumulative counts over missing seconds: the last value carried forward, 0 before the first."""
    known = np.where(np.isnan(values), 0, np.arange(len(values)))
    np.maximum.accumulate(known, out=known)
    out = values[known]
    return np.where(np.isnan(out), 0.0, out)


# --- the report interval -------------------------------------------------------------------------


def report_interval_s(counts: np.ndarray) -> int:
    """Seconds between one worker's reports, from the cumulative COUNTS per second: the shortest
    lag at which the per-second differences repeat (d[t] ~ d[t-W]), and at least the longest usual
    gap between two changes. 1 for a local run (counts change every second)."""
    d = np.diff(counts)
    changed = np.flatnonzero(d > 0)
    if len(changed) < 2:
        return 1
    active = d[changed[0] : changed[-1] + 1]
    gaps = np.diff(changed)
    least = min(MAX_REPORT_INTERVAL_S, math.ceil(np.percentile(gaps, 90)))
    top = min(MAX_REPORT_INTERVAL_S, len(active) - 1)
    if top <= least:  # too short to see a repeat: the spacing of the changes is all there is
        return least
    mean = float(active.mean())
    candidates = {w: float(np.median(np.abs(active[w:] - active[:-w]))) / mean for w in range(least, top + 1)}
    good = min(candidates.values()) * PERIOD_TOLERANCE + PERIOD_NOISE
    return min(w for w, e in candidates.items() if e <= good)


# --- windows ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Windows:
    interval_s: int  # the report interval inferred
    width_s: int  # the full windows' length: the interval, or a multiple of it for long runs
    bounds: list[tuple[int, int, bool]]  # (start, end, partial), contiguous, in time order


def windows(agg: Grid, max_points: int = MAX_POINTS) -> Windows:
    """Windows (start, end] tiling the run on the Aggregated grid.

    Full windows start once every worker has sent its first report (the last count change within one
    interval of the first) and stop at the last second with users before the stop; the head window
    before them and the tail after them (the final flush) are partial."""
    t, c = agg.t, agg.requests
    changes = t[1:][np.diff(c) > 0]
    if len(changes) == 0:
        return Windows(1, 1, _tile(int(t[0]), int(t[-1]), _width(1, t, max_points)))
    first, last_change = int(changes[0]), int(changes[-1])
    stopped = t[(t > first) & (agg.users <= 0)]
    limit = int(stopped[0]) - 1 if len(stopped) else int(t[-1])
    # The final flush at stop comes off-beat: the interval is read from the seconds before it.
    interval = report_interval_s(c[: agg.index(limit) + 1])
    width = _width(interval, t, max_points)
    s = int(changes[changes < first + interval].max())
    head_start = max(int(t[0]), s - interval)
    bounds = _tile(int(t[0]), head_start, width) + [(head_start, s, True)]
    end = s
    while end + width <= limit:
        bounds.append((end, end + width, False))
        end += width
    tail_end = last_change if len(stopped) else int(t[-1])
    if tail_end > end:
        if tail_end - end < interval and not bounds[-1][2]:
            # Shorter than one report interval, a tail would squeeze up to a whole report (the final
            # flush) into a second or two: a spike. It joins the window before it instead.
            end = bounds.pop()[0]
        bounds.append((end, tail_end, True))
    return Windows(interval, width, bounds)


def _width(interval: int, t: np.ndarray, max_points: int) -> int:
    span = int(t[-1] - t[0]) + 1
    return interval * math.ceil(max(1, math.ceil(span / max_points)) / interval)


def _tile(start: int, end: int, width: int) -> list[tuple[int, int, bool]]:
    """Full windows from START to END, the first one shorter when the span is no multiple."""
    out = []
    while end > start:
        out.append((max(start, end - width), end, False))
        end -= width
    return out[::-1]


def rate(grid: Grid, start: int, end: int, what: str = "requests") -> float:
    """Requests (or failures) per second in (start, end]: the difference of the cumulative counts."""
    counts = grid.requests if what == "requests" else grid.failures
    return float(counts[grid.index(end)] - counts[grid.index(start)]) / (end - start)


# --- the series -------------------------------------------------------------------------------------


def run_grids(run: Run) -> dict[str, Grid] | None:
    """grids() of the run's history, computed once per run (the series and the knee both need them)."""
    h = run.history
    if h is None or h.empty or not (h[C.ENDPOINT] == C.AGGREGATED).any():
        return None
    if "grids" not in run.derived:
        run.derived["grids"] = grids(h)
    return run.derived["grids"]


def run_series(run: Run, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """The run's series, computed once per run (the report's chart and timeseries.csv share it)."""
    key = ("series", max_points)
    if key not in run.derived:
        run.derived[key] = _run_series(run, max_points)
    return run.derived[key]


def _run_series(run: Run, max_points: int) -> pd.DataFrame:
    """One row per (endpoint, window), Aggregated first; columns as timeseries.csv without run_id.
    Percentiles: exact when the run has its windows file (the 1 s windows inside each window, merged),
    else Locust's history values (`latency` says which). attrs: interval_s, window_s, pct_window
    ('exact', '10s' or 'cumulative'), masked (how many rounded values exceeded the run's max and
    were dropped, per column)."""
    h = run.history
    by_endpoint = run_grids(run)
    if by_endpoint is None:
        return pd.DataFrame(columns=C.TIMESERIES_COLUMNS[1:])
    agg = by_endpoint[C.AGGREGATED]
    win = windows(agg, max_points)
    if not win.bounds:  # one history row (Locust < 2.16 flushes every 10 s): no window to measure
        return pd.DataFrame(columns=C.TIMESERIES_COLUMNS[1:])
    exact = _exact_series(run, [(start, end) for start, end, _ in win.bounds])
    max_ms = {} if exact is not None else dict(zip(run.stats[C.ENDPOINT], run.stats[C.MAX_MS], strict=True))
    frames, masked = [], {c: 0 for c in PERCENTILE_COLS}
    for endpoint in [C.AGGREGATED, *(e for e in by_endpoint if e != C.AGGREGATED)]:
        frame = _endpoint_series(by_endpoint[endpoint], win)
        frame.insert(0, C.ENDPOINT, endpoint)
        frame[C.LATENCY] = ROUNDED if exact is None else EXACT
        if exact is not None:
            frame = _with_exact(frame, exact[exact[C.ENDPOINT] == endpoint])
        cap = max_ms.get(endpoint)
        if cap is not None and not pd.isna(cap):
            for col in PERCENTILE_COLS:
                over = frame[col] > cap
                masked[col] += int(over.sum())
                frame[col] = frame[col].mask(over)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out.attrs = {
        "interval_s": win.interval_s,
        "window_s": win.width_s,
        "pct_window": EXACT if exact is not None else h.attrs.get("window", "10s"),
        "masked": masked,
    }
    return out


def _exact_series(run: Run, bounds: list[tuple[int, int]]) -> pd.DataFrame | None:
    """Exact p50/p95/p99 per endpoint and window from the run's windows file (None without one)."""
    windows = run.latency.windows
    if windows is None:
        return None
    offset = window_offset_s(run.history, run.meta.started_at)
    return series_percentiles(windows, run.latency.windows_path or "windows", bounds, offset)


def _with_exact(frame: pd.DataFrame, exact: pd.DataFrame) -> pd.DataFrame:
    """FRAME's percentile columns replaced by EXACT's, window by window (NaN: no sample in it)."""
    values = exact.set_index(C.TIME_S)
    for col in PERCENTILE_COLS:
        frame[col] = frame[C.TIME_S].map(values[col]).astype(float)
    return frame


def _endpoint_series(grid: Grid, win: Windows) -> pd.DataFrame:
    rows = []
    for start, end, partial in win.bounds:
        i, j = grid.index(start), grid.index(end)
        pct = {c: _window_pct(v[i + 1 : j + 1], end - start) for c, v in grid.pct.items()}
        rows.append(
            {
                C.TIME_S: end,
                C.WINDOW_S: end - start,
                C.USERS: int(grid.users[i + 1 : j + 1].max()),  # the load that made the window's traffic
                C.RPS_OUT: rate(grid, start, end),
                C.FAIL_PER_S_WINDOW: rate(grid, start, end, "failures"),
                **pct,
                C.PARTIAL: partial,
            }
        )
    return pd.DataFrame(rows, columns=C.TIMESERIES_COLUMNS[2:-1])


def _window_pct(values: np.ndarray, width: int) -> float:
    """Locust's own value at the window's end when the window is no longer than Locust's; else the
    mean of the window's rows (a longer window would otherwise skip most of them)."""
    if width <= PCT_WINDOW_S:
        return float(values[-1])
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else float("nan")


def timeseries_table(runs: Sequence[Run]) -> pd.DataFrame:
    """timeseries.csv: every run's series, one row per (run, endpoint, window)."""
    frames = []
    for run in runs:
        series = run_series(run)
        if not series.empty:
            frames.append(series.assign(**{C.RUN_ID: run.run_id})[C.TIMESERIES_COLUMNS])
    if not frames:
        return pd.DataFrame(columns=C.TIMESERIES_COLUMNS)
    return pd.concat(frames, ignore_index=True)
