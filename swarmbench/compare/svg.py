"""compare.html's and trend.html's charts as inline SVG: lines (and vertical marks) on linear or log
axes, and intervals against a band.

Why not matplotlib: importing it and rendering three PNG figures took ~2 of the ~3 s a comparison
of two 10-minute runs took (bench/bench_compare.py); these charts are a few polylines, which SVG
draws in the browser, sharp at any zoom, in milliseconds of Python. Pure: strings out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np

W, H = 720, 300
"""Chart size in px; the plot area leaves margins for tick labels and the legend."""
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 28, 40


@dataclass
class Line:
    x: np.ndarray
    y: np.ndarray
    colour: str
    label: str | None = None
    dashed: bool = False
    step: bool = False  # a step function (a CDF): flat until the next x


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        out = [
            m * 10.0**e
            for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5)
        ]
        return [t for t in out if lo <= t <= hi]
    step = 10 ** math.floor(math.log10((hi - lo) / 5 or 1))
    step *= next(m for m in (1, 2, 5, 10) if (hi - lo) / (step * m) <= 6)
    return list(np.arange(math.ceil(lo / step) * step, hi + step / 2, step))


def _label(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.0e}"


class _Axes:
    def __init__(self, xs: np.ndarray, ys: np.ndarray, xlog: bool, ymin: float | None = None) -> None:
        xs, ys = xs[np.isfinite(xs)], ys[np.isfinite(ys)]
        if xlog:
            xs = xs[xs > 0]
        self.xlog = xlog
        self.x0, self.x1 = (float(xs.min()), float(xs.max())) if len(xs) else (1.0, 10.0)
        self.y0 = float(ys.min()) if ymin is None and len(ys) else (ymin or 0.0)
        self.y1 = float(ys.max()) if len(ys) else 1.0
        if self.x1 <= self.x0:
            self.x1 = self.x0 * 10 if xlog else self.x0 + 1
        if self.y1 <= self.y0:
            self.y1 = self.y0 + 1

    def px(self, x: np.ndarray) -> np.ndarray:
        f = np.log10 if self.xlog else (lambda v: v)
        return LEFT + (f(x) - f(self.x0)) / (f(self.x1) - f(self.x0)) * (W - LEFT - RIGHT)

    def py(self, y: np.ndarray) -> np.ndarray:
        return H - BOTTOM - (y - self.y0) / (self.y1 - self.y0) * (H - TOP - BOTTOM)

    def frame(self, title: str, xlabel: str, ylabel: str) -> list[str]:
        out = [
            f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" '
            'fill="none" stroke="#999"/>'
        ]
        for t in _ticks(self.x0, self.x1, self.xlog):
            x = float(self.px(np.array(t)))
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 14}" text-anchor="middle">{_label(t)}</text>')
        for t in _ticks(self.y0, self.y1, False):
            y = float(self.py(np.array(t)))
            out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{_label(t)}</text>')
        out.append(f'<text x="{W / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>')
        out.append(
            f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 6}" text-anchor="middle">{escape(xlabel)}</text>'
        )
        out.append(
            f'<text transform="translate(14,{(TOP + H - BOTTOM) / 2}) rotate(-90)" text-anchor="middle">'
            f"{escape(ylabel)}</text>"
        )
        return out


def _svg(body: list[str], height: int = H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" '
        f'font-size="11">' + "".join(body) + "</svg>"
    )


MARK_COLOUR = "#ff7f0e"
"""Vertical marks (the trend page's change points): apart from the lines' blue and red."""


def lines(
    series: list[Line],
    title: str,
    xlabel: str,
    ylabel: str,
    xlog: bool = False,
    marks: tuple[float, ...] = (),
    mark_label: str = "",
) -> str:
    """SERIES as polylines on shared axes, a legend on the right; MARKS: x positions drawn as
    vertical lines across the plot (one legend entry, MARK_LABEL)."""
    axes = _Axes(
        np.concatenate([s.x for s in series] or [np.zeros(0)]),
        np.concatenate([s.y for s in series] or [np.zeros(0)]),
        xlog,
    )
    body = axes.frame(title, xlabel, ylabel)
    legend = 0
    for s in series:
        ok = np.isfinite(s.x) & np.isfinite(s.y) & ((s.x > 0) if xlog else True)
        x, y = axes.px(s.x[ok]), axes.py(s.y[ok])
        if s.step and len(x) > 1:
            x, y = np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y, strict=True))
        dash = ' stroke-dasharray="4 3"' if s.dashed else ""
        body.append(f'<polyline points="{points}" fill="none" stroke="{s.colour}" stroke-width="1.3"{dash}/>')
        if s.label:
            ly = TOP + 10 + 16 * legend
            body.append(
                f'<line x1="{W - RIGHT + 10}" x2="{W - RIGHT + 30}" y1="{ly}" y2="{ly}" '
                f'stroke="{s.colour}"{dash}/>'
            )
            body.append(f'<text x="{W - RIGHT + 34}" y="{ly + 4}">{escape(s.label)}</text>')
            legend += 1
    for x in axes.px(np.asarray(marks, dtype=float)):
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="{MARK_COLOUR}" '
                    'stroke-width="2" stroke-dasharray="6 3"/>')  # fmt: skip
    if len(marks) and mark_label:
        ly = TOP + 10 + 16 * legend
        body.append(f'<line x1="{W - RIGHT + 10}" x2="{W - RIGHT + 30}" y1="{ly}" y2="{ly}" '
                    f'stroke="{MARK_COLOUR}" stroke-width="2" stroke-dasharray="6 3"/>')  # fmt: skip
        body.append(f'<text x="{W - RIGHT + 34}" y="{ly + 4}">{escape(mark_label)}</text>')
    return _svg(body)


def intervals(rows: list[tuple[str, float, float, float]], band: float, title: str, xlabel: str) -> str:
    """One row per (label, value, low, high): a dot and its interval, the ±BAND region shaded."""
    height = max(120, 22 * len(rows) + TOP + BOTTOM)
    values = np.array([v for _, *vs in rows for v in vs] + [-band, band], dtype=float)
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    pad = (hi - lo) * 0.05 or 1
    axes = _Axes(np.array([lo - pad, hi + pad]), np.array([0.0, 1.0]), False)
    left = 230
    scale = (W - left - 20) / (axes.x1 - axes.x0)

    def px(v: float) -> float:
        return left + (v - axes.x0) * scale

    body = [
        f'<rect x="{px(-band):.1f}" y="{TOP}" width="{px(band) - px(-band):.1f}" '
        f'height="{height - TOP - BOTTOM}" '
        'fill="#55a868" opacity="0.15"/>',
        f'<line x1="{px(0):.1f}" x2="{px(0):.1f}" y1="{TOP}" y2="{height - BOTTOM}" stroke="#999"/>',
        f'<text x="{W / 2}" y="16" text-anchor="middle" font-weight="bold">{escape(title)}</text>',
        f'<text x="{(left + W) / 2}" y="{height - 6}" text-anchor="middle">{escape(xlabel)}</text>',
    ]
    for t in _ticks(axes.x0, axes.x1, False):
        body.append(
            f'<text x="{px(t):.1f}" y="{height - BOTTOM + 14}" text-anchor="middle">{_label(t)}</text>'
        )
    for i, (label, value, low, high) in enumerate(rows):
        y = TOP + 11 + 22 * i
        body.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(label)}</text>')
        if all(math.isfinite(v) for v in (value, low, high)):
            body.append(
                f'<line x1="{px(low):.1f}" x2="{px(high):.1f}" y1="{y}" y2="{y}" '
                'stroke="#333" stroke-width="1.5"/>'
            )
            body.append(f'<circle cx="{px(value):.1f}" cy="{y}" r="3" fill="#333"/>')
    return _svg(body, height)
