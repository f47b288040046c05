"""Charts as inline SVG, standard library only: lines on linear or log axes (a second axis on the
right), intervals against a band, and horizontal bars. The run page's charts and compare.html's.

Why not matplotlib: importing it and rendering three PNG figures took ~2 of the ~3 s a comparison
of two 10-minute runs took (bench/bench_compare.py), and the Locust image, which writes every run's
page, has no matplotlib (nor numpy). These charts are a few polylines, which SVG draws in the
browser, sharp at any zoom, in milliseconds of Python. Pure: values in (lists, tuples, numpy arrays:
anything iterable of numbers), strings out. Every text from the data goes through html.escape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

W, H = 720, 300
"""Default chart size in px; the plot area leaves margins for tick labels and the legend."""
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 28, 40
"""Margins in px: tick labels left and below, the title above, the legend on the right."""
RIGHT_AXIS = 46
"""Extra right margin for a second axis's tick labels (its legend moves right by as much)."""
LEGEND_ROW = 16
"""Height of one legend entry, px."""
HEADROOM = 0.02
"""A linear axis reaches at least this share of its span above its largest value."""
LABEL_CHARS = 32
"""A legend label longer than this is cut, with an ellipsis (its full text is the line's tooltip)."""
CHAR_PX = 6.2
"""About the width of one character of the charts' 11 px sans-serif, for sizing the legend."""
LEGEND_MAX = 240
"""The widest right margin a legend may take, px."""

PALETTE = (
    "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
    "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd",
)  # fmt: skip
"""Colours for series that have no meaning of their own (request names, workers), in order."""


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


@dataclass
class Line:
    """One series. X and Y: numbers of equal length; a non-finite pair is left out."""

    x: Iterable[float]
    y: Iterable[float]
    colour: str
    label: str | None = None
    dashed: bool = False
    step: bool = False  # a step function (a CDF): flat until the next x
    right: bool = False  # on the second (right-hand) axis
    width: float = 1.3
    dots: bool = False  # a dot at each point too (single runs: a line of one point draws nothing)


def floats(values: Iterable[float]) -> list[float]:
    """VALUES as Python floats (numpy scalars, ints, None -> nan)."""
    return [math.nan if v is None else float(v) for v in values]


def ticks(lo: float, hi: float, log: bool) -> list[float]:
    """Round values between LO and HI: 1-2-5 per decade on a log axis, about five steps otherwise."""
    if log:
        out = [
            m * 10.0**e
            for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5)
        ]
        return [t for t in out if lo <= t <= hi * (1 + 1e-9)]
    step = _step(lo, hi)
    out, k = [], math.ceil(lo / step - 1e-9)
    while k * step <= hi + step * 1e-9:
        out.append(round(k * step, 12))
        k += 1
    return out


def _step(lo: float, hi: float) -> float:
    step = 10 ** math.floor(math.log10((hi - lo) / 5 or 1))
    return step * next(m for m in (1, 2, 5, 10) if (hi - lo) / (step * m) <= 6)


def label(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.0e}"


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


class Axis:
    """One axis's range and its mapping to pixels (P0 at LO, P1 at HI)."""

    def __init__(
        self, values: list[float], log: bool, p0: float, p1: float, low: float | None = None
    ) -> None:
        finite = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
        self.log = log
        self.lo = min(finite) if finite else (1.0 if log else 0.0)
        self.hi = max(finite) if finite else (10.0 if log else 1.0)
        if low is not None and not log:
            self.lo = min(low, self.lo)
        if self.hi <= self.lo:
            self.hi = self.lo * 10 if log else self.lo + 1
        self.p0, self.p1 = p0, p1

    def nice(self) -> None:
        """Extend a linear axis to a round tick above its largest value (a line at the maximum is not
        drawn on the frame), so its top is labelled."""
        if not self.log:
            step = _step(self.lo, self.hi)
            self.hi = math.ceil((self.hi + (self.hi - self.lo) * HEADROOM) / step - 1e-9) * step

    def __call__(self, v: float) -> float:
        if self.log:
            f = math.log10(v) - math.log10(self.lo)
            span = math.log10(self.hi) - math.log10(self.lo)
        else:
            f, span = v - self.lo, self.hi - self.lo
        return self.p0 + f / span * (self.p1 - self.p0)

    def ticks(self) -> list[float]:
        return ticks(self.lo, self.hi, self.log)


def svg(body: list[str], width: int = W, height: int = H) -> str:
    """BODY in an <svg> that scales down with its container (viewBox) and never up."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" font-family="sans-serif" '
        f'font-size="11">' + "".join(body) + "</svg>"
    )


def _points(xs: list[float], ys: list[float], step: bool) -> str:
    if step and len(xs) > 1:
        xs = [x for x in xs for _ in (0, 1)][1:]
        ys = [y for y in ys for _ in (0, 1)][:-1]
    return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys, strict=True))


def lines(
    series: Sequence[Line],
    title: str,
    xlabel: str,
    ylabel: str,
    xlog: bool = False,
    *,
    right_label: str | None = None,
    xticks: Sequence[tuple[float, str]] | None = None,
    ymin: float | None = None,
    hlines: Sequence[tuple[float, str, str]] = (),
    vlines: Sequence[tuple[float, str]] = (),
    width: int = W,
    height: int = H,
    right_px: int | None = None,
    xlim: tuple[float, float] | None = None,
) -> str:
    """SERIES as polylines on shared axes, a legend on the right. RIGHT_LABEL: the second axis, for
    the series marked `right`. XTICKS: (value, text) instead of round numbers. YMIN: the left axis
    starts no higher (0 for latencies). HLINES: (y, colour, label) dashed across the plot (a bound);
    VLINES: (x, text) marked from top to bottom (an event). RIGHT_PX: the right margin, second axis
    and legend (charts stacked on one page keep one plot width), else as wide as they need. XLIM:
    the x axis's range (charts of one time axis), points outside it left out."""
    data = [(s, floats(s.x), floats(s.y)) for s in series]
    has_right = right_label is not None and any(s.right for s in series)
    labels = [s.label or "" for s in series] + [h[2] for h in hlines]
    right = right_px or legend_width(labels) + (RIGHT_AXIS if has_right else 0)
    x1, y0 = width - right, height - BOTTOM
    xaxis = Axis(list(xlim) if xlim else [v for _, xs, _ in data for v in xs], xlog, LEFT, x1)
    left_values = [v for s, _, ys in data if not (has_right and s.right) for v in ys] + [h[0] for h in hlines]
    yaxis = Axis(left_values, False, y0, TOP, ymin)
    yaxis.nice()
    raxis = Axis([v for s, _, ys in data if s.right for v in ys], False, y0, TOP, 0.0)
    raxis.nice()
    body = _frame(xaxis, yaxis, xticks, (title, xlabel, ylabel), width, height)
    if has_right:
        body += _right_axis(raxis, x1, y0, right_label or "")
    legend = _guides(body, xaxis, yaxis, hlines, vlines)
    for s, xs, ys in data:
        axis = raxis if has_right and s.right else yaxis
        keep = [
            (xaxis(x), axis(y))
            for x, y in zip(xs, ys, strict=True)
            if math.isfinite(x) and math.isfinite(y) and (x > 0 or not xlog) and xaxis.lo <= x <= xaxis.hi
        ]
        dash = ' stroke-dasharray="4 3"' if s.dashed else ""
        tip = f"<title>{escape(s.label)}</title>" if s.label else ""
        body.append(
            f'<polyline points="{_points([p[0] for p in keep], [p[1] for p in keep], s.step)}" fill="none" '
            f'stroke="{s.colour}" stroke-width="{s.width}"{dash}>{tip}</polyline>'
        )
        if s.dots:
            body += [
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{s.colour}">{tip}</circle>'
                for px, py in keep
            ]
        if s.label:
            legend.append((s.colour, dash, s.label + (" (right)" if has_right and s.right else "")))
    body += _legend(legend, x1 + (RIGHT_AXIS if has_right else 0) + 10, y0)
    return svg(body, width, height)


def _right_axis(axis: Axis, x1: float, y0: float, text: str) -> list[str]:
    """The second axis's tick labels right of the plot (X1) and its label TEXT."""
    out = [f'<text x="{x1 + 4}" y="{axis(t) + 4:.1f}" fill="#555">{label(t)}</text>' for t in axis.ticks()]
    out.append(
        f'<text transform="translate({x1 + RIGHT_AXIS - 6},{(TOP + y0) / 2}) rotate(-90)" '
        f'text-anchor="middle" fill="#555">{escape(text)}</text>'
    )
    return out


def _frame(
    xaxis: Axis,
    yaxis: Axis,
    xticks: Sequence[tuple[float, str]] | None,
    texts: tuple[str, str, str],
    width: int,
    height: int,
) -> list[str]:
    """The plot area's frame, grid and tick labels, the title and the axis labels (TEXTS)."""
    title, xlabel, ylabel = texts
    x1, y0 = xaxis.p1, yaxis.p0
    body = [f'<rect x="{LEFT}" y="{TOP}" width="{x1 - LEFT}" height="{y0 - TOP}" fill="none" stroke="#999"/>']
    body += _xgrid(xaxis, xticks if xticks is not None else [(t, label(t)) for t in xaxis.ticks()], y0)
    for t in yaxis.ticks():
        y = yaxis(t)
        body.append(f'<line x1="{LEFT}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        body.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{label(t)}</text>')
    body.append(
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>'
    )
    body.append(f'<text x="{(LEFT + x1) / 2}" y="{height - 6}" text-anchor="middle">{escape(xlabel)}</text>')
    body.append(
        f'<text transform="translate(14,{(TOP + y0) / 2}) rotate(-90)" text-anchor="middle">'
        f"{escape(ylabel)}</text>"
    )
    return body


def _xgrid(axis: Axis, marks: Sequence[tuple[float, str]], bottom: float) -> list[str]:
    """A vertical grid line and a label under the plot at each of MARKS (value, text) in AXIS's range."""
    out = []
    for t, text in marks:
        if axis.lo <= t <= axis.hi * (1 + 1e-9):
            x = axis(t)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{bottom}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{escape(text)}</text>')
    return out


def _guides(
    body: list[str],
    xaxis: Axis,
    yaxis: Axis,
    hlines: Sequence[tuple[float, str, str]],
    vlines: Sequence[tuple[float, str]],
) -> list[tuple[str, str, str]]:
    """HLINES and VLINES drawn into BODY; the legend entries of the HLINES."""
    legend = []
    for y, stroke, text in hlines:
        if math.isfinite(y):
            py = yaxis(y)
            body.append(
                f'<line x1="{LEFT}" x2="{xaxis.p1}" y1="{py:.1f}" y2="{py:.1f}" stroke="{stroke}" '
                'stroke-dasharray="6 4"/>'
            )
            legend.append((stroke, ' stroke-dasharray="6 4"', text))
    for x, text in vlines:
        if math.isfinite(x) and xaxis.lo <= x <= xaxis.hi:
            px = xaxis(x)
            body.append(
                f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{TOP}" y2="{yaxis.p0}" stroke="#9a6700" '
                f'stroke-dasharray="2 3"/><text x="{px + 3:.1f}" y="{TOP + 10}" fill="#9a6700">'
                f"{escape(_cut(text))}<title>{escape(text)}</title></text>"
            )
    return legend


def legend_width(labels: Sequence[str]) -> int:
    """The right margin a legend of LABELS needs (at least RIGHT; labels are cut at LABEL_CHARS)."""
    longest = max((len(_cut(t)) for t in labels), default=0)
    return max(RIGHT, min(LEGEND_MAX, int(40 + CHAR_PX * longest)))


def _legend(entries: list[tuple[str, str, str]], x: float, bottom: float) -> list[str]:
    """(colour, dash attribute, text) rows from the top; those that do not fit are counted."""
    fits = max(1, int((bottom - TOP - 10) // LEGEND_ROW))
    shown = entries if len(entries) <= fits else entries[: fits - 1]
    out = []
    for i, (stroke, dash, text) in enumerate(shown):
        y = TOP + 10 + LEGEND_ROW * i
        out.append(
            f'<line x1="{x}" x2="{x + 20}" y1="{y}" y2="{y}" stroke="{stroke}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{x + 24}" y="{y + 4}">{escape(_cut(text))}<title>{escape(text)}</title></text>')
    if len(shown) < len(entries):
        y = TOP + 10 + LEGEND_ROW * len(shown)
        out.append(f'<text x="{x + 24}" y="{y + 4}" fill="#666">+{len(entries) - len(shown)} more</text>')
    return out


def intervals(rows: list[tuple[str, float, float, float]], band: float, title: str, xlabel: str) -> str:
    """One row per (label, value, low, high): a dot and its interval, the ±BAND region shaded."""
    height = max(120, 22 * len(rows) + TOP + BOTTOM)
    values = [v for _, *vs in rows for v in vs if math.isfinite(v)] + [-band, band]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.05 or 1
    left = 230
    axis = Axis([lo - pad, hi + pad], False, left, W - 20)
    body = [
        f'<rect x="{axis(-band):.1f}" y="{TOP}" width="{axis(band) - axis(-band):.1f}" '
        f'height="{height - TOP - BOTTOM}" fill="#55a868" opacity="0.15"/>',
        f'<line x1="{axis(0):.1f}" x2="{axis(0):.1f}" y1="{TOP}" y2="{height - BOTTOM}" stroke="#999"/>',
        f'<text x="{W / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>',
        f'<text x="{(left + W) / 2}" y="{height - 6}" text-anchor="middle">{escape(xlabel)}</text>',
    ]
    for t in axis.ticks():
        body.append(
            f'<text x="{axis(t):.1f}" y="{height - BOTTOM + 14}" text-anchor="middle">{label(t)}</text>'
        )
    for i, (name, value, low, high) in enumerate(rows):
        y = TOP + 11 + 22 * i
        body.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(name)}</text>')
        if all(math.isfinite(v) for v in (value, low, high)):
            body.append(
                f'<line x1="{axis(low):.1f}" x2="{axis(high):.1f}" y1="{y}" y2="{y}" stroke="#333" '
                'stroke-width="1.5"/>'
            )
            body.append(f'<circle cx="{axis(value):.1f}" cy="{y}" r="3" fill="#333"/>')
    return svg(body, W, height)


def bars(
    rows: Sequence[tuple[str, Sequence[float]]],
    keys: Sequence[tuple[str, str]],
    title: str,
    xlabel: str,
    mark: tuple[float, str] | None = None,
    width: int = W,
    right_px: int | None = None,
) -> str:
    """Horizontal bars: per row (label, one value per KEYS entry (text, colour)), the row's bars
    stacked one under the other, its value written after each; MARK (x, text): a dashed line across
    (a limit). A non-finite value draws no bar and reads "-". RIGHT_PX: as lines()'."""
    right = right_px or RIGHT
    per = max(1, len(keys))
    row_h = 14 * per + 10
    entries = len(keys) + (1 if mark else 0)
    height = TOP + BOTTOM + max(row_h * max(1, len(rows)), 10 + LEGEND_ROW * entries)
    left = 200
    values = [v for _, vs in rows for v in floats(vs) if math.isfinite(v)] + ([mark[0]] if mark else [])
    axis = Axis(values, False, left, width - right, 0.0)
    axis.hi *= 1.08  # room for the value written after the longest bar
    y0 = height - BOTTOM
    body = [f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>']
    body += _xgrid(axis, [(t, label(t)) for t in axis.ticks()], y0)
    body.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 6}" text-anchor="middle">'
        f"{escape(xlabel)}</text>"
    )
    for i, (name, vs) in enumerate(rows):
        top = TOP + row_h * i + 5
        body.append(
            f'<text x="{left - 6}" y="{top + 7 * per + 4}" text-anchor="end">{escape(_cut(name))}'
            f"<title>{escape(name)}</title></text>"
        )
        for j, v in enumerate(floats(vs)[:per]):
            y = top + 14 * j
            if math.isfinite(v):
                body.append(
                    f'<rect x="{left}" y="{y}" width="{max(0.0, axis(v) - left):.1f}" height="11" '
                    f'fill="{keys[j][1]}"/>'
                )
                body.append(f'<text x="{axis(v) + 4:.1f}" y="{y + 9}">{label(round(v, 1))}</text>')
            else:
                body.append(f'<text x="{left + 4}" y="{y + 9}" fill="#666">-</text>')
    body.append(f'<line x1="{left}" x2="{left}" y1="{TOP}" y2="{y0}" stroke="#999"/>')
    legend = [(c, "", text) for text, c in keys]
    if mark:
        x = axis(mark[0])
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{y0}" stroke="#c44e52" stroke-dasharray="6 4"/>'
        )
        legend.append(("#c44e52", ' stroke-dasharray="6 4"', mark[1]))
    body += _legend(legend, width - right + 10, y0)
    return svg(body, width, height)
