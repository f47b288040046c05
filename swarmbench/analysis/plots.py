"""Every chart of the analysis as a matplotlib Figure: built and returned, never shown or saved here
(the caller decides).

Charts over time and per step: throughput from count differences (timeseries), never Locust's
lagging `Requests/s` column; percentiles labelled with their window and Locust's resolution.

Figures are built and returned, never shown or saved (see plots.py, which shares the helpers
and styles defined here).

Charts as matplotlib Figures: built and returned, never shown or saved here (the caller decides).
Scaling, latency and comparison charts; the charts over time and per step are above.

Figures are created with `matplotlib.figure.Figure` directly, not pyplot: no global figure
registry to leak memory across many charts, no GUI backend; `fig.savefig` renders with Agg.
Every axis says its unit (requests/s, ms, workers, s).

The latency distribution: HdrHistogram's percentile plot, one line per configuration.

x is 1/(1-q) on a log axis, so 50 %, 90 %, 99 %, 99.9 % and 99.99 % are equally spaced and the tail
gets as much room as the median; y is the latency in ms. Built from exact histograms only (a rounded
run has none), repeats of one configuration merged first (exact.merge_books). Returns a Figure."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram
from matplotlib.figure import Figure

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import SERVICE, distribution, merge_books
from swarmbench.analysis.knee import Knee
from swarmbench.analysis.locust_csv import endpoint_label
from swarmbench.analysis.runs import Run
from swarmbench.analysis.scaling import ScalingGroup
from swarmbench.analysis.timeseries import resolution_note
from swarmbench.latency.histogram import new_histogram

# --- over time and per step -----------------------------------------------------------------------

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


# --- scaling, percentiles, user classes and stores ------------------------------------------------

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
    fig = figure()
    ax = fig.add_subplot()
    if not group.points:
        return message(fig, "no runs")
    if group.amdahl is not None:
        scale, what = group.amdahl.gamma, "fitted 1-worker throughput γ"
    else:
        first = group.points[0]
        scale, what = first.mean_rps / first.workers, f"mean per-worker throughput at N = {first.workers}"
    _scaling_axes(group, ax, scale, f"speedup (× {what})")
    ax.set_title(f"Speedup — {group.key.label()}", fontsize=10)
    return fig


def throughput_figure(group: ScalingGroup) -> Figure:
    fig = figure()
    ax = fig.add_subplot()
    if not group.points:
        return message(fig, "no runs")
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
    fig = figure((min(width_in, 24.0), 4.8))
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
    fig = figure()
    if agg.empty:
        return message(fig, "user counts unknown (no run.json)")
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
    fig = figure((10.0, 4.6))
    classes: Sequence[str] = sorted(agg[C.USER_CLASS].unique())
    if len(classes) < 2:
        return message(fig, "only one user class in these runs")
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
    fig = figure((10.0, 4.6))
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


# --- the latency distribution (percentile plot) ---------------------------------------------------

TICKS = {2.0: "50 %", 10.0: "90 %", 100.0: "99 %", 1_000.0: "99.9 %", 10_000.0: "99.99 %"}
"""Where the percentiles sit on the 1/(1-q) axis, and their labels."""


@dataclass(frozen=True)
class Line:
    label: str  # the configuration, e.g. "AlbumsHttpUser ×2 (2 runs merged)"
    hist: HdrHistogram


def configuration_lines(configs: Sequence[tuple[str, Sequence[Run]]], endpoint: str) -> list[Line]:
    """One Line per configuration (LABEL, its runs): ENDPOINT's service-time histograms of its runs
    merged losslessly; configurations without samples of ENDPOINT are left out."""
    lines = []
    for label, runs in configs:
        book = merge_books(r.latency.book for r in runs if r.latency.book is not None)
        if endpoint == C.AGGREGATED:
            hist = book.aggregated(SERVICE)
        else:
            hist = new_histogram()  # NAME's under every request type that labels it so
            for (t, n, k), h in book.hists.items():
                if k == SERVICE and endpoint_label(t, n) == endpoint:
                    hist.add(h)
        if hist.get_total_count():
            suffix = f" ({len(runs)} runs merged)" if len(runs) > 1 else ""
            lines.append(Line(f"{label}{suffix}, n={hist.get_total_count():,}", hist))
    return lines


def endpoints_of(runs: Sequence[Run]) -> list[str]:
    """Every endpoint with exact samples in RUNS, Aggregated first."""
    names: dict[str, None] = {C.AGGREGATED: None}
    for run in runs:
        if run.latency.book is not None:
            for t, n, k in sorted(run.latency.book.hists):
                if k == SERVICE:
                    names[endpoint_label(t, n)] = None
    return list(names)


def distribution_figure(lines: Sequence[Line], title: str) -> Figure:
    """Latency (ms) against percentile, x = 1/(1-q) on a log axis labelled in percent."""
    fig = figure((9.0, 4.8))
    ax = fig.add_subplot()
    top = 10.0
    for line in lines:
        curve = distribution(line.hist)
        ax.plot(curve["x"], curve["ms"], lw=1.4, label=line.label)
        top = max(top, float(curve["x"].max()))
    ax.set_xscale("log")
    ax.set_xlim(1, top * 1.05)
    ax.set_xticks(list(TICKS), list(TICKS.values()))
    ax.minorticks_off()
    ax.set_xlabel("percentile (log scale of 1/(1 − q))")
    ax.set_ylabel("latency (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Latency distribution — {title}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return fig
