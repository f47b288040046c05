"""Charts and the HTML page, in-process: Figures returned (no files), units on axes, text escaped."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from swarmbench.analysis import plots
from swarmbench.analysis.plots import figure_png
from swarmbench.analysis.report import build_report, render_charts
from swarmbench.analysis.runs import load_runs
from swarmbench.analysis.scaling import analyze_scaling
from swarmbench.analysis.summary import summarize
from swarmbench.analysis.timeseries import run_series

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

FIXTURES = Path(__file__).parent / "fixtures" / "analysis"
UNITS = ("(requests/s)", "(ms)", "workers", "(s)", "speedup (×", "(count)", "users")


@pytest.fixture(scope="module")
def data():
    runs = load_runs([FIXTURES / "sweep"])
    groups, _ = analyze_scaling(runs)
    return runs, summarize(runs), groups


def figures(data) -> dict[str, Figure]:
    runs, summary, groups = data
    return {
        "speedup": plots.speedup_figure(groups[0]),
        "throughput": plots.throughput_figure(groups[0]),
        "endpoints": plots.endpoint_percentiles_figure(summary),
        "over_time": plots.over_time_figure(run_series(runs[0]), runs[0].label),
        "latency_users": plots.latency_vs_users_figure(summary),
        "classes": plots.user_class_comparison_figure(summary),
    }


def test_every_chart_is_a_figure_with_labelled_axes(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, fig in figures(data).items():
        assert isinstance(fig, Figure), name
        for ax in fig.axes:
            if not ax.has_data():
                continue
            assert ax.get_ylabel() and any(u in ax.get_ylabel() for u in UNITS), (name, ax.get_ylabel())
            if name == "endpoints":  # bar panels: one bar group per run, not a quantity
                assert ax.get_xlabel().startswith("run")
            else:  # a panel stacked on (or twinned with) another shows the x label once
                xlabels = [a.get_xlabel() for a in ax.get_shared_x_axes().get_siblings(ax)]
                assert any(u in x for x in xlabels for u in UNITS), (name, xlabels)
        assert figure_png(fig).startswith(b"\x89PNG")
    assert list(tmp_path.iterdir()) == []  # plots never write files


def test_speedup_chart_shows_points_ideal_and_both_fits(data):
    fig = plots.speedup_figure(data[2][0])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert {"ideal (linear)", "Amdahl fit", "USL fit"} <= set(labels)
    assert "Amdahl s = " in " ".join(t.get_text() for t in fig.axes[0].texts)


def test_long_runs_get_wider_windows_a_multiple_of_the_report_interval(data):
    run = next(r for r in data[0] if r.meta.mode != "local")
    series = run_series(run, max_points=2)
    agg = series[series.endpoint == "Aggregated"]
    assert (~agg.partial).sum() <= 2 + 1  # + the zero window before the first reports
    assert series.attrs["window_s"] % series.attrs["interval_s"] == 0 and series.attrs["window_s"] > 3
    assert (agg.rps * agg.window_s).sum() == pytest.approx(run.aggregated["requests"])


def test_over_time_chart_draws_count_rates_and_says_its_window_and_resolution(data):
    run = next(r for r in data[0] if r.meta.mode != "local")
    series = run_series(run)
    fig = plots.over_time_figure(series, run.label)
    top, bottom = fig.axes[0], fig.axes[1]
    assert "~10 s window" in top.get_title()
    assert "resolution here 1 ms" in " ".join(t.get_text() for t in top.texts)
    full = series[(series.endpoint == "Aggregated") & ~series.partial]
    drawn = bottom.collections[0].get_segments()  # full windows: one horizontal segment each
    assert [seg[0][1] for seg in drawn] == pytest.approx(full.rps.tolist())
    assert [(seg[0][0], seg[1][0]) for seg in drawn] == list(
        zip(full.t_s - full.window_s, full.t_s, strict=True)
    )


def test_report_is_one_self_contained_escaped_page(data):
    runs, summary, groups = data
    evil = "<script>alert(1)</script>"
    runs = [dataclasses.replace(runs[0], meta=dataclasses.replace(runs[0].meta, run_id=evil)), *runs[1:]]
    summary = summarize(runs)
    charts = render_charts(runs, summary, groups)
    page = build_report(runs, summary, groups, charts, warnings=[f"w {evil}"], inputs=["x"])
    assert evil not in page and "&lt;script&gt;" in page
    assert page.count("<img") == len(charts) and not re.search(r'src="(?!data:image/png;base64,)', page)
    order = [page.index(h) for h in ("What was run", "Scaling verdict", "Charts", "Per-endpoint summary")]
    assert order == sorted(order)
