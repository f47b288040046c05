"""compare.html's and trend.html's SVG charts (swarmbench/compare/svg.py): points land inside the plot
area, a log axis spaces decades evenly, labels are escaped, marks stand where their x is, every
interval row is drawn."""

from __future__ import annotations

import re

import numpy as np
import pytest

from swarmbench.compare import svg


def points(chart: str) -> list[tuple[float, float]]:
    found = re.findall(r'<polyline points="([^"]*)"', chart)
    return [tuple(map(float, p.split(","))) for line in found for p in line.split()]


def test_lines_stay_inside_the_plot_area_and_log_decades_are_even():
    x = np.array([1.0, 10.0, 100.0])
    chart = svg.lines([svg.Line(x, np.array([0.0, 50.0, 100.0]), "#000", "a <b>")], "t", "x", "y", xlog=True)
    xy = points(chart)
    assert len(xy) == 3
    assert all(svg.LEFT <= px <= svg.W - svg.RIGHT and svg.TOP <= py <= svg.H - svg.BOTTOM for px, py in xy)
    (x0, y0), (x1, _), (x2, y2) = xy
    assert abs((x1 - x0) - (x2 - x1)) < 0.2  # one decade, one width
    assert y0 > y2  # larger values higher up
    assert "a &lt;b&gt;" in chart and "<b>" not in chart


def test_a_step_line_doubles_its_points_and_nan_is_dropped():
    chart = svg.lines(
        [svg.Line(np.array([1.0, 2.0, np.nan]), np.array([1.0, 2.0, 3.0]), "#000", step=True)], "t", "x", "y"
    )
    assert len(points(chart)) == 3  # (1,1) (2,1) (2,2): flat until the next x


def test_marks_are_vertical_lines_at_their_x_with_one_legend_entry():
    x = np.arange(1.0, 11.0)
    chart = svg.lines([svg.Line(x, x * 2, "#000", "runs")], "t", "x", "y", marks=(3.5, 8.5), mark_label="cp")
    marks = re.findall(
        rf'<line x1="([\d.]+)" x2="([\d.]+)" y1="{svg.TOP}" y2="[\d.]+" stroke="{svg.MARK_COLOUR}"', chart
    )
    width = svg.W - svg.LEFT - svg.RIGHT
    expected = [svg.LEFT + 2.5 / 9 * width, svg.LEFT + 7.5 / 9 * width]
    assert [float(a) for a, b in marks if a == b] == pytest.approx(expected, abs=0.06)
    assert chart.count(">cp</text>") == 1
    assert svg.MARK_COLOUR not in svg.lines([svg.Line(x, x, "#000")], "t", "x", "y")


def test_intervals_draw_every_row_and_the_band():
    rows = [("p50", 10.0, 5.0, 15.0), ("p95", -3.0, -8.0, 2.0), ("none", float("nan"), 0.0, 0.0)]
    chart = svg.intervals(rows, 5.0, "t", "x")
    assert chart.count("<circle") == 2 and 'opacity="0.15"' in chart
    assert all(label in chart for label in ("p50", "p95", "none"))
