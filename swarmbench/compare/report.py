"""A comparison's outcome and every form it takes: the terminal table, compare.json, junit.xml and
compare.html (pure: strings and bytes, no files).

A comparison's outcome and its text forms: the terminal table, compare.json, junit.xml. Pure:
commands.py writes the files.

compare.html: the table, overlaid latency distributions, per-window series of both sides, and
every difference with its CI. Charts are inline SVG (page/svg.py: no matplotlib, one self-contained file)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

from swarmbench.compare.sides import Difference as SettingDifference
from swarmbench.compare.sides import Names
from swarmbench.compare.stats import METHOD, PERCENTILES, Difference, Grid, Side, percentiles_of
from swarmbench.core.checks import AGGREGATED, INCONCLUSIVE, REGRESSED, VERDICTS, band, verdict
from swarmbench.core.junit import Case, junit_xml
from swarmbench.page import skeleton, svg

# --- the outcome, its table, compare.json and junit.xml -------------------------------------------

UNITS = {"throughput": "req/s", "error_rate": "%", "p50": "ms", "p90": "ms", "p95": "ms", "p99": "ms"}


@dataclass(frozen=True)
class Row:
    """One metric of one request name."""

    name: str
    metric: str
    d: Difference
    verdict: str
    band: float


@dataclass
class Outcome:
    baseline: list[str]
    candidate: list[str]
    rows: list[Row]
    names: Names
    settings: list[SettingDifference]
    options: dict
    noise: dict[str, float]
    noise_source: str
    rounded: bool
    warnings: list[str] = field(default_factory=list)
    pooled: dict[str, int] = field(default_factory=dict)  # side -> calibration runs pooled with (0: none)
    method: str = METHOD  # the gate against history has its own (compare/trend.py GATE_METHOD)
    detectable: dict[str, float] = field(default_factory=dict)  # the gate: metric -> change it would catch
    ci_note: str = ""  # the gate: its CIs' levels (each row's share of the whole gate's), for the header
    sequential: dict | None = None  # make ab with BUDGET: the last look (compare/sequential.py Look.to_json)

    def count(self, which: str) -> int:
        return sum(r.verdict == which for r in self.rows)


def rows(found: dict[str, dict[str, Difference]], min_effect: float) -> list[Row]:
    """Every (name, metric) in the names' order, each with its verdict."""
    names = list(next(iter(found.values())))
    return [
        Row(n, m, found[m][n], verdict(m, found[m][n], min_effect), band(m, found[m][n].baseline, min_effect))
        for n in names
        for m in found
    ]


def shown(metric: str, value: float) -> str:
    """VALUE in the metric's display unit (error rate as a percentage)."""
    if math.isnan(value):
        return "-"
    return (
        f"{value * 100:.2f}" if metric == "error_rate" else f"{value:.3f}" if value < 100 else f"{value:.1f}"
    )


def relative(d: Difference) -> str:
    rel = d.relative
    return "-" if rel is None or math.isnan(rel) else f"{rel:+.1%}"


def table(outcome: Outcome) -> str:
    """The terminal table: one line per name and metric, then the verdict counts."""
    head = ("name", "metric", "baseline", "candidate", "diff", "CI", "change", "verdict")
    lines = [head]
    for r in outcome.rows:
        ci = f"[{shown(r.metric, r.d.low)}, {shown(r.metric, r.d.high)}]"
        lines.append(
            (
                r.name,
                f"{r.metric} ({UNITS[r.metric]})",
                shown(r.metric, r.d.baseline),
                shown(r.metric, r.d.candidate),
            )
            + (shown(r.metric, r.d.diff), ci, relative(r.d), r.verdict)
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    counts = ", ".join(f"{outcome.count(v)} {v}" for v in VERDICTS)
    return "\n".join([*header(outcome), "", *text, "", f"verdicts: {counts}"])


def header(outcome: Outcome) -> list[str]:
    o = outcome.options
    out = [
        f"baseline:  {len(outcome.baseline)} run(s)  {', '.join(outcome.baseline)}",
        f"candidate: {len(outcome.candidate)} run(s)  {', '.join(outcome.candidate)}",
        f"method: {outcome.method}; {outcome.ci_note or format(o['confidence'], '.0%') + ' CI'}, "
        f"seed {o['seed']}, min effect {o['min_effect']:.0%}",
        f"run-to-run noise ({outcome.noise_source}): "
        + ", ".join(f"{m} {v:.1%}" for m, v in outcome.noise.items()),
    ]
    if outcome.detectable:
        out.append(catches(outcome))
    if outcome.sequential:
        out.append(sequential_note(outcome.sequential))
    if min(len(outcome.baseline), len(outcome.candidate)) == 1 and outcome.method == METHOD:
        # (the gate against history learns the run-to-run variance from the past runs)
        out.append(
            "note: one run on a side cannot show run-to-run variance; the noise above is folded into the CI"
        )
    lent = {side: n for side, n in outcome.pooled.items() if n}
    if lent:
        out.append(
            "note: the repeats' run-to-run spread is pooled with the calibration's "
            + ", ".join(f"{n} runs ({side})" for side, n in lent.items())
            + " where the repeats are not noisier (F-test, 5 %)"
        )
    if outcome.rounded:
        out.append("note: some runs have no histograms: Locust's per-second history numbers used (rounded)")
    for s in outcome.settings:
        kind = "load" if s.load else "setting"
        out.append(f"differs ({kind}): {s.setting}: {s.baseline} -> {s.candidate}")
    for label, only in (
        ("baseline", outcome.names.baseline_only),
        ("candidate", outcome.names.candidate_only),
    ):
        if only:
            out.append(f"only in the {label} (not compared): {', '.join(only)}")
    return out


def catches(outcome: Outcome) -> str:
    """The gate's power in one line: per metric (Aggregated), the change it calls `regressed` 9 times
    in 10 at its runs and noise (compare/history_stats.py detectable)."""
    said = []
    for m, v in outcome.detectable.items():
        if math.isnan(v):
            said.append(f"{m} ?")
        elif m == "error_rate":
            said.append(f"{m} ≥ {v * 100:+.2f} pp")
        else:
            said.append(f"{m} {'≤' if v < 0 else '≥'} {v:+.1%}")
    return "would catch (9 times in 10, Aggregated): " + ", ".join(said)


def sequential_note(look: dict) -> str:
    """The sequential decision in one line: which look, whether every gated row was decisive, and
    that the gated rows' CIs are the design's repeated CIs (with their constants)."""
    cs = sorted({r["c"] for r in look["rows"] if r["c"] is not None})
    state = "every gated row decisive" if look["decided"] else "not every gated row decisive"
    where = f"look at pair {look['pairs']} of {look['max_pairs']} (first look {look['first_look']})"
    if look["pairs"] < look["first_look"]:
        return f"sequential: {where}: too few pairs for a look; the CIs are the fixed design's"
    return (
        f"sequential: stopped at the {where}, {state}; the CIs of "
        f"{', '.join(sorted({r['metric'] for r in look['rows']}))} are repeated CIs "
        "of a group-sequential paired design (pairs in time, d = log(B/A) per pair; Pocock-type "
        f"constant c = {', '.join(f'{c:.2f}' for c in cs)}), the change the pairs' geometric mean"
    )


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 6)


def to_json(outcome: Outcome) -> dict:
    return {
        "method": outcome.method,
        "options": outcome.options,
        "baseline": outcome.baseline,
        "candidate": outcome.candidate,
        "noise": {
            "source": outcome.noise_source,
            "relative_sd": outcome.noise,
            "pooled_runs": outcome.pooled,
        },
        "rounded": outcome.rounded,
        **({"detectable": {m: _num(v) for m, v in outcome.detectable.items()}} if outcome.detectable else {}),
        **({"sequential": outcome.sequential} if outcome.sequential else {}),
        "settings_differ": [s.__dict__ for s in outcome.settings],
        "names_only_in_baseline": outcome.names.baseline_only,
        "names_only_in_candidate": outcome.names.candidate_only,
        "warnings": outcome.warnings,
        "verdicts": {v: outcome.count(v) for v in VERDICTS},
        "results": [
            {
                "name": r.name,
                "metric": r.metric,
                "unit": "ratio" if r.metric == "error_rate" else UNITS[r.metric],
                "baseline": _num(r.d.baseline),
                "candidate": _num(r.d.candidate),
                "diff": _num(r.d.diff),
                "ci": [_num(r.d.low), _num(r.d.high)],
                "relative": _num(r.d.relative) if r.d.relative is not None else None,
                "band": _num(r.band),
                "verdict": r.verdict,
            }
            for r in outcome.rows
        ],
    }


def junit(outcome: Outcome, fail_on_inconclusive: bool = False) -> bytes:
    """One testcase per (name, metric): a failure when regressed (or inconclusive, if asked)."""
    failing = {REGRESSED, INCONCLUSIVE} if fail_on_inconclusive else {REGRESSED}
    cases = []
    for r in outcome.rows:
        line = (
            f"{r.metric} {r.name}: {shown(r.metric, r.d.baseline)} -> {shown(r.metric, r.d.candidate)} "
            f"({relative(r.d)}), CI [{shown(r.metric, r.d.low)}, {shown(r.metric, r.d.high)}]: {r.verdict}"
        )
        failed = r.verdict in failing
        cases.append(Case(f"compare.{r.name}", r.metric, line, line if failed else None, r.verdict))
    return junit_xml("swarmbench compare", cases)


# --- compare.html ---------------------------------------------------------------------------------

COLOURS = {"baseline": "#4c72b0", "candidate": "#dd8452"}


def distribution_chart(grid: Grid, sides: dict[str, Side]) -> str:
    """Aggregated latency CDF of each side (all its windows merged), log-scaled latency."""
    cols = grid.columns[AGGREGATED]
    found = []
    for label, side in sides.items():
        counts = side.merged.hist[:, cols].sum(axis=0)
        if counts.sum():
            keep = counts > 0  # only buckets with requests: the CDF's steps
            cdf = np.cumsum(counts)[keep] / counts.sum() * 100
            found.append(svg.Line(grid.values[cols][keep], cdf, COLOURS[label], label, step=True))
    return svg.lines(
        found, "Latency distribution, Aggregated", "latency (ms, log)", "requests at or under (%)", xlog=True
    )


def windows_chart(grid: Grid, sides: dict[str, Side]) -> str:
    """Per-window p50 and p95 of every run of both sides (Aggregated), over the run's seconds."""
    cols = grid.columns[AGGREGATED]
    found = []
    for label, side in sides.items():
        for i, run in enumerate(side.runs):
            p50, p95 = percentiles_of(run.hist[:, cols], grid.values[cols], [50.0, 95.0])
            x = np.arange(run.windows, dtype=float)
            found.append(svg.Line(x, p50, COLOURS[label], f"{label} p50" if i == 0 else None))
            found.append(svg.Line(x, p95, COLOURS[label], f"{label} p95" if i == 0 else None, dashed=True))
    return svg.lines(found, "Per-window latency, every run", "second of the run", "latency (ms)")


def differences_chart(outcome: Outcome) -> str:
    """Every difference as a relative change with its CI, and the +-min-effect band."""
    rows = [
        (
            f"{r.name} {r.metric}",
            r.d.diff / r.d.baseline * 100,
            r.d.low / r.d.baseline * 100,
            r.d.high / r.d.baseline * 100,
        )
        for r in outcome.rows
        if r.d.baseline and not np.isnan(r.d.low)
    ]
    band = outcome.options["min_effect"] * 100
    return svg.intervals(
        rows,
        band,
        f"Differences with their CI (band +-{band:g} %)",
        "candidate vs baseline (% of the baseline)",
    )


PAGE_CSS = ".regressed{background:#f8d0d0} .improved{background:#d0f0d0} .inconclusive{background:#fff3c0}"
"""compare.html's own rules, after page/skeleton.py's shared ones: each verdict's row colour."""


def page(outcome: Outcome, grid: Grid, baseline: Side, candidate: Side) -> str:
    sides = {"baseline": baseline, "candidate": candidate}
    charts = [
        ("Latency distributions", distribution_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Per-window series", windows_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Differences", differences_chart(outcome)),
    ]
    images = "\n".join(f"<h2>{title}</h2><figure>{chart}</figure>" for title, chart in charts if chart)
    rows = "\n".join(
        f"<tr class='{r.verdict.replace(' ', '-')}'><td>{html.escape(r.name)}</td><td>{r.metric}</td>"
        f"<td>{shown(r.metric, r.d.baseline)}</td><td>{shown(r.metric, r.d.candidate)}</td>"
        f"<td>[{shown(r.metric, r.d.low)}, {shown(r.metric, r.d.high)}]</td><td>{relative(r.d)}</td>"
        f"<td>{r.verdict}</td></tr>"
        for r in outcome.rows
    )
    power = f"\n<p>{html.escape(catches(outcome))}</p>" if outcome.detectable else ""  # the gate's
    body = f"""<h1>Did it get slower?</h1><pre>{html.escape(table(outcome))}</pre>{power}
<table><tr><th>name</th><th>metric</th><th>baseline</th><th>candidate</th><th>CI of the difference</th>
<th>change</th><th>verdict</th></tr>{rows}</table>
{images}
<p>Percentiles: {", ".join(f"p{p:g}" for p in PERCENTILES.values())} of the service time, merged exact
histograms; throughput in requests/s over the runs' full 1 s windows; error rate as %.</p>"""
    return skeleton.document("swarmbench compare", body, css=PAGE_CSS)
