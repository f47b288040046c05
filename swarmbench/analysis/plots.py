"""Charts as matplotlib Figures: built and returned, never shown or saved here (the caller decides).
Scaling, latency and comparison charts; the charts over time and per step are plots_time.py's.

Figures are created with `matplotlib.figure.Figure` directly, not pyplot: no global figure
registry to leak memory across many charts, no GUI backend; `fig.savefig` renders with Agg.
Every axis says its unit (requests/s, ms, workers, s).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis import columns as C
from swarmbench.analysis.plots_time import PCT_STYLE
from swarmbench.analysis.plots_time import figure as _figure
from swarmbench.analysis.plots_time import message as _message
from swarmbench.analysis.scaling import ScalingGroup

AMDAHL_COLOR, USL_COLOR, IDEAL_COLOR = "#2ca02c", "#9467bd", "#7f7f7f"


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render a Figure to PNG bytes in memory (Agg; no file is written)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def run_labels(frame: pd.DataFrame) -> pd.Series:
    """Per row "AlbumsHttpUser ×2 #1", the run id where class or workers are unknown."""

    def one(row: pd.Series) -> str:
        if pd.isna(row[C.USER_CLASS]) or pd.isna(row[C.WORKERS]):
            return str(row[C.RUN_ID])
        rep = f" #{row[C.REPEAT]}" if C.REPEAT in row and not pd.isna(row[C.REPEAT]) else ""
        return f"{row[C.USER_CLASS]} ×{row[C.WORKERS]}{rep}"

    labels = frame.apply(one, axis=1)
    # Two runs can share a label (no sweep repeat recorded): number the duplicates so bars differ.
    dup = labels.groupby(labels).cumcount()
    return labels.where(~labels.duplicated(keep=False), labels + " (" + (dup + 1).astype(str) + ")")


# --- scaling ----------------------------------------------------------------------------------------


def _n_grid(group: ScalingGroup) -> np.ndarray:
    top = max(p.workers for p in group.points)
    upper = top * 1.5 + 1
    if group.usl is not None and group.usl.peak_workers is not None:
        upper = max(upper, min(group.usl.peak_workers * 1.3, top * 3))
    return np.linspace(1, upper, 200)


def _fit_note(group: ScalingGroup) -> str:
    lines = []
    a, u = group.amdahl, group.usl
    if a is not None:
        ci = f" [{a.ci95[0]:.2f}, {a.ci95[1]:.2f}]" if a.ci95 else ""
        ceiling = "∞" if np.isinf(a.max_speedup) else f"{a.max_speedup:.1f}×"
        lines.append(f"Amdahl s = {a.serial_fraction:.2f}{ci}, max speedup {ceiling}")
    if u is not None:
        peak = f", N* = {u.peak_workers:.1f}" if u.peak_workers is not None else ", no peak"
        lines.append(f"USL α = {u.alpha:.3f}, β = {u.beta:.4f}{peak}")
    return "\n".join(lines)


def _scaling_axes(group: ScalingGroup, ax, scale: float, ylabel: str) -> None:
    """Measured runs (dots), means with min–max bars, ideal line and both fitted curves."""
    n, x = group.arrays()
    ax.scatter(n, x / scale, s=18, color="black", alpha=0.45, label="runs", zorder=3)
    means = np.array([p.mean_rps for p in group.points]) / scale
    lo = np.array([min(p.rps) for p in group.points]) / scale
    hi = np.array([max(p.rps) for p in group.points]) / scale
    ns = np.array([p.workers for p in group.points], dtype=float)
    ax.errorbar(
        ns,
        means,
        yerr=[means - lo, hi - means],
        fmt="o",
        color="black",
        capsize=4,
        label="mean (bars: min–max of repeats)",
        zorder=4,
    )
    grid = _n_grid(group)
    gamma = group.amdahl.gamma if group.amdahl else means[0] / ns[0]
    ax.plot(grid, gamma * grid / scale, ls=":", color=IDEAL_COLOR, label="ideal (linear)")
    if group.amdahl is not None:
        ax.plot(grid, group.amdahl.throughput(grid) / scale, color=AMDAHL_COLOR, label="Amdahl fit")
    if group.usl is not None:
        ax.plot(grid, group.usl.throughput(grid) / scale, color=USL_COLOR, ls="--", label="USL fit")
    ax.set_xlabel("workers (load generators)")
    ax.set_ylabel(ylabel)
    ax.set_xlim(0.5, grid[-1])
    ax.set_ylim(0, max(hi.max(), means.max()) * 1.5)
    ax.set_xticks(sorted({1, *ns.astype(int).tolist()}))
    note = _fit_note(group)
    if note:
        ax.text(
            0.02,
            0.97,
            note,
            transform=ax.transAxes,
            va="top",
            fontsize=9,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.8"},
        )
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)


def speedup_figure(group: ScalingGroup) -> Figure:
    """Speedup against the fitted one-worker throughput γ (not one noisy N = 1 run)."""
    fig = _figure()
    ax = fig.add_subplot()
    if not group.points:
        return _message(fig, "no runs")
    if group.amdahl is not None:
        scale, what = group.amdahl.gamma, "fitted 1-worker throughput γ"
    else:
        first = group.points[0]
        scale, what = first.mean_rps / first.workers, f"mean per-worker throughput at N = {first.workers}"
    _scaling_axes(group, ax, scale, f"speedup (× {what})")
    ax.set_title(f"Speedup — {group.key.label()}", fontsize=10)
    return fig


def throughput_figure(group: ScalingGroup) -> Figure:
    fig = _figure()
    ax = fig.add_subplot()
    if not group.points:
        return _message(fig, "no runs")
    _scaling_axes(group, ax, 1.0, "throughput (requests/s)")
    ax.set_title(f"Throughput vs workers — {group.key.label()}", fontsize=10)
    return fig


# --- latency ----------------------------------------------------------------------------------------


def endpoint_percentiles_figure(summary: pd.DataFrame) -> Figure:
    """p50/p95/p99 per endpoint (one panel each, Aggregated last), one bar group per run."""
    endpoints = [e for e in dict.fromkeys(summary[C.ENDPOINT]) if e != C.AGGREGATED]
    endpoints.append(C.AGGREGATED)
    runs = summary.drop_duplicates(C.RUN_ID)
    labels = dict(zip(runs[C.RUN_ID], run_labels(runs), strict=True))
    width_in = max(9.0, 0.35 * len(runs) * len(endpoints) + 2)
    fig = _figure((min(width_in, 24.0), 4.8))
    axes = fig.subplots(1, len(endpoints), sharey=True, squeeze=False)[0]
    x = np.arange(len(runs))
    for ax, endpoint in zip(axes, endpoints, strict=True):
        rows = summary[summary[C.ENDPOINT] == endpoint].set_index(C.RUN_ID).reindex(runs[C.RUN_ID])
        for i, (col, (name, color)) in enumerate(PCT_STYLE.items()):
            ax.bar(x + (i - 1) * 0.27, rows[col].to_numpy(dtype=float), width=0.27, color=color, label=name)
        ax.set_title(endpoint, fontsize=9)
        ax.set_ylabel("response time (ms)", fontsize=8)
        ax.set_xlabel("run (user class ×workers #repeat)", fontsize=8)
        ax.set_xticks(x, [labels[r] for r in runs[C.RUN_ID]], rotation=60, ha="right", fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Response-time percentiles per endpoint and run (whole run)", fontsize=10)
    return fig


def latency_vs_users_figure(summary: pd.DataFrame) -> Figure:
    """Whole-run Aggregated percentiles against the configured user count, one marker per class."""
    agg = summary[(summary[C.ENDPOINT_NAME] == C.AGGREGATED) & summary[C.USERS].notna()]
    fig = _figure()
    if agg.empty:
        return _message(fig, "user counts unknown (no run.json)")
    ax = fig.add_subplot()
    markers = dict(zip(agg[C.USER_CLASS].fillna("?").unique(), "os^Dv<>", strict=False))
    for cls, rows in agg.groupby(agg[C.USER_CLASS].fillna("?")):
        mean = rows.groupby(C.USERS)[list(PCT_STYLE)].mean()
        for col, (name, color) in PCT_STYLE.items():
            ax.scatter(
                rows[C.USERS],
                rows[col],
                color=color,
                marker=markers.get(cls, "o"),
                alpha=0.6,
                label=f"{name} {cls}",
            )
            ax.plot(mean.index, mean[col], color=color, lw=0.8, alpha=0.6)
    ax.set_xlabel("users (configured)")
    ax.set_ylabel("response time (ms)")
    ax.set_title("Latency vs users (Aggregated, whole run; lines join means)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return fig


def user_class_comparison_figure(summary: pd.DataFrame) -> Figure:
    """Side by side per user class (e.g. HttpUser vs FastHttpUser): throughput and p50/p95 vs workers."""
    agg = summary[(summary[C.ENDPOINT_NAME] == C.AGGREGATED) & summary[C.USER_CLASS].notna()]
    fig = _figure((10.0, 4.6))
    classes: Sequence[str] = sorted(agg[C.USER_CLASS].unique())
    if len(classes) < 2:
        return _message(fig, "only one user class in these runs")
    left, right = fig.subplots(1, 2)
    offsets = np.linspace(-0.12, 0.12, len(classes))
    for off, cls in zip(offsets, classes, strict=True):
        rows = agg[(agg[C.USER_CLASS] == cls) & agg[C.WORKERS].notna()]
        stats = rows.groupby(C.WORKERS)[[C.RPS_OUT, C.P50_MS, C.P95_MS]].agg(["mean", "min", "max"])
        n = stats.index.to_numpy(dtype=float) + off
        rps = stats[C.RPS_OUT]
        yerr = [rps["mean"] - rps["min"], rps["max"] - rps["mean"]]
        line = left.errorbar(n, rps["mean"], yerr=yerr, marker="o", capsize=3, label=cls)
        color = line[0].get_color()
        right.plot(n, stats[(C.P95_MS, "mean")], marker="o", color=color, label=f"p95 {cls}")
        right.plot(n, stats[(C.P50_MS, "mean")], marker=".", ls=":", color=color, label=f"p50 {cls}")
    for ax in (left, right):
        ax.set_xlabel("workers (load generators)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ticks = sorted(agg[C.WORKERS].dropna().astype(int).unique())
        if ticks:
            ax.set_xticks(ticks)
    left.set_ylabel("throughput (requests/s)")
    left.set_ylim(bottom=0)
    right.set_ylabel("response time (ms)")
    right.set_ylim(bottom=0)
    left.set_title("Throughput by user class (bars: min–max)", fontsize=10)
    right.set_title("Latency by user class (mean of repeats)", fontsize=10)
    return fig


# --- store strategies --------------------------------------------------------------------------


def stores_figure(table: pd.DataFrame) -> Figure:
    """Throughput and p95 per target store strategy, one bar per request mix.

    TABLE: columns store, mix, rps, p95_ms (one row per run; bars are means, ticks min-max)."""
    fig = _figure((10.0, 4.6))
    left, right = fig.subplots(1, 2)
    stores = list(dict.fromkeys(table[C.STORE]))
    mixes = list(dict.fromkeys(table["mix"]))
    width = 0.8 / max(len(mixes), 1)
    x = np.arange(len(stores))
    for i, mix in enumerate(mixes):
        rows = table[table["mix"] == mix].groupby(C.STORE)[[C.RPS_OUT, C.P95_MS]].agg(["mean", "min", "max"])
        rows = rows.reindex(stores)
        off = x + (i - (len(mixes) - 1) / 2) * width
        for ax, col in ((left, C.RPS_OUT), (right, C.P95_MS)):
            mean = rows[(col, "mean")].to_numpy(dtype=float)
            err = [
                mean - rows[(col, "min")].to_numpy(dtype=float),
                rows[(col, "max")].to_numpy(dtype=float) - mean,
            ]
            ax.bar(off, mean, width=width, yerr=err, capsize=3, label=mix)
    for ax, label in ((left, "throughput (requests/s)"), (right, "p95 response time (ms)")):
        ax.set_xticks(x, stores)
        ax.set_xlabel("target store strategy (ALBUMS_STORE)")
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(title="request mix", fontsize=8)
    left.set_title("Throughput by store strategy", fontsize=10)
    right.set_title("p95 latency by store strategy", fontsize=10)
    return fig
