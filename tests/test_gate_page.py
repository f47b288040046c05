"""compare.html of the gate against history (`swarmbench compare --history`): the page a user opens
and CI uploads. Read off the DOM headless Chromium rendered (verdicts, what the gate would catch, the
baseline runs it used) and held to compare.json, on a real SQLite history and real run folders
(history_runs.py: tests/fixtures/exact/repeat-1 scaled); the no-verdict page says why and what
differs; and a Hypothesis property: for any outcome, no figure the table or the page prints
contradicts compare.json's number (every one is the JSON's value by the one display rule)."""

from __future__ import annotations

import json
import math
import re
from html import unescape
from pathlib import Path

import numpy as np
from harness import swarmbench
from history_runs import at_mean, base_run, history, scaled, stored, write_folder
from hypothesis import given, settings
from hypothesis import strategies as st
from pages import browse, chromium, tables

from swarmbench.compare import report
from swarmbench.compare.sides import Names
from swarmbench.compare.stats import Difference
from swarmbench.compare.trend import GATE_MIN_RUNS, TAIL_MIN, tail_rests_on
from swarmbench.core.checks import AGGREGATED, COMPARE_METRICS, REGRESSED, band, verdict

VERDICT_HEAD = ["name", "metric", "baseline", "candidate", "CI of the difference", "change", "verdict"]
"""The verdict table's header (report.verdict_table): the A/B page's and the gate's."""


def rendered(page: Path) -> str:
    """PAGE's DOM as headless Chromium rendered it."""
    chromium()
    res = browse(page, "--dump-dom")
    assert res.returncode == 0 and "</html>" in res.stdout, res.stderr[-2000:]
    return res.stdout


def power_items(dom: str) -> dict[str, str]:
    """The page's `What it would catch` list: metric -> what follows `would catch `."""
    found = re.search(r'<ul class="power" id="power">(.*?)</ul>', dom, re.S)
    assert found, "no power list on the page"
    items = [unescape(i) for i in re.findall(r"<li>(.*?)</li>", found.group(1))]
    return {m: rest for m, rest in (re.fullmatch(r"(\w+): would catch (.+)", i).groups() for i in items)}


def decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def agrees(printed: str, value: float | None, scale: float = 1.0) -> bool:
    """PRINTED (a figure as shown) is VALUE (compare.json's, times SCALE) rounded to the printed
    decimals: within half a unit of its last digit. `-` only for no value."""
    if value is None:
        return printed == "-"
    digits = printed.removesuffix(" pp").removesuffix("%")
    half_unit = 0.5 * 10 ** -decimals(digits) * (1 + 1e-9)
    return abs(float(digits) - value * scale) <= half_unit + 1e-12 * abs(value)


def assert_verdicts_match(rows: list[list[str]], result: dict) -> None:
    """The page's verdict table, row by row, is compare.json's results by the display rule."""
    assert rows[0] == VERDICT_HEAD
    assert len(rows) - 1 == len(result["results"])
    for cells, r in zip(rows[1:], result["results"], strict=True):
        m = r["metric"]
        scale = 100.0 if m == "error_rate" else 1.0
        low, high = cells[4].strip("[]").split(", ")
        assert cells[:2] == [r["name"], m] and cells[6] == r["verdict"], cells
        for text, value in ((cells[2], r["baseline"]), (cells[3], r["candidate"]), (low, r["ci"][0]),
                            (high, r["ci"][1])):  # fmt: skip
            assert text == report.shown(m, value) and agrees(text, value, scale), (cells, r)
        rel = r["relative"]
        assert cells[5] == ("-" if rel is None else f"{rel:+.1%}") and agrees(cells[5], rel, 100.0), (
            cells,
            r,
        )


def test_the_gate_page_shows_compare_json_verdicts_power_and_baseline(tmp_path: Path) -> None:
    """12 past runs at 1 % noise, a candidate with every p95 +20 %: the rendered page's verdict
    table, power list and baseline table are compare.json's, figure by figure; one chart per metric
    of Aggregated, each with every baseline run and the candidate drawn."""
    runs = history(12, 0.01, seed=5)
    store = stored(tmp_path / "h.sqlite", runs)
    same = at_mean(store, runs[-1])
    slower = scaled(same, 101, {(s.type, s.name, "p95_ms"): 1.20 for s in same.stats}, run_id="slower")
    out = tmp_path / "gate"
    res = swarmbench("compare", "--history", store, write_folder(slower, tmp_path / "runs"), "-o", out)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "compare.html" in res.stdout.splitlines()[-1]
    result = json.loads((out / "compare.json").read_text())
    dom = rendered(out / "compare.html")
    found = tables(dom)

    assert_verdicts_match(found["verdicts"], result)
    regressed = [row[:2] for row in found["verdicts"][1:] if row[6] == REGRESSED]
    assert regressed and all(metric == "p95" for _, metric in regressed)

    power = power_items(dom)
    requests = next(s.requests for s in slower.stats if s.name == AGGREGATED)
    judged = [m for m in COMPARE_METRICS if (tail_rests_on(m, requests) or TAIL_MIN) >= TAIL_MIN]
    assert list(power) == list(result["detectable"]) == judged and "p99" not in judged  # 10 beyond p99
    for metric, said in power.items():
        value = result["detectable"][metric]
        assert said == report.catch(metric, value)
        assert agrees(said.split(" ", 1)[1], value, 100.0), (metric, said, value)
    assert power["p95"].startswith("≥ +") and power["throughput"].startswith("≤ -")

    base = dict(row for row in found["baseline"])
    h = result["history"]
    assert h["runs"] == len(result["baseline"]) == 12 and h["comparable_runs"] == 12
    assert base["baseline runs"] == "12 (the last 12 of 12 comparable runs)"
    assert (
        base["first"]
        == f"r0 ({runs[0].started_at})"
        == f"{h['first']['run_id']} ({h['first']['started_at']})"
    )
    assert base["last"] == f"r11 ({runs[-1].started_at})"
    assert base["outlier runs left out"] == str(h["left_out"]) == "0"
    assert base["accepted change it starts at"] == "none" and h["accepted_from"] is None
    assert base["candidate"] == "slower"

    charts = re.findall(r"<figure>(.*?)</figure>", dom, re.S)
    assert len(charts) == len(COMPARE_METRICS)
    for metric, chart in zip(COMPARE_METRICS, charts, strict=True):
        assert f"{AGGREGATED} {metric}: the candidate against its baseline runs" in chart
        assert f"{metric} ({report.UNITS[metric]})" in chart  # the axis, with its unit
        assert chart.count("<circle") == 12 + 1, metric  # every baseline run and the candidate
        assert len(h["aggregated"][metric]["runs"]) == 12 and len(h["aggregated"][metric]["candidate"]) == 1
    p95 = h["aggregated"]["p95"]
    mean = math.exp(np.mean(np.log(p95["runs"])))
    assert p95["candidate"][0] > 1.15 * mean  # the +20 % candidate, as stored beside its baseline


def test_the_gate_page_names_the_accepted_change_it_starts_at(tmp_path: Path) -> None:
    """30 runs, every p95 +20 % from run 26 on, accepted: the page's baseline starts there."""
    up = {(s.type, s.name, "p95_ms"): 1.20 for s in history(1, 0.0)[0].stats}
    runs = history(30, 0.01, seed=6, step=lambda i: up if i >= 25 else {})
    store = stored(tmp_path / "h.sqlite", runs)
    candidate = write_folder(at_mean(store, runs[-1], n=5), tmp_path / "runs")
    accepted = swarmbench("history", "accept", runs[25].run_id, "--reason", "costs 20 %", "--history", store)
    assert accepted.returncode == 0, accepted.stderr
    res = swarmbench("compare", "--history", store, candidate, "-o", tmp_path / "gate")
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads((tmp_path / "gate" / "compare.json").read_text())
    base = dict(tables(rendered(tmp_path / "gate" / "compare.html"))["baseline"])
    assert result["history"]["accepted_from"] == runs[25].run_id == base["accepted change it starts at"]
    assert base["baseline runs"] == "20 (the last 20 of 30 comparable runs)"
    assert base["first"].startswith("r10 (") and base["last"].startswith("r29 (")


def test_no_verdict_pages_say_why_and_what_differs(tmp_path: Path) -> None:
    """Too few comparable runs: the page says how many against how many it needs; none comparable
    (another testbed): the nearest configuration and each field that differs, as compare.json's."""
    runs = history(GATE_MIN_RUNS - 2, 0.02)
    store = stored(tmp_path / "h.sqlite", runs)
    folder = write_folder(at_mean(store, runs[-1]), tmp_path / "runs")
    res = swarmbench("compare", "--history", store, folder, "-o", tmp_path / "few")
    assert res.returncode == 0, res.stderr
    result = json.loads((tmp_path / "few" / "compare.json").read_text())
    dom = rendered(tmp_path / "few" / "compare.html")
    assert "<h1>No verdict: too few comparable runs</h1>" in dom
    facts = dict(tables(dom)["gate"])
    assert facts["comparable runs"] == str(result["comparable_runs"]) == str(GATE_MIN_RUNS - 2)
    assert facts["the gate needs"] == str(result["gate_needs"]) and facts["exit code"] == "0"
    assert unescape(dom).count(result["warning"][0]) == 1 and "nearest" not in tables(dom)

    other = scaled(base_run(testbed="ci-runner"), 200, {}, run_id="elsewhere")
    elsewhere = write_folder(other, tmp_path / "runs")
    res = swarmbench("compare", "--history", store, elsewhere, "-o", tmp_path / "none")
    assert res.returncode == 0 and "NO COMPARABLE RUN" in res.stderr, res.stderr
    result = json.loads((tmp_path / "none" / "compare.json").read_text())
    dom = rendered(tmp_path / "none" / "compare.html")
    assert "<h1>No verdict: no comparable run</h1>" in dom
    assert all(unescape(dom).count(line) == 1 for line in result["warning"])
    nearest = tables(dom)["nearest"]
    assert nearest[0] == ["differs in", "this run", "the history"]
    differ = [[d["field"], str(d["candidate"]), str(d["history"])] for d in result["nearest"]["differences"]]
    assert nearest[1:] == differ == [["testbed", "ci-runner", "t"]]


# --- the property: no printed figure contradicts compare.json --------------------------------------

FIGURES = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
LEVELS = st.floats(min_value=1e-4, max_value=1e6)
MAYBE = st.one_of(st.just(math.nan), FIGURES)
NAMES = st.sampled_from(["GET /a", "POST /b/{id}", "GET /c?q=1&x=<y>"])


@st.composite
def outcomes(draw: st.DrawFn) -> report.Outcome:
    """A gate's outcome with any figures: levels, differences and CIs (NaN among them), the change
    it would catch per metric, and the baseline's values drawn for Aggregated."""
    metrics = draw(st.lists(st.sampled_from(COMPARE_METRICS), min_size=1, max_size=6, unique=True))
    names = [*draw(st.lists(NAMES, max_size=2, unique=True)), AGGREGATED]
    min_effect = draw(st.sampled_from([0.0, 0.02, 0.05, 0.1]))
    rows = []
    for name in names:
        for m in metrics:
            b, c = draw(LEVELS), draw(st.one_of(LEVELS, st.just(math.nan)))
            low, high = sorted((draw(MAYBE), draw(MAYBE)))
            d = Difference(b, c, c - b, low, high)
            rows.append(report.Row(name, m, d, verdict(m, d, min_effect), band(m, b, min_effect)))
    n = draw(st.integers(1, 20))
    drawn = {m: {"runs": draw(st.lists(st.one_of(LEVELS, st.just(math.nan)), min_size=n, max_size=n)),
                 "candidate": draw(st.lists(LEVELS, min_size=1, max_size=3))} for m in metrics}  # fmt: skip
    return report.Outcome(
        baseline=[f"r{i}" for i in range(n)],
        candidate=["new"],
        rows=rows,
        names=Names(names, [], []),
        settings=[],
        options={"metrics": metrics, "names": None, "min_effect": min_effect, "confidence": 0.95, "seed": 0},
        noise={m: 0.01 for m in metrics},
        noise_source="drawn",
        rounded=False,
        detectable={m: draw(st.one_of(st.just(math.nan), st.floats(-0.99, 5.0))) for m in metrics},
        history={
            "store": "h.sqlite",
            "branch": "main",
            "comparable_runs": n,
            "runs": n,
            "first": {"run_id": "r0", "started_at": "2027-01-01T00:00:00Z"},
            "last": {"run_id": f"r{n - 1}", "started_at": "2027-01-01T00:09:00Z"},
            "left_out": 0,
            "accepted_from": None,
            "aggregated": drawn,
        },  # fmt: skip
    )


@settings(max_examples=300, deadline=None)
@given(outcomes())
def test_no_printed_figure_contradicts_compare_json(outcome: report.Outcome) -> None:
    """The text table (every column) and the page (its verdict table and power list), for any
    outcome: each figure is compare.json's (as a reader parses it) by the display rule, and within
    half a unit of its last printed digit of that number."""
    result = json.loads(json.dumps(report.to_json(outcome)))
    page = report.gate_page(outcome)
    assert_verdicts_match(tables(page)["verdicts"], result)
    power = power_items(page)
    assert list(power) == list(result["detectable"])
    for metric, said in power.items():
        value = result["detectable"][metric]
        assert said == report.catch(metric, value)
        if value is not None:
            assert agrees(said.split(" ", 1)[1], value, 100.0), (said, value)

    text = report.table(outcome).split("\n\n")[1].splitlines()
    for line, r in zip(text[1:], result["results"], strict=True):
        cells = re.split(r"\s{2,}", line)
        m, scale = r["metric"], 100.0 if r["metric"] == "error_rate" else 1.0
        low, high = cells[5].strip("[]").split(", ")
        for printed, value in ((cells[2], r["baseline"]), (cells[3], r["candidate"]), (cells[4], r["diff"]),
                               (low, r["ci"][0]), (high, r["ci"][1])):  # fmt: skip
            assert printed == report.shown(m, value) and agrees(printed, value, scale), (line, r)
        assert agrees(cells[6], r["relative"], 100.0) and cells[7] == r["verdict"], (line, r)
    assert report.catches(outcome).endswith(", ".join(f"{m} {power[m]}" for m in power))
