"""A comparison's outcome and every form it takes: the terminal table, compare.json, junit.xml and
compare.html (pure: strings and bytes, no files; commands.py writes them).

compare.html of two sides: the table, overlaid latency distributions, per-window series of both
sides, and every difference with its CI. compare.html of the gate against history (gate_page): the
same table of verdicts, what the gate would catch per metric, the baseline runs it used, and per
metric of Aggregated the baseline runs' values with the candidate and the band; without a verdict
(no_verdict_page), why and the nearest configuration. Every printed figure goes through one display
rule (shown, relative, catch) applied to the figure as compare.json holds it. Charts are inline SVG
(page/svg.py: no matplotlib, one self-contained file)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

from swarmbench.compare.sides import Difference as SettingDifference
from swarmbench.compare.sides import Names
from swarmbench.compare.stats import METHOD, PERCENTILES, Difference, Grid, Side, percentiles_of
from swarmbench.core import skeleton
from swarmbench.core.checks import (
    AGGREGATED,
    HIGHER_IS_WORSE,
    INCONCLUSIVE,
    REGRESSED,
    VERDICTS,
    band,
    verdict,
)
from swarmbench.core.junit import Case, junit_xml
from swarmbench.page import svg

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
    history: dict = field(default_factory=dict)  # the gate: the baseline runs it used (trend.gate_outcome)
    notes: list[str] = field(default_factory=list)  # lines for the header (a duet: each side's CPU)
    extra: dict = field(default_factory=dict)  # keys compare.json adds (a duet: each run's pairs)
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


def shown(metric: str, value: float | None) -> str:
    """VALUE in the metric's display unit (error rate as a percentage): the one display rule of every
    figure the table, junit.xml and compare.html print, applied to the figure as compare.json holds it
    (_num: 6 decimals), so no printed figure rounds differently from its JSON number."""
    value = _num(value)
    if value is None:
        return "-"
    return (
        f"{value * 100:.2f}" if metric == "error_rate" else f"{value:.3f}" if value < 100 else f"{value:.1f}"
    )


def relative(d: Difference) -> str:
    """The relative change as printed (compare.json's `relative`, as a signed percentage)."""
    rel = _num(d.relative)
    return "-" if rel is None else f"{rel:+.1%}"


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


def whole_table(confidence: float) -> str:
    """The CI level a table of intervals holds at (compare/stats.py simultaneous): every row together."""
    return f"{confidence:.0%} CI for the whole table"


def header(outcome: Outcome) -> list[str]:
    o = outcome.options
    out = [
        f"baseline:  {len(outcome.baseline)} run(s)  {', '.join(outcome.baseline)}",
        f"candidate: {len(outcome.candidate)} run(s)  {', '.join(outcome.candidate)}",
        f"method: {outcome.method}; {outcome.ci_note or whole_table(o['confidence'])}, "
        f"seed {o['seed']}, min effect {o['min_effect']:.0%}",
        f"run-to-run noise ({outcome.noise_source}): "
        + ", ".join(f"{m} {v:.1%}" for m, v in outcome.noise.items())
        if outcome.noise
        else f"run-to-run noise: {outcome.noise_source}",
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
    out += outcome.notes
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
    said = ", ".join(f"{m} {catch(m, v)}" for m, v in outcome.detectable.items())
    return "would catch (9 times in 10, Aggregated): " + said


def catch(metric: str, value: float) -> str:
    """The change METRIC's rows would catch (compare.json's `detectable`, by the display rule): a
    relative change, signed (throughput's is a fall), or the error rate's rise in points."""
    v = _num(value)
    if v is None:
        return "?"
    if metric == "error_rate":
        return f"≥ {v * 100:+.2f} pp"
    return f"{'≤' if v < 0 else '≥'} {v:+.1%}"


def _num(value: float | None) -> float | None:
    """A figure as compare.json holds it: 6 decimals; None for none (NaN, infinite)."""
    return None if value is None or not math.isfinite(value) else round(value, 6)


def sequential_note(look: dict) -> str:
    """The sequential decision in one line: which look, whether every gated row was decisive, and
    that the gated rows' CIs are the design's repeated CIs (with their constants)."""
    cs = sorted({r["c"] for r in look["rows"] if r["c"] is not None})
    state = "every gated row decisive" if look["decided"] else "not every gated row decisive"
    unit = look.get("unit", "pair")  # a sequential duet's pair is one duet run
    where = f"look at {unit} {look['pairs']} of {look['max_pairs']} (first look {look['first_look']})"
    if look["pairs"] < look["first_look"]:
        return f"sequential: {where}: too few {unit}s for a look; the CIs are the fixed design's"
    return (
        f"sequential: stopped at the {where}, {state}; the CIs of "
        f"{', '.join(sorted({r['metric'] for r in look['rows']}))} are repeated CIs "
        f"of a group-sequential paired design ({unit}s in time, d = log(B/A) per {unit}; Pocock-type "
        f"constant c = {', '.join(f'{c:.2f}' for c in cs)}), the change the {unit}s' geometric mean"
    )


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
        **({"history": history_json(outcome.history)} if outcome.history else {}),
        **({"sequential": outcome.sequential} if outcome.sequential else {}),
        "settings_differ": [s.__dict__ for s in outcome.settings],
        "names_only_in_baseline": outcome.names.baseline_only,
        "names_only_in_candidate": outcome.names.candidate_only,
        "warnings": outcome.warnings,
        **outcome.extra,
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


def history_json(history: dict) -> dict:
    """The gate's baseline (Outcome.history) as compare.json holds it: Aggregated's values to 6
    decimals, as every figure."""
    drawn = {
        m: {side: [_num(v) for v in values] for side, values in d.items()}
        for m, d in history.get("aggregated", {}).items()
    }
    return {**history, "aggregated": drawn}


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


PAGE_CSS = """
.regressed{background:#f8d0d0} .improved{background:#d0f0d0} .inconclusive{background:#fff3c0}
ul.power{font-size:1.1em}
"""
"""compare.html's own rules, after core/skeleton.py's shared ones: each verdict's row colour, the
gate's power list."""

PERCENTILES_NOTE = (
    f"Percentiles: {', '.join(f'p{p:g}' for p in PERCENTILES.values())} of the service time, merged exact "
    "histograms; throughput in requests/s over the runs' full 1 s windows; error rate as %."
)
"""What the A/B page's figures are, under its charts."""


def verdict_table(outcome: Outcome) -> str:
    """The verdicts as an HTML table (id `verdicts`), one row per name and metric, coloured by verdict:
    the A/B page's and the gate's. Every figure by the display rule (shown, relative)."""
    rows = "\n".join(
        f"<tr class='{r.verdict.replace(' ', '-')}'><td>{html.escape(r.name)}</td><td>{r.metric}</td>"
        f"<td>{shown(r.metric, r.d.baseline)}</td><td>{shown(r.metric, r.d.candidate)}</td>"
        f"<td>[{shown(r.metric, r.d.low)}, {shown(r.metric, r.d.high)}]</td><td>{relative(r.d)}</td>"
        f"<td>{r.verdict}</td></tr>"
        for r in outcome.rows
    )
    return f"""<table id="verdicts"><tr><th>name</th><th>metric</th><th>baseline</th><th>candidate</th>
<th>CI of the difference</th><th>change</th><th>verdict</th></tr>{rows}</table>"""


def power_html(outcome: Outcome) -> str:
    """The gate's power (Outcome.detectable) as a list, one metric a line: `p95: would catch ≥ +7.1%`;
    empty for a comparison of two sides (it has none)."""
    if not outcome.detectable:
        return ""
    items = "".join(
        f"<li>{m}: would catch {html.escape(catch(m, v))}</li>" for m, v in outcome.detectable.items()
    )
    runs, past = len(outcome.candidate), outcome.history.get("runs", "?")
    return (
        f"<h2>What it would catch</h2><p>The change a metric of Aggregated must show for {runs} new "
        f"run(s) to be called <b>regressed</b> 9 times in 10, at this baseline's {past} runs and noise "
        f"(the ±{outcome.options['min_effect']:.0%} band included):</p>"
        f'<ul class="power" id="power">{items}</ul>'
    )


def page(outcome: Outcome, grid: Grid, baseline: Side, candidate: Side) -> str:
    """compare.html of two sides: the table, the verdicts, the distributions, the per-window series and
    the differences with their CIs."""
    sides = {"baseline": baseline, "candidate": candidate}
    charts = [
        ("Latency distributions", distribution_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Per-window series", windows_chart(grid, sides) if AGGREGATED in grid.columns else None),
        ("Differences", differences_chart(outcome)),
    ]
    images = "\n".join(f"<h2>{title}</h2><figure>{chart}</figure>" for title, chart in charts if chart)
    body = f"""<h1>Did it get slower?</h1><pre>{html.escape(table(outcome))}</pre>{power_html(outcome)}
{verdict_table(outcome)}
{images}
<p>{PERCENTILES_NOTE}</p>"""
    return skeleton.document("swarmbench compare", body, css=PAGE_CSS)


# --- compare.html of the gate against history ---------------------------------------------------------

GATE_COLOURS = {"runs": COLOURS["baseline"], "candidate": "#c44e52", "level": "#333333",
                "band": "#55a868", "edge": "#dd8452"}  # fmt: skip
"""The gate's charts: the baseline runs, the candidate, the level, the ±min-effect band and the value
beyond which the candidate reads regressed."""


def baseline_table(outcome: Outcome) -> str:
    """The baseline runs the gate used (Outcome.history) as a table (id `baseline`)."""
    h = outcome.history
    rows = [
        ("history", f"{h['store']}, branch {h['branch']}"),
        ("baseline runs", f"{h['runs']} (the last {h['runs']} of {h['comparable_runs']} comparable runs)"),
        ("first", f"{h['first']['run_id']} ({h['first']['started_at']})"),
        ("last", f"{h['last']['run_id']} ({h['last']['started_at']})"),
        ("outlier runs left out", str(h["left_out"])),
        ("accepted change it starts at", h["accepted_from"] or "none"),
        ("candidate", ", ".join(outcome.candidate)),
    ]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f'<table id="baseline">{cells}</table>'


def regressed_beyond(metric: str, d: Difference, band_width: float) -> float:
    """The candidate's value (geometric mean of its runs) at which the row would just read regressed,
    the CI's width kept (core/checks.py verdict: the CI's near end past 0 and the estimate past the
    band). From the row's own figures: the gate's log-scale CI moves with the candidate (low =
    c·e^(-h) - b), so for a latency c* = max(b + band, b·c / (b + low)), for throughput
    c* = min(b - band, b·c / (b + high)). NaN for the error rate (a count interval: its width changes
    with the rate) or without a CI."""
    b, c = d.baseline, d.candidate
    if metric == "error_rate" or not all(math.isfinite(v) for v in (b, c, d.low, d.high)):
        return math.nan
    if HIGHER_IS_WORSE[metric]:
        return max(b + band_width, b * c / (b + d.low)) if b + d.low > 0 else math.nan
    return min(b - band_width, b * c / (b + d.high)) if b + d.high > 0 else math.nan


def baseline_chart(outcome: Outcome, metric: str) -> str | None:
    """Aggregated's METRIC over the baseline runs (oldest first, outliers included), the candidate's
    runs after them, the baseline level with its ±min-effect band and the value beyond which the
    candidate reads regressed; in the metric's display unit. None without the figures."""
    drawn = outcome.history.get("aggregated", {}).get(metric)
    row = next((r for r in outcome.rows if r.name == AGGREGATED and r.metric == metric), None)
    if drawn is None or row is None:
        return None
    scale = 100.0 if metric == "error_rate" else 1.0
    runs = [v * scale if v is not None else math.nan for v in (_num(x) for x in drawn["runs"])]
    new = [v * scale if v is not None else math.nan for v in (_num(x) for x in drawn["candidate"])]
    n = len(runs)
    level, width = row.d.baseline * scale, row.band * scale
    edge = regressed_beyond(metric, row.d, row.band) * scale
    band = outcome.options["min_effect"]
    marks = [(float(t), str(int(t))) for t in svg.ticks(1, max(n, 2), False) if t >= 1 and t == int(t)]
    lines = [
        (level, GATE_COLOURS["level"], "baseline level"),
        (level + width, GATE_COLOURS["band"], f"band +{band:.0%}"),
        *([(level - width, GATE_COLOURS["band"], f"band -{band:.0%}")] if level >= width else []),
        (edge, GATE_COLOURS["edge"], "regressed beyond"),
    ]
    shown_values = [v for v in [*runs, *new, *(h[0] for h in lines)] if math.isfinite(v)]
    low = min(shown_values, default=0.0)
    floor = max(0.0, low - 0.04 * (max(shown_values, default=1.0) - low))  # the lowest line off the frame
    return svg.lines(
        [
            svg.Line(range(1, n + 1), runs, GATE_COLOURS["runs"], "baseline runs", dots=True),
            svg.Line(range(n + 1, n + 1 + len(new)), new, GATE_COLOURS["candidate"], "candidate", dots=True,
                     width=0),
        ],
        f"{AGGREGATED} {metric}: the candidate against its baseline runs",
        "baseline run (1 = oldest), then the candidate",
        f"{metric} ({UNITS[metric]})",
        xticks=[*marks, (float(n + 1), "new")],
        hlines=lines,
        ymin=floor if low > 0 else None,
        xlim=(0.5, n + len(new) + 0.5),
    )  # fmt: skip


def gate_page(outcome: Outcome) -> str:
    """compare.html of the gate against history: the table and its verdicts (as the A/B page's), what
    it would catch per metric, the baseline runs it used, and per metric of Aggregated its baseline
    runs' values with the candidate, the level and the band. Every figure as compare.json's."""
    charts = [(m, baseline_chart(outcome, m)) for m in outcome.options["metrics"]]
    images = "\n".join(f"<figure>{chart}</figure>" for _, chart in charts if chart)
    band = f"{outcome.options['min_effect']:.0%}"
    body = f"""<h1>Did it get slower? The gate against history</h1>
<pre>{html.escape(table(outcome))}</pre>
{verdict_table(outcome)}
{power_html(outcome)}
<h2>Baseline runs</h2>{baseline_table(outcome)}
<h2>{AGGREGATED} against its baseline runs</h2>
<p class="muted">Each dot a baseline run (outliers included, though the level leaves them out), the
candidate last; the dashed lines: the baseline level (geometric mean), the ±{band} band
around it, and the value beyond which the candidate reads regressed (its CI clears the band).</p>
{images}
<p class="muted">Method: {html.escape(outcome.method)}.</p>"""
    return skeleton.document("swarmbench compare --history", body, css=PAGE_CSS)


def no_verdict_page(said: dict) -> str:
    """compare.html of a gate without a verdict (SAID: its compare.json): why, the runs it found
    against those it needs, the candidate's identity, and with no comparable run at all the nearest
    configuration and what differs."""
    why = "too few comparable runs" if said["comparable_runs"] else "no comparable run"
    facts = [
        ("history", f"{said['history']}, branch {said['branch']}"),
        ("candidate", ", ".join(said["candidate"])),
        ("comparable runs", str(said["comparable_runs"])),
        ("the gate needs", str(said["gate_needs"])),
        ("exit code", str(said["exit_code"]) + (" (--require-baseline)" if said["require_baseline"] else "")),
        *((k, str(v or "-")) for k, v in said["identity"].items()),
    ]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts)
    parts = [
        f"<h1>No verdict: {why}</h1>",
        *(f'<p class="warn">{html.escape(line)}</p>' for line in said["warning"]),
        f'<table id="gate">{cells}</table>',
    ]
    near = said.get("nearest")
    if near:
        diff = "".join(
            f"<tr><td>{html.escape(d['field'])}</td><td>{html.escape(str(d['candidate']))}</td>"
            f"<td>{html.escape(str(d['history']))}</td></tr>"
            for d in near["differences"]
        )
        parts.append(
            f"<h2>The nearest configuration</h2><p>{near['runs']} run(s) of branch "
            f"{html.escape(str(near['branch']))} on {html.escape(near['host'] or '-')}, testbed "
            f"{html.escape(near['testbed'])}, load <code>{html.escape(near['fingerprint'])}</code>.</p>"
            + (
                f'<table id="nearest"><tr><th>differs in</th><th>this run</th><th>the history</th></tr>{diff}'
                "</table>"
                if diff
                else "<p>The same configuration, but none is a complete run before this one.</p>"
            )
        )
    return skeleton.document("swarmbench compare --history: no verdict", "\n".join(parts), css=PAGE_CSS)
