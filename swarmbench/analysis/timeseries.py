"""The history over time, binned so a chart never draws more points than a person can see.

A 1,000,000-row history is ~55 hours of seconds x endpoints; plotting every row costs seconds and
hundreds of MB for a picture that is a few hundred pixels wide. Binning first keeps charts cheap
whatever the run length.
"""

from __future__ import annotations

import math

import pandas as pd

from . import columns as C

MAX_POINTS = 400  # per endpoint line; ~ the pixel width of a report chart
_MEAN_COLS = [C.USERS, C.RPS_OUT, C.FAIL_PER_S_OUT, C.P50_MS, C.P95_MS, C.P99_MS]


def bin_width_s(history: pd.DataFrame, max_points: int = MAX_POINTS) -> float:
    """Bin width (whole seconds, >= 1) that leaves at most `max_points` bins per endpoint."""
    if history.empty:
        return 1.0
    span = float(history[C.TIME_S].max()) + 1.0
    return float(max(1, math.ceil(span / max_points)))


def binned(history: pd.DataFrame, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """Mean of each column per (endpoint, time bin); t_s is the bin's start.

    Means of the history's 10 s-window percentiles are what the chart says they are ("binned
    means"); they smooth single-second spikes in long runs, which a max per bin would not.
    """
    width = bin_width_s(history, max_points)
    cols = [c for c in _MEAN_COLS if c in history]
    frame = history[[C.ENDPOINT, C.TIME_S, *cols]]
    if width > 1:
        frame = frame.assign(**{C.TIME_S: (frame[C.TIME_S] // width) * width})
    out = frame.groupby([C.ENDPOINT, C.TIME_S], observed=True, sort=True)[cols].mean().reset_index()
    out.attrs = {**history.attrs, "bin_s": width}
    return out
