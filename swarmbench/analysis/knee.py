"""Knee finding on a step-load run: the load where p95 departs from its floor.

A step-load run (locustfiles/step_load.py) holds each user count for SECONDS. Per step we take the
second half of its history rows (Locust's history percentiles are over a ~10 s sliding window, so
the first seconds of a step still mix in the previous one): median Aggregated p95 and p50, mean
requests/s. The floor is the lowest p95 of the steps so far; the knee is the first step whose p95
exceeds KNEE_FACTOR x that floor and the floor + KNEE_MIN_RISE_MS.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from . import columns as C
from .load import Run

KNEE_FACTOR = 2.0
"""p95 at twice its floor: clearly queueing, well above step-to-step noise (~10-30 % on a quiet
machine), and the point past which users mostly wait in a queue rather than being served."""
KNEE_MIN_RISE_MS = 5.0
"""...and at least 5 ms above it, so 1 ms -> 2.1 ms on loopback does not count as a knee."""
MIN_STEPS = 3
"""Fewer user levels than this are not a step load (ramp-up alone gives two)."""
MIN_ROWS_PER_STEP = 4
"""History rows (seconds) a level needs to count as a step, not a passing spawn level."""


@dataclass(frozen=True)
class Knee:
    steps: pd.DataFrame  # users, rps, p50_ms, p95_ms per step, in order
    index: int | None  # row of the knee in steps, None when p95 never left its floor
    floor_ms: float | None

    @property
    def users(self) -> int | None:
        return None if self.index is None else int(self.steps[C.USERS].iloc[self.index])

    @property
    def rps(self) -> float | None:
        return None if self.index is None else float(self.steps[C.RPS_OUT].iloc[self.index])

    def sentence(self) -> str:
        if self.index is None:
            top = self.steps.iloc[-1]
            return (
                f"No knee: p95 stayed within {KNEE_FACTOR:g}× its floor up to {int(top[C.USERS])} users "
                f"({top[C.RPS_OUT]:.0f} requests/s); the server was not saturated by this load."
            )
        row = self.steps.iloc[self.index]
        return (
            f"Knee at {int(row[C.USERS])} users ≈ {row[C.RPS_OUT]:.0f} requests/s: "
            f"p95 {row[C.P95_MS]:.0f} ms, "
            f"over {KNEE_FACTOR:g}× its floor of {self.floor_ms:.0f} ms. Below it latency is flat; above it "
            "added load mostly adds queueing."
        )


def steps(run: Run) -> pd.DataFrame | None:
    """Per user level of the run's history, in time order; None when it is not a step load."""
    h = run.history
    if h is None or h.empty:
        return None
    agg = h[(h[C.ENDPOINT] == C.AGGREGATED) & (h[C.USERS] > 0)]
    rows = []
    for users, level in agg.groupby(C.USERS, sort=False):
        if len(level) < MIN_ROWS_PER_STEP:
            continue
        settled = level.iloc[len(level) // 2 :]
        rows.append(
            {
                C.USERS: int(users),
                C.TIME_S: float(level[C.TIME_S].iloc[0]),
                C.RPS_OUT: float(settled[C.RPS_OUT].mean()),
                C.P50_MS: float(settled[C.P50_MS].median()),
                C.P95_MS: float(settled[C.P95_MS].median()),
            }
        )
    out = pd.DataFrame(rows)
    if len(out) < MIN_STEPS:
        return None
    return out.sort_values(C.TIME_S).reset_index(drop=True)


def find_knee(table: pd.DataFrame) -> Knee:
    floor = None
    for i, p95 in enumerate(table[C.P95_MS]):
        if pd.isna(p95):
            continue
        if floor is not None and p95 > KNEE_FACTOR * floor and p95 > floor + KNEE_MIN_RISE_MS:
            return Knee(table, i, floor)
        floor = p95 if floor is None else min(floor, p95)
    return Knee(table, None, floor)


def knee(run: Run) -> Knee | None:
    """The knee of a step-load run (run.json `load_shape`, or >= MIN_STEPS user levels)."""
    table = steps(run)
    return None if table is None else find_knee(table)
