"""Knee finding on a step-load run: the load where the server saturates, or "no knee up to N users".

A step-load run (locustfiles/step_load.py) holds each user count for SECONDS. Per step:
- throughput: the difference of the cumulative request count within the step only, after
  settle_s(interval) seconds (spawning, and the workers' last report of the previous step), over a
  whole number of report intervals (timeseries.rate: the one place per-time rates come from);
- latency: exact when the run has its windows file: p50/p95 of the step's 1 s windows over the same
  span as its throughput, their HDR histograms merged first (exact.py; percentiles are never
  averaged); else (older folders, `rounded`) the median of Locust's ~10 s-window p50/p95 over the
  step's rows whose window holds only this step's responses (from PCT_WINDOW_S + one report
  interval into the step).

Saturation is throughput per user falling clearly below its low-load value AND latency up, in that
step and every later one (a server at its limit cannot recover while the load keeps rising). The
knee is the first step that reaches the peak throughput: where throughput stops growing. A
step with latency (or throughput per user) off its low-load value but not sustained is "noisy".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import EXACT, ROUNDED, span_percentiles, window_offset_s, window_range
from swarmbench.analysis.runs import Run
from swarmbench.analysis.scaling import run_verdict
from swarmbench.analysis.timeseries import PCT_WINDOW_S, Grid, rate, report_interval_s, run_grids
from swarmbench.core.bottleneck import LOAD_BOUND_SHARE
from swarmbench.core.loadspec import try_parse

FIRST_WINDOW, STOP_WINDOW = "first_window", "stop_window"
"""A step's 1 s windows of the windows file, [first, stop), when its latency is exact."""

SETTLE_S = 5
"""Seconds skipped at the start of each step for its throughput: the step's users spawn within ~1 s
(step_load.py) and the previous step's traffic is reported up to one interval (3 s) late."""
BASE_STEPS = 2
"""Low-load reference: the best throughput per user and the lowest p95 of the first steps."""
PER_USER_DROP = 0.15
"""Throughput per user this far below its low-load value is saturation, not noise: step-to-step
noise is a few %, and a latency blip of a few ms costs a paced user < 10 % of its rate."""
LATENCY_FACTOR = 2.0
"""p95 at twice its floor: clearly queueing, well above step-to-step noise (~10-30 %)."""
LATENCY_MIN_RISE_MS = 5.0
"""...and at least 5 ms above it, so 1 ms -> 2.1 ms on loopback does not count."""
PLATEAU_SHARE = 0.95
"""The knee is the first step within 5 % (the steps' own noise) of the highest throughput reached up to
the first saturated step: past a server's limit throughput stays flat, or falls (contention)."""
MIN_STEPS = 3
"""Fewer user levels than this are not a step load (ramp-up alone gives two)."""
MIN_ROWS_PER_STEP = 4
"""History rows (seconds) a level needs to count as a step, not a passing spawn level."""

NOISY = "noisy"


@dataclass(frozen=True)
class Knee:
    steps: pd.DataFrame  # users, t_s, window_s, rps, rps_per_user, p50_ms, p95_ms, latency, state; in order
    index: int | None  # row of the knee in steps; None when the server did not saturate
    floor_ms: float | None  # low-load p95
    per_user: float  # low-load throughput per user (requests/s)
    verdict: str | None = None  # the run's bottleneck verdict (run.json), for the wording
    confirm_pending: bool = False  # only the top step looked saturated: nothing after it to confirm
    wait_time: str | None = None  # the users' wait time (run.json), to tell a paced load

    @property
    def users(self) -> int | None:
        return None if self.index is None else int(self.steps[C.USERS].iloc[self.index])

    @property
    def rps(self) -> float | None:
        return None if self.index is None else float(self.steps[C.RPS_OUT].iloc[self.index])

    @property
    def noisy(self) -> list[int]:
        return [int(u) for u in self.steps.loc[self.steps["state"] == NOISY, C.USERS]]

    def table(self) -> pd.DataFrame:
        """The steps as the report shows them under the chart."""
        t = self.steps
        return pd.DataFrame(
            {
                "users": t[C.USERS].astype(int),
                "requests/s": t[C.RPS_OUT].round(1),
                "per user": t["rps_per_user"].round(2),
                "over (s)": t[C.WINDOW_S].astype(int),
                "p50 ms": t[C.P50_MS],
                "p95 ms": t[C.P95_MS],
                "latency": t.get(C.LATENCY, ROUNDED),
                "step": t["state"],
            }
        )

    def _paced(self, top_per_user: float) -> str:
        """Why no knee when the users' pacing capped the load: the run's verdict, or the top step's
        per-user rate at LOAD_BOUND_SHARE of what the wait time allows (the verdict's own rule)."""
        spec = try_parse(self.wait_time)
        allowed = spec.rate_per_user if spec else None
        raise_it = (
            " so the step load could not reach the server's limit: raise it with more users (MAX in "
            "STEP_USERS) or less think time (LOCUST_WAIT_TIME)."
        )
        if allowed and top_per_user >= LOAD_BOUND_SHARE * allowed:
            return (
                f" Each user ran at {top_per_user:.1f} requests/s, {top_per_user / allowed:.0%} of the "
                f"{allowed:.3g} its wait time ({spec}) allows: the users' pacing capped the load "
                "(load-bound)," + raise_it
            )
        if self.verdict == "load-bound":
            return " The run was load-bound (the users' think time capped the rate)," + raise_it
        return ""

    def sentence(self) -> str:
        t = self.steps
        if self.index is None:
            top = t.iloc[-1]
            users, per_user, p95 = int(top[C.USERS]), float(top["rps_per_user"]), float(top[C.P95_MS])
            text = (
                f"No knee up to {users} users ({top[C.RPS_OUT]:.0f} requests/s): at {users} users each "
                f"user got {per_user:.1f} requests/s (low load: {self.per_user:.1f}) at p95 {_ms(p95)} "
                f"(floor: {_ms(self.floor_ms)}); a knee needs throughput per user below "
                f"{1 - PER_USER_DROP:.0%} of its low-load value and p95 over {LATENCY_FACTOR:g}× its floor, "
                "in a step and every later one."
            )
            if per_user >= (1 - PER_USER_DROP) * self.per_user:
                text += (
                    " Throughput grew in proportion to the users: the server was not saturated by this load."
                )
            if self.confirm_pending:
                text += " Only the top step looks saturated: extend the steps (MAX) to confirm it."
            text += self._paced(float(top["rps_per_user"]))
        else:
            row, sat = t.iloc[self.index], t[t["state"] == "saturated"].iloc[0]
            text = (
                f"Knee at {int(row[C.USERS])} users ≈ {row[C.RPS_OUT]:.0f} requests/s: throughput stops "
                f"growing there. From {int(sat[C.USERS])} users on, throughput per user stayed below "
                f"{1 - PER_USER_DROP:.0%} of its low-load {self.per_user:.1f} requests/s "
                f"({sat['rps_per_user']:.1f} at {int(sat[C.USERS])} users) and p95 stayed over "
                f"{LATENCY_FACTOR:g}× its floor of {self.floor_ms:.0f} ms ({sat[C.P95_MS]:.0f} ms): "
                "added users mostly queue."
            )
            if self.verdict == "generator-bound":
                text += " The run's verdict is generator-bound: the load generator may be what saturated."
        if self.noisy:
            text += (
                " Noisy steps (latency up or throughput per user down, but not both from there on): "
                + ", ".join(str(u) for u in self.noisy)
                + " users."
            )
        return text


def _ms(value: float | None) -> str:
    return "unknown" if value is None or pd.isna(value) else f"{value:.0f} ms"


def settle_s(interval_s: int) -> int:
    """Throughput settling time: SETTLE_S, or one report interval + 2 s when workers report slower."""
    return max(SETTLE_S, interval_s + 2)


def _levels(agg: Grid) -> list[tuple[int, int, int]]:
    """(users, first t, last t) of each run of equal user counts > 0, in time order."""
    out: list[tuple[int, int, int]] = []
    users = agg.users
    start = 0
    for i in range(1, len(users) + 1):
        if i == len(users) or users[i] != users[start]:
            if users[start] > 0 and i - start >= MIN_ROWS_PER_STEP:
                out.append((int(users[start]), int(agg.t[start]), int(agg.t[i - 1])))
            start = i
    return out


def steps(run: Run) -> pd.DataFrame | None:
    """One row per step of the run's history, in time order; None when it is not a step load."""
    by_endpoint = run_grids(run)
    if by_endpoint is None:
        return None
    agg = by_endpoint[C.AGGREGATED]
    interval = report_interval_s(agg.requests)
    rows = [row for level in _levels(agg) if (row := _step(agg, interval, *level)) is not None]
    if len(rows) < MIN_STEPS:
        return None
    table = pd.DataFrame(rows)
    return (
        _exact_latency(run, table)
        if run.latency.windows is not None
        else table.assign(**{C.LATENCY: ROUNDED})
    )


def _exact_latency(run: Run, table: pd.DataFrame) -> pd.DataFrame:
    """Each step's p50/p95 from its 1 s windows over its throughput span, merged (exact.py)."""
    offset = window_offset_s(run.history, run.meta.started_at)
    where = run.latency.windows_path or "windows"
    spans = [
        window_range(end - width, end, offset)
        for end, width in zip(table[C.TIME_S], table[C.WINDOW_S], strict=True)
    ]
    pcts = {C.P50_MS: 50.0, C.P95_MS: 95.0}
    values = [span_percentiles(run.latency.windows, where, C.AGGREGATED, lo, hi, pcts) for lo, hi in spans]
    for col in pcts:
        table[col] = [v[col] for v in values]
    table[FIRST_WINDOW] = [lo for lo, _ in spans]
    table[STOP_WINDOW] = [hi for _, hi in spans]
    table[C.LATENCY] = EXACT
    return table


def _step(agg: Grid, interval: int, users: int, first: int, last: int) -> dict | None:
    """The step's throughput over whole report intervals ending at its last second, after settling;
    Locust's (rounded) latency, replaced by the exact one where the run has windows."""
    span = (last - first - settle_s(interval)) // interval * interval
    if span <= 0:
        return None
    start = last - span
    quiet = first + PCT_WINDOW_S + interval  # Locust's window then holds this step's responses only
    rows = slice(agg.index(min(quiet, last)), agg.index(last) + 1)
    pct = {c: _median(agg.pct[c][rows]) for c in (C.P50_MS, C.P95_MS)}
    rps = rate(agg, start, last)
    return {
        C.USERS: users,
        C.TIME_S: last,
        C.WINDOW_S: span,
        C.RPS_OUT: rps,
        "rps_per_user": rps / users,
        **pct,
    }


def _median(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if len(finite) else float("nan")


def knee_from_steps(table: pd.DataFrame, verdict: str | None = None, wait_time: str | None = None) -> Knee:
    """The knee of a steps table (users, rps, p95_ms; p50_ms optional) as described above."""
    t = table.reset_index(drop=True).copy()
    if "rps_per_user" not in t:
        t["rps_per_user"] = t[C.RPS_OUT] / t[C.USERS]
    base = t.iloc[: min(BASE_STEPS, len(t))]
    per_user = float(base["rps_per_user"].max())
    floor = float(base[C.P95_MS].min()) if base[C.P95_MS].notna().any() else None
    slow = t["rps_per_user"] < (1 - PER_USER_DROP) * per_user
    if floor is None:
        late = pd.Series(False, index=t.index)
    else:
        late = (t[C.P95_MS] > LATENCY_FACTOR * floor) & (t[C.P95_MS] > floor + LATENCY_MIN_RISE_MS)
    both = (slow & late).to_numpy()
    # The first step from which every later step is saturated too (a suffix of `both`).
    first_sat = len(t)
    while first_sat > BASE_STEPS and both[first_sat - 1]:
        first_sat -= 1
    confirmed = first_sat < len(t) - 1  # at least one later step stayed saturated
    state = np.where(slow | late, NOISY, "").astype(object)
    index = None
    if confirmed:
        peak = float(t[C.RPS_OUT].iloc[: first_sat + 1].max())  # the capacity (may fall after: retrograde)
        index = min(int(np.flatnonzero(t[C.RPS_OUT].to_numpy() >= PLATEAU_SHARE * peak)[0]), first_sat)
        state[index:first_sat] = "saturating"  # the knee up to the first clearly saturated step
        state[index] = "knee"
        state[first_sat:] = "saturated"
    t["state"] = state
    pending = not confirmed and first_sat == len(t) - 1
    return Knee(t, index, floor, per_user, verdict, confirm_pending=pending, wait_time=wait_time)


def step_load_knee(run: Run) -> Knee | None:
    """The knee of a step-load run (>= MIN_STEPS user levels in its history)."""
    table = steps(run)
    return None if table is None else knee_from_steps(table, run_verdict(run), run.meta.wait_time)
