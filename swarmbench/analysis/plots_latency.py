"""The latency distribution: HdrHistogram's percentile plot, one line per configuration.

x is 1/(1-q) on a log axis, so 50 %, 90 %, 99 %, 99.9 % and 99.99 % are equally spaced and the tail
gets as much room as the median; y is the latency in ms. Built from exact histograms only (a rounded
run has none), repeats of one configuration merged first (exact.merge_books). Returns a Figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram
from matplotlib.figure import Figure

from swarmbench.analysis import columns as C
from swarmbench.analysis.exact import distribution, merge_books
from swarmbench.analysis.load import Run
from swarmbench.analysis.locust_csv import endpoint_label
from swarmbench.analysis.plots_time import figure
from swarmbench.analysis.windows_csv import SERVICE
from swarmbench.hdr import new_histogram

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
