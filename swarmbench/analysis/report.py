"""report.html: one self-contained page, read top to bottom.

Order: what was run, the scaling verdict in plain words, the charts, the tables. Charts are PNGs
embedded as base64 so the page can be mailed or attached to an issue as one file. Every piece of
text from the data (run ids, hosts, error messages) goes through html.escape.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

import pandas as pd

from swarmbench.analysis import columns as C
from swarmbench.analysis import health, lag
from swarmbench.analysis.bottleneck import run_bottleneck
from swarmbench.analysis.charts import Chart
from swarmbench.analysis.load import Run
from swarmbench.analysis.scaling import ScalingGroup
from swarmbench.analysis.summary import failures_table, settings_table
from swarmbench.analysis.summary_box import CSS as SUMMARY_CSS
from swarmbench.core.sweepstate import SweepState as Sweep
from swarmbench.core.verdict import legend as verdict_legend


def _bottleneck_html(runs: Sequence[Run]) -> str:
    rows = []
    for run in runs:
        b = run_bottleneck(run)
        if b:
            rows.append({"run": run.run_id, "verdict": b.verdict, "why": b.reason})
    if not rows:
        return "<p>No run carries the figures a verdict needs (run.json).</p>"
    return _table(pd.DataFrame(rows)) + f'<p class="muted">{escape(verdict_legend())}</p>'


def _sweep_html(sweep: Sweep) -> str:
    s = sweep.settings
    done = len(sweep.points) - len(sweep.missing)
    parts = [
        f"<h3>{escape(sweep.sweep_id)}</h3>",
        f"<p>{done} of {len(sweep.points)} points done; workers {escape(str(s.get('workers')))}, "
        f"classes {escape(', '.join(s.get('classes') or []))}, {s.get('repeats')} repeat(s), "
        f"{escape(str(s.get('run_time')))} each, {s.get('users')} users ({escape(str(s.get('mode')))} "
        "scaling).</p>",
    ]
    if sweep.missing:
        rows = pd.DataFrame(
            [
                {"point": p.get("id"), "status": p.get("status"), "reason": p.get("reason") or "not run yet"}
                for p in sweep.missing
            ]
        )
        parts.append(
            '<div class="warn"><strong>Missing points</strong> — no run in this report for these (a '
            "rerun with the same SWEEP_ID retries them):" + _table(rows) + "</div>"
        )
    return "\n".join(parts)


# --- HTML ------------------------------------------------------------------------------------------

_CSS = (
    """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:13px;margin:.6em 0} th,td{border:1px solid #ddd;padding:3px 7px}
th{background:#f3f3f3;text-align:left} td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{background:#eef6ee;border-left:4px solid #2ca02c;padding:.5em 1em;margin:.6em 0}
.warn{background:#fff6e0;border-left:4px solid #e0a000;padding:.5em 1em}
.muted{color:#666;font-size:13px} img{max-width:100%;border:1px solid #eee} figure{margin:1.2em 0}
.scroll{overflow-x:auto}
"""
    + SUMMARY_CSS
)


def _fmt(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.3g}" if abs(value) < 10 else f"{value:,.1f}"
    return str(value)


def _table(frame: pd.DataFrame, formats: dict[str, object] | None = None) -> str:
    formats = formats or {}
    head = "".join(f"<th>{escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for col, value in zip(frame.columns, record, strict=True):
            fmt = formats.get(col)
            text = fmt(value) if callable(fmt) else _fmt(value)
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cells.append(f'<td class="n">{escape(text)}</td>' if numeric else f"<td>{escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    body = "".join(rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _same_everywhere(column: pd.Series) -> bool:
    return column.notna().all() and column.astype(str).nunique() == 1


def _pct(value: object) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.1%}"


def _ci(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return "—" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _group_html(g: ScalingGroup) -> str:
    parts = [f"<h3>{escape(g.key.label())}</h3>"]
    verdict = "".join(f"<p>{escape(line)}</p>" for line in g.verdict())
    if verdict:
        parts.append(f'<div class="verdict">{verdict}</div>')
    scale = g.amdahl.gamma if g.amdahl else None
    points = pd.DataFrame(
        {
            "workers": [p.workers for p in g.points],
            "runs": [len(p.rps) for p in g.points],
            "requests/s per run": [", ".join(f"{v:.0f}" for v in p.rps) for p in g.points],
            "mean requests/s": [p.mean_rps for p in g.points],
            "speedup vs γ": [p.mean_rps / scale if scale else float("nan") for p in g.points],
        }
    )
    parts.append(_table(points))
    fits = []
    if g.amdahl:
        a = g.amdahl
        fits += [
            ("Amdahl", "serial fraction s", f"{a.serial_fraction:.3f}", _ci(a.ci95)),
            ("Amdahl", "γ (requests/s at 1 worker)", f"{a.gamma:.1f}", _ci(a.gamma_ci95, 1)),
            ("Amdahl", "max speedup 1/s", "∞" if math.isinf(a.max_speedup) else f"{a.max_speedup:.2f}", ""),
        ]
    if g.usl:
        u = g.usl
        fits += [
            ("USL", "contention α", f"{u.alpha:.4f}", _ci(u.alpha_ci95, 4)),
            ("USL", "coherency β", f"{u.beta:.5f}", _ci(u.beta_ci95, 5)),
            ("USL", "γ (requests/s at 1 worker)", f"{u.gamma:.1f}", _ci(u.gamma_ci95, 1)),
            ("USL", "peak N*", "none" if u.peak_workers is None else f"{u.peak_workers:.2f}", ""),
        ]
    if fits:
        parts.append(_table(pd.DataFrame(fits, columns=["law", "parameter", "value", "95 % interval"])))
    parts.extend(f'<p class="warn">{escape(w)}</p>' for w in g.warnings)
    return "\n".join(parts)


_SETTINGS_COLS = [
    C.RUN_ID,
    C.USER_CLASS,
    C.MODE,
    C.WORKERS,
    C.USERS,
    C.SPAWN_RATE,
    C.RUN_TIME_S,
    C.WAIT_TIME,
    C.HOST,
    C.STORE,
    C.LOCUST_VERSION,
    C.STARTED_AT,
    C.DURATION_S,
    C.EXIT_CODE,
    C.WORKER_CPU_MEAN,
    C.TARGET_CPU_UTIL,
]


def _settings_html(runs: Sequence[Run]) -> list[str]:
    """What was run: the settings every run shares, then what varies per run."""
    out: list[str] = []
    out.append("<h2>What was run</h2>")
    settings = settings_table(runs)
    cols = [c for c in _SETTINGS_COLS if c in settings]
    # Settings every run shares go in one small table; the per-run table keeps what varies.
    common = [c for c in cols if c != C.RUN_ID and len(runs) > 1 and _same_everywhere(settings[c])]
    if common:
        shared = pd.DataFrame({"setting": common, "value": [_fmt(settings[c].iloc[0]) for c in common]})
        out.append("<p>Common to every run:</p>" + _table(shared))
    varying = [c for c in cols if c not in common]
    out.append(_table(settings[varying], {C.TARGET_CPU_UTIL: _pct}))
    out.append(
        '<p class="muted">workers = load generators (1 for a local run). worker_cpu_mean_pct: mean CPU '
        "of the load generators; target_cpu_util: the target's CPU seconds / (duration × its CPUs).</p>"
    )
    return out


def _charts_html(charts: Sequence[Chart]) -> list[str]:
    """Every chart but Run health's (shown in its own section), embedded as base64 PNG."""
    out: list[str] = []
    out.append("<h2>Charts</h2>")
    for chart in (c for c in charts if not health.is_health_chart(c.filename)):
        data = base64.b64encode(chart.png).decode("ascii")
        out.append(
            f'<figure><h3>{escape(chart.title)}</h3><img alt="{escape(chart.title)}" '
            f'src="data:image/png;base64,{data}"><figcaption class="muted">{escape(chart.caption)}'
            "</figcaption>" + ("" if chart.table is None else _table(chart.table)) + "</figure>"
        )
    return out


def _tables_html(runs: Sequence[Run], summary: pd.DataFrame) -> list[str]:
    """The per-endpoint summary and the most frequent failures."""
    out: list[str] = []
    out.append("<h2>Per-endpoint summary</h2>")
    shown = summary.drop(columns=[C.METHOD, C.ENDPOINT_NAME])
    out.append(_table(shown, {C.FAIL_RATIO: _pct}))
    failures = failures_table(runs)
    out.append("<h2>Failures</h2>")
    if failures.empty:
        out.append("<p>No failures recorded.</p>")
    else:
        out.append(_table(failures.head(50)))
        if len(failures) > 50:
            out.append(f'<p class="muted">… and {len(failures) - 50} more rows.</p>')
    return out


def build_report(
    runs: Sequence[Run],
    summary: pd.DataFrame,
    groups: Sequence[ScalingGroup],
    charts: Sequence[Chart],
    warnings: Sequence[str] = (),
    inputs: Sequence[str] = (),
    title: str = "Swarmbench report",
    sweeps: Sequence[Sweep] = (),
    answers: str = "",
) -> str:
    """The whole page as a string (the CLI writes it; nothing here touches the disk). ANSWERS, the
    answers' box (summary_box.py), opens it: before the warnings and every detail."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="muted">{len(runs)} run(s) from {escape(", ".join(inputs) or "?")}; generated {now}.</p>',
        answers,
    ]
    if warnings:
        items = "".join(f"<li>{escape(w)}</li>" for w in warnings)
        out.append(f'<div class="warn"><strong>Warnings</strong><ul>{items}</ul></div>')

    out.extend(_settings_html(runs))

    out.extend(health.section_html(runs, groups, charts, _table))

    if sweeps:
        out.append("<h2>Sweep</h2>")
        out.extend(_sweep_html(sw) for sw in sweeps)

    out.append("<h2>Scaling verdict</h2>")
    if groups:
        out.extend(_group_html(g) for g in groups)
    else:
        out.append("<p>No run carries a worker count (run.json), so there is nothing to fit.</p>")
    out.append(
        '<p class="muted">Fits: bounded least squares on log throughput, every run a point (repeats '
        "included); γ is fitted, not taken from one N = 1 run. 95 % intervals from the Jacobian "
        "covariance with a t-quantile, clipped to the parameter bounds.</p>"
    )

    out.append("<h2>What limited each run</h2>")
    out.extend(lag.flagged_html(runs))
    out.append(_bottleneck_html(runs))

    out.extend(_charts_html(charts))

    out.extend(_tables_html(runs, summary))
    out.append("</body></html>")
    return "\n".join(out)
