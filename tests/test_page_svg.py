"""The stdlib SVG charts (swarmbench/page/svg.py) of the run page and compare.html: points land inside
the plot area, a log axis spaces decades evenly, labels are escaped, every interval row and bar is
drawn, numpy arrays (compare's) and lists (the page's) draw the same chart."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmbench.page import svg

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority


def points(chart: str) -> list[tuple[float, float]]:
    found = re.findall(r'<polyline points="([^"]*)"', chart)
    return [tuple(map(float, p.split(","))) for line in found for p in line.split()]


def test_lines_stay_inside_the_plot_area_and_log_decades_are_even():
    x = [1.0, 10.0, 100.0]
    chart = svg.lines([svg.Line(x, [0.0, 50.0, 100.0], "#000", "a <b>")], "t", "x", "y", xlog=True)
    xy = points(chart)
    assert len(xy) == 3
    assert all(svg.LEFT <= px <= svg.W - svg.RIGHT and svg.TOP <= py <= svg.H - svg.BOTTOM for px, py in xy)
    (x0, y0), (x1, _), (x2, y2) = xy
    assert abs((x1 - x0) - (x2 - x1)) < 0.2  # one decade, one width
    assert y0 > y2  # larger values higher up
    assert "a &lt;b&gt;" in chart and "<b>" not in chart


def test_numpy_arrays_and_lists_draw_the_same_chart():
    x, y = [1.0, 2.0, 3.5], [4.0, 1.0, 9.0]
    as_lists = svg.lines([svg.Line(x, y, "#000", "l")], "t", "x", "y")
    as_arrays = svg.lines([svg.Line(np.array(x), np.array(y), "#000", "l")], "t", "x", "y")
    assert as_lists == as_arrays


def test_a_step_line_doubles_its_points_and_nan_is_dropped():
    chart = svg.lines([svg.Line([1.0, 2.0, float("nan")], [1.0, 2.0, 3.0], "#000", step=True)], "t", "x", "y")
    assert len(points(chart)) == 3  # (1,1) (2,1) (2,2): flat until the next x


def test_a_right_axis_has_its_own_scale():
    chart = svg.lines(
        [svg.Line([0, 1], [0.0, 1000.0], "#111", "rps"),
         svg.Line([0, 1], [0.0, 5.0], "#222", "users", right=True)],
        "t", "s", "rps", right_label="users",
    )  # fmt: skip
    rps, users = re.findall(r'<polyline points="([^"]*)"', chart)
    # 1000 on an axis to 1200 and 5 on one to 6: the same height, each on its own scale.
    assert rps.split()[-1].split(",")[1] == users.split()[-1].split(",")[1]
    assert "users (right)" in chart and ">1200<" in chart and ">6<" in chart


def test_intervals_draw_every_row_and_the_band():
    rows = [("p50", 10.0, 5.0, 15.0), ("p95", -3.0, -8.0, 2.0), ("none", float("nan"), 0.0, 0.0)]
    chart = svg.intervals(rows, 5.0, "t", "x")
    assert chart.count("<circle") == 2 and 'opacity="0.15"' in chart
    assert all(label in chart for label in ("p50", "p95", "none"))


def test_bars_draw_each_finite_value_and_say_dash_for_none():
    chart = svg.bars(
        [("w1", [50.0, 80.0]), ("w2", [float("nan"), 20.0])], [("mean", "#1"), ("max", "#2")], "t", "%"
    )
    assert chart.count("<rect") == 3 and ">-<" in chart


@given(
    st.lists(
        st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=30,
    )
)
def test_every_finite_point_is_inside_the_plot_area(pairs):
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    chart = svg.lines([svg.Line(x, y, "#000", "s")], "t", "x", "y")
    for px, py in points(chart):
        assert svg.LEFT - 0.06 <= px <= svg.W - svg.RIGHT + 0.06
        assert svg.TOP - 0.06 <= py <= svg.H - svg.BOTTOM + 0.06
