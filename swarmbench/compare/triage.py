"""Triage: which regressions of a branch stand un-triaged (`swarmbench trend --check`, exit 3 while
any does; `swarmbench history triage` lists them). A regression never becomes the baseline by
itself: it stays open until a person accepts the new level (`swarmbench history accept RUN
--reason TEXT`, recorded in the store) or it is fixed (the level is back).

Per configuration, request name and metric (the trend's series, on the log scale), a regression is
open when either holds:

- **a change point for the worse stands**: a change point of the trend (compare/trend.py: its
  magnitude floor and false discovery rate) after the newest accepted run, for the worse, and the
  current level still worse than the anchor by at least the magnitude floor;
- **the level moved**: the current level (the runs since the newest change point, at most
  CURRENT_RUNS) is worse than the anchor by at least the floor, and significantly: one-sided
  z = log-ratio / (s x sqrt(1/n_current + 1/n_anchor)), s the series' robust noise (trend.robust_noise:
  the trimmed run-to-run differences, blind to one bad run and to the drift itself; pooled over the
  metric's names where theirs are alike: _spreads), its p
  Bonferroni-corrected over the configuration's series (CHECK_ALPHA for all of them together), on
  Student's t with CHECK_DF_SHARE of the differences as degrees of freedom (the trimming's cost).
  This is what catches a creeping drift: change points absorb it a step at a time, a level compared
  with a fixed anchor does not.

The anchor: with `--anchor RUN` (a pinned release) the ANCHOR_RUNS runs ending at RUN; else the
segment before the oldest open change point for the worse (back to the change point before it, or
the newest accepted run); else the first ANCHOR_RUNS runs since the newest accepted run (since the
first run, when none is).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from swarmbench.compare.trend import (
    HIGHER_IS_BETTER,
    MAX_PVALUE,
    NOISE_KEEP,
    TREND_MAGNITUDE,
    TREND_METRICS,
    TREND_NOISES,
    WINDOW,
    Change,
    column,
    configurations,
    log_scale,
    point_json,
    robust_noise,
    run_groups,
    series_changes,
    t_two_sided_p,
    trend_method,
)
from swarmbench.history.store import Configuration, HistoryError, RunRecord, Series, Store

ANCHOR_RUNS = 10
"""Runs of the default anchor (and of a pinned one, ending at the RUN given): the gate's baseline
size; a level known from 10 runs to ~noise/3."""

CURRENT_RUNS = 5
"""The current level: the last 5 runs (since the newest change point, if that is later). Fewer
react sooner to a step, more see a smaller drift: at 3 % noise a drift of +1 % a run is caught
about 9 runs in (bench/bench_trend_truth.py)."""

CHECK_ALPHA = 0.05
"""The level test's false-alarm rate for a whole configuration (Bonferroni over its series)."""

CHECK_DF_SHARE = 0.6
"""The robust noise's degrees of freedom as a share of the run-to-run differences it comes from
(trend.NOISE_KEEP's trimmed differences: 17.0 from 29 under normal noise)."""


POOL_MIN_NAMES = 3
"""The names (request names and Aggregated) a metric needs before their noise is pooled (_spreads)."""

POOL_RATIO = 1.3
"""A series whose own noise is within this factor of the pooled one is taken to share it (the
larger of the two, with the pooled degrees of freedom)."""

POOL_SHARE = 0.64
"""The pooled noise's degrees of freedom as a share of its names' together: a median's efficiency
against a mean (2/pi)."""


@dataclass(frozen=True)
class Regression:
    """One open regression of one series: why (`change point` or `level`), the first run of it (the
    change point's run, or the first run after the anchor), the anchor's first and last runs, the
    two levels (geometric means) and the change in % for the worse."""

    config: Configuration
    type: str
    name: str
    metric: str
    why: str
    since: RunRecord
    anchor: tuple[RunRecord, RunRecord]
    anchor_level: float
    current_level: float
    change_pct: float
    pvalue: float | None


def find_anchor(store: Store, config: Configuration, run: str) -> RunRecord:
    """The run named RUN (its run_id or run_key) among CONFIG's; HistoryError when there is none."""
    for key in ("run_key", "run_id"):
        found = store.runs(**{key: run}, fingerprint=config.fingerprint, host=config.host,
                           testbed=config.testbed, branch=config.branch)  # fmt: skip
        if found:
            return found[-1]
    raise HistoryError(f"--anchor {run}: no such run of branch {config.branch} in {store.where}")


def _holds(store: Store, config: Configuration, run: str) -> bool:
    try:
        find_anchor(store, config, run)
    except HistoryError:
        return False
    return True


def check(
    store: Store,
    config: Configuration,
    *,
    last: int | None = None,
    anchor: str | None = None,
    metrics: Sequence[str] = TREND_METRICS,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    magnitude: float | None = None,
    series: Series | None = None,
) -> tuple[list[Change], list[Regression]]:
    """CONFIG's change points (trend.trend) and its open regressions (the module's rules), from one
    read of its series (SERIES: that read, its LAST runs of METRICS, when the caller has it already).
    ANCHOR: a run pinned as the reference (run_id or run_key)."""
    if series is None:
        series = store.series(config.fingerprint, config.host, config.testbed, config.branch,
                              metrics=metrics, last=last)  # fmt: skip
    changes = series_changes(series, metrics, window=window, max_pvalue=max_pvalue, magnitude=magnitude)
    runs = series.runs
    if not runs:
        return changes, []
    accepted = [store.runs(run_key=k)[0] for k in store.accepted(config.fingerprint, config.host,
                                                                  config.testbed, config.branch)]  # fmt: skip
    newest = max((r.started_at for r in accepted), default=None)
    acc = max((i for i, r in enumerate(runs) if newest is not None and r.started_at <= newest), default=-1)
    pinned = None
    if anchor is not None:
        at = find_anchor(store, config, anchor)
        pinned = max((i for i, r in enumerate(runs) if r.started_at <= at.started_at), default=-1)
        if pinned < 0:
            raise HistoryError(f"--anchor {anchor}: older than the runs looked at (--last {last})")
    by_series: dict[tuple[str, str, str], list[Change]] = {}
    for c in changes:
        by_series.setdefault((c.type, c.name, c.metric), []).append(c)
    n_series = max(1, len(series.values) * len(metrics))
    spreads = _spreads(series, metrics)
    out = []
    for type_, name in sorted(series.values):
        for metric in metrics:
            y = column(series, (type_, name), metric)
            changed = by_series.get((type_, name, metric), [])
            spread = spreads[(type_, name, metric)]
            found = _open(y, changed, acc, pinned, metric, n_series, magnitude, spread)
            if found is not None:
                why, since, (a0, a1), levels, p = found
                change = (levels[1] / levels[0] - 1) * 100 if levels[0] else math.inf
                out.append(Regression(config, type_, name, metric, why, runs[since], (runs[a0], runs[a1]),
                                      levels[0], levels[1], change, p))  # fmt: skip
    return changes, out


def _spreads(series: Series, metrics: Sequence[str]) -> dict[tuple[str, str, str], tuple[float, float]]:
    """Per series, the level test's noise and its degrees of freedom: the series' own robust noise,
    or where that is within POOL_RATIO of the median of the configuration's names for the metric,
    the larger of the two with POOL_SHARE of the names' degrees of freedom together. Where the names'
    noise is alike, an own estimate that came out low by chance (what makes a false alarm) is
    replaced by the better-known pooled one, and a high one keeps its value but loses its few
    degrees of freedom (what costs power: 92 % -> 97 % of single-series drifts caught in time); a
    name noisier than the rest keeps its own noise and degrees of freedom (the pooling never lowers
    a series' noise)."""
    own: dict[tuple[str, str, str], tuple[float, float]] = {}
    for type_, name in series.values:
        for metric in metrics:
            x = log_scale(column(series, (type_, name), metric))
            finite = int(np.isfinite(x).sum())
            own[(type_, name, metric)] = (robust_noise(x), max(1.0, CHECK_DF_SHARE * (finite - 2)))
    out = dict(own)
    for metric in metrics:
        mine = {k: v for k, v in own.items() if k[2] == metric and math.isfinite(v[0])}
        if len(mine) < POOL_MIN_NAMES:
            continue
        pooled = float(np.median([v[0] for v in mine.values()]))
        df = POOL_SHARE * sum(v[1] for v in mine.values())
        for k, (noise, _) in mine.items():
            if noise <= POOL_RATIO * pooled:
                out[k] = (max(noise, pooled), df)
    return out


def _open(
    y: np.ndarray,
    changes: list[Change],
    accepted: int,
    pinned: int | None,
    metric: str,
    n_series: int,
    magnitude: float | None,
    spread: tuple[float, float],
) -> tuple[str, int, tuple[int, int], tuple[float, float], float | None] | None:
    """One series' open regression, if any: (why, its first run, the anchor's first and last run,
    (anchor level, current level), the level test's p or None). SPREAD: the level test's noise and
    degrees of freedom (_spreads)."""
    x = log_scale(y)
    logged = x is not y
    finite = np.flatnonzero(np.isfinite(x))
    if len(finite) < 2:
        return None
    noise = robust_noise(x)
    floor = magnitude if magnitude is not None else max(TREND_MAGNITUDE, TREND_NOISES * noise)
    if not math.isfinite(floor):
        floor = TREND_MAGNITUDE
    worse_sign = -1.0 if metric in HIGHER_IS_BETTER else 1.0
    start = pinned if pinned is not None else accepted
    points = sorted(c.point.index for c in changes)
    open_points = [c.point.index for c in changes if c.worse and c.point.index > start]
    if pinned is not None:
        anchor = finite[finite <= pinned][-ANCHOR_RUNS:]
    elif open_points:
        c0 = open_points[0]
        begin = max([max(accepted, 0), *(i for i in points if i < c0)])
        anchor = finite[(finite >= begin) & (finite < c0)]
    else:
        anchor = finite[finite >= max(accepted, 0)][:ANCHOR_RUNS]
    newest = max(points, default=0)
    current = finite[finite >= newest][-CURRENT_RUNS:]
    if len(anchor):
        current = current[current > anchor[-1]]
    if not len(anchor) or not len(current):
        return None
    a, c = x[anchor], x[current]
    gap = float(c.mean() - a.mean()) if logged else _log_ratio(float(c.mean()), float(a.mean()))
    levels = (
        (float(np.exp(a.mean())), float(np.exp(c.mean()))) if logged else (float(a.mean()), float(c.mean()))
    )
    worse_by = worse_sign * gap  # log-ratio for the worse
    if not math.isfinite(worse_by) or worse_by < math.log1p(floor):
        return None
    if open_points:  # the change point says where; its test was the trend's
        return "change point", open_points[0], (int(anchor[0]), int(anchor[-1])), levels, None
    sd, df = spread
    if not (sd > 0) or not logged:
        return None
    z = worse_by / (sd * math.sqrt(1 / len(c) + 1 / len(a)))
    p = t_two_sided_p(z, max(1, round(df))) / 2
    if p * n_series > CHECK_ALPHA:
        return None
    since = int(finite[finite > anchor[-1]][0])  # the first run after the anchor
    return "level", since, (int(anchor[0]), int(anchor[-1])), levels, p


def _log_ratio(new: float, old: float) -> float:
    return math.log(new / old) if new > 0 and old > 0 else math.nan


def check_json(
    store: Store,
    branch: str = "main",
    last: int | None = None,
    *,
    anchor: str | None = None,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    magnitude: float | None = None,
    found: list[tuple[Configuration, Series]] | None = None,
) -> dict:
    """trend_json's answer (compare/trend.py) with `open`: every open regression of BRANCH, and
    `accepted`: the decisions recorded for its runs. FOUND: trend_series' answer for BRANCH and
    LAST, queried here when not given (`trend --check` has read it for its page already: a second
    read of 10,000 runs costs ~0.4 s)."""
    points, regressions = [], []
    pairs: list[tuple[Configuration, Series | None]] = (
        list(found) if found is not None else [(c, None) for c in configurations(store, branch)]
    )
    configs = [c for c, _ in pairs]
    pinned = {(c.fingerprint, c.host, c.testbed) for c in configs if anchor and _holds(store, c, anchor)}
    if anchor and not pinned:
        raise HistoryError(f"--anchor {anchor}: no such run of branch {branch} in {store.where}")
    for config, series in pairs:  # a pinned run is one configuration's: the others keep their own anchor
        mine = anchor if (config.fingerprint, config.host, config.testbed) in pinned else None
        changes, opened = check(store, config, last=last, anchor=mine, window=window, max_pvalue=max_pvalue,
                                magnitude=magnitude, series=series)  # fmt: skip
        points += [point_json(config, c) for c in changes]
        regressions += [regression_json(r) for r in opened]
    decisions = [{"run_id": d.run.run_id, "run_key": d.run.run_key, "decision": d.decision,
                  "reason": d.reason, "decided_at": d.decided_at, "decided_by": d.decided_by,
                  "fingerprint": d.run.fingerprint, "host": d.run.host, "testbed": d.run.testbed}
                 for d in store.decisions(branch=branch)]  # fmt: skip
    method = trend_method(window, max_pvalue, magnitude)
    return {"store": store.where, "branch": branch, "method": method, "check_method": CHECK_METHOD,
            "anchor": anchor, "change_points": points, "runs": run_groups(points), "open": regressions,
            "accepted": decisions}  # fmt: skip


def regression_json(r: Regression) -> dict:
    """One open regression as check_json lists it."""
    return {
        "name": r.name,
        "type": r.type,
        "metric": r.metric,
        "why": r.why,
        "since": r.since.run_id,
        "since_commit": r.since.git_commit,
        "anchor": [r.anchor[0].run_id, r.anchor[1].run_id],
        "anchor_level": round(r.anchor_level, 6),
        "current_level": round(r.current_level, 6),
        "change_pct": round(r.change_pct, 3) if math.isfinite(r.change_pct) else None,
        "pvalue": r.pvalue,
        "fingerprint": r.config.fingerprint,
        "host": r.config.host,
        "testbed": r.config.testbed,
    }


CHECK_METHOD = (
    f"open while a change point for the worse (after the newest accepted run) still stands beyond the "
    f"magnitude floor, or the current level (last {CURRENT_RUNS} runs) is worse than the anchor (the level "
    f"before the oldest open regression; first {ANCHOR_RUNS} runs since the newest accepted one) beyond "
    f"the floor at a one-sided p <= {CHECK_ALPHA:g} for all series together (Bonferroni; robust noise: "
    f"the run-to-run differences, {100 - NOISE_KEEP * 100:g} % trimmed), on the log scale"
)
"""The check's method in one line, printed with its answer."""


def open_table(found: dict) -> str:
    """The terminal form of check_json's open regressions, grouped by the run they start, and what
    to do about them."""
    regressions = found["open"]
    if not regressions:
        return f"no open regression on branch {found['branch']} (exit 0)"
    lines = [f"{len(regressions)} open regression(s) on branch {found['branch']} (exit 3):"]
    by_run: dict[str, list[dict]] = {}
    for r in regressions:
        by_run.setdefault(r["since"], []).append(r)
    for run_id, group in by_run.items():
        lines.append(f"  since {run_id} ({(group[0]['since_commit'] or '-')[:10]}): {len(group)} series")
        for r in group:
            change = "n/a" if r["change_pct"] is None else f"{r['change_pct']:+.1f} %"
            levels = f"{r['anchor_level']:.4g} -> {r['current_level']:.4g}"
            lines.append(f"    {r['name']} {r['metric']}: {levels} ({change}; {r['why']}; "
                         f"anchor {r['anchor'][0]}..{r['anchor'][1]})")  # fmt: skip
    lines.append(
        f"accept a new level: swarmbench history accept {next(iter(by_run))} --reason TEXT "
        "(the run that starts the level accepted); or fix it"
    )
    lines.append(f"check: {found['check_method']}")
    return "\n".join(lines)
