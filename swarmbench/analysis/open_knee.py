"""The open-model knee, and the highest rate a sweep point sustained: per constant-rate step of an
--arrival-rate schedule (core/arrival.holds), from locust_arrival.csv's per-second rows.

A step is HELD when, over its seconds after SETTLE_S:
- under 1 % of its scheduled iterations were dropped (core/arrival.DROP_LIMIT),
- the iterations started reach the offered rate within 1 % (the generators kept their schedule),
- and, for the knee, the intended-start p99 stays under a bound (the report's --knee-p99-ms, which
  `swarmbench knee` sets from KNEE_P99_MS). The step's p99 is the
  highest of its seconds' p99s: an upper bound of the p99 over all its samples (every second has 99 %
  of its samples at or below its own p99, so the union has 99 % at or below the highest), so a
  "held" never overstates.
The knee is the highest rate of the run of held steps from the first one: a held step above one that
was not is luck, not capacity. Pure: no file is written here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis.open_model import OpenRun
from swarmbench.analysis.plots_time import figure as _figure
from swarmbench.core.arrival import Hold, holds, parse_arrival_rate
from swarmbench.core.verdict import DROP_LIMIT, KNEE_P99_MS

SETTLE_S = 1
"""Seconds skipped at the start of each step: the second holding the jump mixes two rates, and its
latency is still the previous step's."""

STEP_COLUMNS = (
    "rate",
    "seconds",
    "scheduled",
    "started",
    "dropped",
    "achieved_rate",
    "dropped_ratio",
    "intended_p99_ms",
    "held",
    "why_not",
)


def _judge(hold: Hold, rows: pd.DataFrame, bound_ms: float | None) -> dict:
    n = len(rows)
    scheduled, started, dropped = (int(rows[c].sum()) for c in ("scheduled", "started", "dropped"))
    p99 = pd.to_numeric(rows["intended_p99_ms"], errors="coerce").max()
    ratio = dropped / scheduled if scheduled else 1.0
    achieved = started / n
    why = []
    if ratio >= DROP_LIMIT:
        why.append(f"{ratio:.1%} dropped")
    if achieved < (1 - DROP_LIMIT) * hold.rate:
        why.append(f"achieved {achieved:.4g} of {hold.rate:g}/s")
    if bound_ms is not None and not (p99 <= bound_ms):  # NaN (no sample) is no evidence of holding
        why.append(f"intended-start p99 {p99:g} ms over {bound_ms:g} ms")
    return {
        "rate": hold.rate,
        "seconds": n,
        "scheduled": scheduled,
        "started": started,
        "dropped": dropped,
        "achieved_rate": round(achieved, 2),
        "dropped_ratio": round(ratio, 4),
        "intended_p99_ms": None if pd.isna(p99) else float(p99),
        "held": not why,
        "why_not": "; ".join(why),
    }


def step_table(run: OpenRun, bound_ms: float | None = None) -> pd.DataFrame:
    """One row per constant-rate step with at least one whole second after SETTLE_S (STEP_COLUMNS).
    The run's last second is partial (the run stopped within it) and is left out."""
    seconds = run.seconds
    schedule = parse_arrival_rate(run.summary.arrival_rate or "")
    last = int(seconds["second"].max()) if not seconds.empty else -1
    rows = []
    for hold in holds(schedule):
        first, end = math.ceil(hold.t0) + SETTLE_S, min(hold.t1, last)
        part = seconds[(seconds["second"] >= first) & (seconds["second"] + 1 <= end)]
        if not part.empty:
            rows.append(_judge(hold, part, bound_ms))
    return pd.DataFrame(rows, columns=list(STEP_COLUMNS))


def highest_held(steps: pd.DataFrame) -> float | None:
    """The rate of the last step of the unbroken run of held steps from the first; None if none."""
    rate = None
    for row in steps.itertuples():
        if not row.held:
            break
        rate = row.rate
    return rate


@dataclass(frozen=True)
class OpenKnee:
    steps: pd.DataFrame  # STEP_COLUMNS, in order
    rate: float | None  # the highest rate held (the knee); None when even the first step was not
    bound_ms: float

    def failed(self) -> pd.Series | None:
        """The first step not held (None when every step held)."""
        bad = self.steps[~self.steps["held"]]
        return None if bad.empty else bad.iloc[0]

    def sentence(self) -> str:
        rule = (
            f"< {DROP_LIMIT:.0%} dropped, achieved within {DROP_LIMIT:.0%}, "
            f"intended-start p99 ≤ {self.bound_ms:g} ms"
        )
        bad = self.failed()
        if bad is None:
            return f"No knee up to {self.steps['rate'].max():g}/s: every step held ({rule})."
        if self.rate is None:
            return f"No rate held: already at {bad['rate']:g}/s, {bad['why_not']} ({rule})."
        return (
            f"Knee: {self.rate:g}/s is the highest rate held ({rule}); at {bad['rate']:g}/s, "
            f"{bad['why_not']}."
        )


MIN_STEPS = 2
"""Fewer constant-rate steps than this is one offered rate, not a knee search."""


def open_model_knee(run: OpenRun, bound_ms: float = KNEE_P99_MS) -> OpenKnee | None:
    """The open-model knee of a stepped schedule, its steps' intended-start p99 bounded by BOUND_MS;
    None when the schedule has fewer than MIN_STEPS."""
    steps = step_table(run, bound_ms)
    if len(steps) < MIN_STEPS:
        return None
    return OpenKnee(steps, highest_held(steps), bound_ms)


def sustained_rate(run: OpenRun) -> dict:
    """What one sweep point sustained (drops and achieved rate only: the sweep has no latency bound):
    {"offered" (its highest step), "sustained" (highest_held, None: not even the first)}."""
    steps = step_table(run)
    return {
        "offered": float(steps["rate"].max()) if not steps.empty else None,
        "sustained": highest_held(steps),
    }


def sweep_table(points: list[tuple[str | None, int | None, OpenRun]]) -> pd.DataFrame | None:
    """Per (user class, workers) of open-model sweep points: the highest rate sustained in every
    repeat and in the best one (0 where even the first step was not); None with < 2 worker counts."""
    rows = [
        {"user_class": cls or "-", "workers": w, **sustained_rate(run)}
        for cls, w, run in points
        if w is not None
    ]
    frame = pd.DataFrame(rows, columns=["user_class", "workers", "offered", "sustained"])
    if frame["workers"].nunique() < 2:
        return None
    frame["sustained"] = frame["sustained"].fillna(0.0).astype(float)
    out = frame.groupby(["user_class", "workers"], as_index=False).agg(
        repeats=("sustained", "size"),
        offered_up_to=("offered", "max"),
        sustained_every_repeat=("sustained", "min"),
        sustained_best_repeat=("sustained", "max"),
    )
    return out.sort_values(["user_class", "workers"]).reset_index(drop=True)


def sweep_figure(table: pd.DataFrame) -> Figure:
    """Highest rate sustained in every repeat against workers, one line per user class."""
    fig = _figure((7.0, 4.0))
    ax = fig.subplots()
    for cls, part in table.groupby("user_class"):
        ax.plot(part["workers"], part["sustained_every_repeat"], marker="o", label=str(cls))
        ax.vlines(part["workers"], part["sustained_every_repeat"], part["sustained_best_repeat"], alpha=0.4)
    ax.set_xlabel("workers")
    ax.set_ylabel("highest rate sustained (iterations/s)")
    ax.set_xticks(sorted(table["workers"].unique()))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig
