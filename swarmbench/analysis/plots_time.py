"""Charts over time and per step: throughput from count differences (timeseries), never Locust's
lagging `Requests/s` column; percentiles labelled with their window and Locust's resolution.

Figures are built and returned, never shown or saved (see plots.py, which shares the helpers
and styles defined here).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis import columns as C
from swarmbench.analysis.knee import Knee
from swarmbench.analysis.timeseries import resolution_note

WIDE = (9.0, 4.8)
PCT_STYLE = {C.P50_MS: ("p50", "#1f77b4"), C.P95_MS: ("p95", "#ff7f0e"), C.P99_MS: ("p99", "#d62728")}
_ENDPOINT_COLORS = ["#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#aec7e8", "#98df8a"]
USERS_COLOR, PARTIAL_COLOR, NOISY_COLOR, KNEE_COLOR = "#17becf", "0.55", "0.6", "#d62728"


def figure(size: tuple[float, float] = WIDE) -> Figure:
    return Figure(figsize=size, dpi=100, layout="constrained")


def message(fig: Figure, text: str) -> Figure:
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


def window_label(series: pd.DataFrame) -> str:
    """Which window the percentiles are over: each window's own (exact), or Locust's (rounded)."""
    if series.attrs.get("pct_window") == "exact":
        return "exact, each window's own"
    if series.attrs.get("pct_window", "10s") == "10s":
        return "rounded, Locust's trailing ~10 s window"
    return "rounded, cumulative since start (Aggregated-only history)"


def over_time_figure(series: pd.DataFrame, title: str) -> Figure:
    """From timeseries.run_series(): Aggregated p50/p95/p99 (+ p95 per endpoint) over time, then
    throughput per window (count differences; partial windows dotted) with the users."""
    fig = figure((9.0, 5.8))
    if series.empty:
        return message(fig, "no history rows to measure (one row, or none)")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    agg = series[series[C.ENDPOINT] == C.AGGREGATED]
    _percentile_axes(top, series, agg)
    top.set_title(f"{title}: percentiles over time ({window_label(series)})", fontsize=10)
    _throughput_axes(bottom, agg, int(series.attrs.get("window_s", 1)))
    return fig


def _percentile_axes(ax, series: pd.DataFrame, agg: pd.DataFrame) -> None:
    for col, (name, color) in PCT_STYLE.items():
        ax.plot(
            agg[C.TIME_S], agg[col], color=color, lw=1.6, marker=".", ms=3, label=f"{name} (all endpoints)"
        )
    per_endpoint = series[series[C.ENDPOINT] != C.AGGREGATED].groupby(C.ENDPOINT, sort=False)
    for (endpoint, rows), color in zip(per_endpoint, _ENDPOINT_COLORS * 8, strict=False):
        ax.plot(rows[C.TIME_S], rows[C.P95_MS], lw=0.9, color=color, ls="--", label=f"p95 {endpoint}")
    shown = series[list(PCT_STYLE)].to_numpy().ravel().tolist()
    if series.attrs.get("pct_window") == "exact":
        notes = ["exact: HDR histograms of each window, 3 significant digits"]
    else:
        notes = [resolution_note(shown) + " (steps smaller than that are rounding, not change)"]
    masked = {k: v for k, v in series.attrs.get("masked", {}).items() if v}
    if masked:
        which = ", ".join(f"{PCT_STYLE[k][0]} ×{v}" for k, v in masked.items())
        notes.append(f"not drawn: values above the run's max response time ({which}; Locust's rounding)")
    ax.text(0.01, 0.98, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=7, color="0.3")
    ax.set_ylabel("response time (ms)")
    ax.set_ylim(bottom=0, top=max(1.0, float(pd.Series(shown).max(skipna=True) or 0) * 1.35))
    ax.legend(fontsize=7, ncol=2, loc="best")
    ax.grid(alpha=0.3)


def _throughput_axes(ax, agg: pd.DataFrame, width: int) -> None:
    start = agg[C.TIME_S] - agg[C.WINDOW_S]
    full, partial = ~agg[C.PARTIAL].astype(bool), agg[C.PARTIAL].astype(bool)
    ax.hlines(
        agg.loc[full, C.RPS_OUT],
        start[full],
        agg.loc[full, C.TIME_S],
        color="black",
        lw=1.8,
        label=f"requests/s per {width} s window (count differences)",
    )
    if partial.any():
        ax.hlines(
            agg.loc[partial, C.RPS_OUT],
            start[partial],
            agg.loc[partial, C.TIME_S],
            color=PARTIAL_COLOR,
            lw=1.4,
            ls=":",
            label="partial window: workers' first reports / final flush",
        )
    ax.set_ylabel("throughput (requests/s)")
    ax.set_ylim(bottom=0, top=max(1.0, float(agg[C.RPS_OUT].max())) * 1.3)
    ax.set_xlabel("time since start (s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    users = ax.twinx()
    edges = [float(start.iloc[0]), *agg[C.TIME_S].astype(float)]
    users.stairs(agg[C.USERS].to_numpy(dtype=float), edges, color=USERS_COLOR, lw=1.0, label="users")
    users.set_ylabel("users (count, most in each window)", color=USERS_COLOR)
    users.set_ylim(bottom=0, top=max(1.0, float(agg[C.USERS].max())) * 1.6)  # below the rates


def knee_figure(knee: Knee, title: str) -> Figure:
    """Per step of a step-load run: latency vs throughput (left) and throughput vs users against the
    low-load rate per user (right); the knee marked, noisy steps hollow."""
    fig = figure((11.0, 4.6))
    left, right = fig.subplots(1, 2)
    t = knee.steps
    noisy = t["state"] == "noisy"
    for col in (C.P95_MS, C.P50_MS):
        name, color = PCT_STYLE[col]
        left.plot(
            t[C.RPS_OUT],
            t[col],
            marker="o",
            ms=4,
            color=color,
            ls="-" if col == C.P95_MS else ":",
            label=name,
        )
    if noisy.any():
        left.scatter(
            t.loc[noisy, C.RPS_OUT],
            t.loc[noisy, C.P95_MS],
            s=110,
            facecolors="none",
            edgecolors=NOISY_COLOR,
            label="noisy step (not sustained)",
        )
    for _, row in t.iterrows():
        left.annotate(
            f"{int(row[C.USERS])}u",
            (row[C.RPS_OUT], row[C.P95_MS]),
            fontsize=7,
            xytext=(3, 4),
            textcoords="offset points",
        )
    if knee.floor_ms is not None:
        left.axhline(knee.floor_ms, color="0.6", ls="--", lw=0.8, label=f"p95 floor {knee.floor_ms:.0f} ms")
    left.set_xlabel("throughput (requests/s, per step, from request counts)")
    left.set_ylabel("response time (ms)")
    left.set_ylim(bottom=0)
    left.set_title(f"Latency vs throughput — {title}", fontsize=10)
    _steps_axes(right, knee)
    if knee.index is not None:
        label = f"knee: {knee.users} users, {knee.rps:.0f} req/s"
        left.axvline(knee.rps, color=KNEE_COLOR, lw=1.2, label=label)
        right.axvline(knee.users, color=KNEE_COLOR, lw=1.2, label=label)
    for ax in (left, right):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    return fig


def _steps_axes(ax, knee: Knee) -> None:
    t = knee.steps
    top = float(t[C.USERS].max())
    ax.plot(
        [0, top],
        [0, knee.per_user * top],
        color="0.5",
        ls=":",
        label=f"proportional: {knee.per_user:.1f} req/s per user (low load)",
    )
    ax.plot(t[C.USERS], t[C.RPS_OUT], marker="o", color="black", label="measured, per step")
    noisy = t["state"] == "noisy"
    if noisy.any():
        ax.scatter(
            t.loc[noisy, C.USERS], t.loc[noisy, C.RPS_OUT], s=110, facecolors="none", edgecolors=NOISY_COLOR
        )
    ax.set_xlabel("users (step)")
    ax.set_ylabel("throughput (requests/s)")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(bottom=0)
    ax.set_title("Throughput vs users (each step after settling)", fontsize=10)
