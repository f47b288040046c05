"""Open-model runs (--arrival-rate) for the report: offered vs achieved rate, drops, service and
intended-start latency, the open-model knee and the highest rate a sweep point sustained.

Open-model runs (--arrival-rate): offered vs achieved rate, drops per second, service-time and
intended-start latency over time, and the gap between them -- the coordinated omission a
closed-loop test would have hidden. Plus the open-mode verdict (core/bottleneck.judge_open).

Pure like the rest of the analysis: `load()` reads a run folder, `figure()` returns a Figure,
`merged_latency()` merges several runs' HDR histograms exactly; writing files is the CLI's job.

The open-model knee, and the highest rate a sweep point sustained: per constant-rate step of an
--arrival-rate schedule (core/arrival.holds), from locust_arrival.csv's per-second rows.

A step is HELD when, over its seconds after SETTLE_S:
- under 1 % of its scheduled iterations were dropped (core/arrival.DROP_LIMIT),
- the iterations started reach the offered rate within 1 % (the generators kept their schedule),
- and, for the knee, the intended-start p99 stays under a bound (the report's --knee-p99-ms, which
  `swarmbench knee` sets from KNEE_P99_MS). The step's p99 is the
  highest of its seconds' p99s: an upper bound of the p99 over all its samples (every second has 99 %
  of its samples at or below its own p99, so the union has 99 % at or below the highest), so a
  "held" never overstates.
The knee is the highest rate of the run of held steps from the first one: a held step above one that
was not is luck, not capacity. Pure: no file is written here."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis.locust_csv import InputError, read_frame
from swarmbench.analysis.plots import figure as _figure
from swarmbench.analysis.plots import message as _message
from swarmbench.core import folder
from swarmbench.core.bottleneck import DROP_LIMIT, KNEE_P99_MS, judge_open
from swarmbench.core.figures import show_ms
from swarmbench.core.loadspec import Hold, holds, parse_arrival_rate
from swarmbench.core.manifest import LatencyFigures, OpenCapacity, OpenLatency, OpenModel, RunManifest
from swarmbench.latency.histogram import LatencyBook

# --- one open-model run ---------------------------------------------------------------------------

OFFERED_COLOR, ACHIEVED_COLOR, DROPPED_COLOR = "#7f7f7f", "#2ca02c", "#d62728"
SERVICE_COLOR, INTENDED_COLOR = "#1f77b4", "#ff7f0e"


class OpenRun:
    """One open-model run folder: run.json, its `open_model`, the per-second CSV."""

    def __init__(self, run_dir: Path, manifest: RunManifest, seconds: pd.DataFrame) -> None:
        self.run_dir = run_dir
        self.manifest = manifest
        self.summary = manifest.open_model or OpenModel()
        self.seconds = seconds

    @property
    def verdict(self) -> OpenCapacity:
        return judge_open(self.manifest)

    def gap_p99_ms(self) -> pd.Series:
        """Per second: intended-start p99 minus service-time p99 (what queueing for a user added)."""
        return self.seconds["intended_p99_ms"] - self.seconds["service_p99_ms"]


def is_open_run(run_dir: Path) -> bool:
    return (run_dir / folder.ARRIVAL_CSV).is_file()


def load(run_dir: Path) -> OpenRun:
    """InputError naming the file when the folder is not a readable open-model run."""
    manifest_path, csv_path = run_dir / folder.MANIFEST, run_dir / folder.ARRIVAL_CSV
    manifest = RunManifest.read(manifest_path)  # core's one reader: InputError naming it
    if manifest.open_model is None:
        raise InputError(manifest_path, "no open_model section: not an --arrival-rate run")
    try:
        seconds = read_frame(csv_path)
    except (OSError, ValueError) as e:
        raise InputError(csv_path, f"cannot read ({e})") from None
    missing = {"second", "scheduled", "started", "dropped", "service_p99_ms", "intended_p99_ms"} - set(
        seconds
    )
    if missing:
        raise InputError(csv_path, f"missing columns {sorted(missing)}")
    return OpenRun(run_dir, manifest, seconds)


def merged_latency(run_dirs: list[Path]) -> LatencyBook:
    """The HDR histograms of several runs added up: exact percentiles over all their samples."""
    book = LatencyBook()
    for run_dir in run_dirs:
        path = run_dir / folder.LATENCY_HDR_JSON
        try:
            book.merge(json.loads(path.read_text(encoding="utf-8")).get("histograms") or [])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(path, f"not an encoded histogram file ({e})") from None
    return book


def figure(run: OpenRun, title: str = "") -> Figure:
    """Top: offered (scheduled) and achieved (started) iterations per second, dropped as bars.
    Bottom: service-time and intended-start p99 (and p50) per second; the shaded band between
    the two p99 curves is the latency a closed-loop test would not have measured."""
    fig = _figure((9.0, 6.0))
    s = run.seconds
    if s.empty:
        return _message(fig, "no seconds recorded")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 3])
    top.plot(s["second"], s["scheduled"], color=OFFERED_COLOR, lw=1.4, ls="--", label="offered (scheduled)")
    top.plot(s["second"], s["started"], color=ACHIEVED_COLOR, lw=1.6, label="achieved (started)")
    top.bar(s["second"], s["dropped"], color=DROPPED_COLOR, alpha=0.5, width=0.9, label="dropped")
    top.set_ylabel("iterations/s")
    top.legend(fontsize=8, loc="upper left")
    om = run.summary
    top.set_title(
        f"{title or run.run_dir.name}: offered {om.offered_rate or 0:g}/s, achieved "
        f"{om.achieved_rate or 0:g}/s, {om.dropped_iterations or 0} dropped",
        fontsize=10,
    )
    for kind, color in (("service", SERVICE_COLOR), ("intended", INTENDED_COLOR)):
        label = "service time (Locust's)" if kind == "service" else "from the intended start"
        bottom.plot(s["second"], s[f"{kind}_p99_ms"], color=color, lw=1.6, label=f"p99 {label}")
        bottom.plot(s["second"], s[f"{kind}_p50_ms"], color=color, lw=1.0, ls=":", label=f"p50 {label}")
    bottom.fill_between(
        s["second"], s["service_p99_ms"], s["intended_p99_ms"], color=INTENDED_COLOR, alpha=0.15,
        label="coordinated omission (p99 gap)",
    )  # fmt: skip
    bottom.set_ylabel("ms (HDR, 3 significant digits)")
    bottom.set_xlabel("second of the schedule")
    bottom.legend(fontsize=8, loc="upper left")
    return fig


def summary_lines(run: OpenRun) -> list[str]:
    """The run in words: rates, drops, both p99s and their gap, the verdict."""
    om, v = run.summary, run.verdict
    lat = om.latency_ms or OpenLatency()
    service, intended = lat.service or LatencyFigures(), lat.intended or LatencyFigures()
    lag = lat.start_lag or LatencyFigures()
    ms = show_ms  # as the files have them, never rounded to 6 digits
    return [
        f"offered {om.offered_rate or 0:g}/s, achieved {om.achieved_rate or 0:g}/s over "
        f"{om.window_s or 0:g} s; {om.dropped_iterations or 0} dropped "
        f"({om.pool_exhaustion_events or 0} pool exhaustion events), pool {om.pool_users}",
        f"p99 service {ms(service.p99)} ms, from the intended start {ms(intended.p99)} ms "
        f"(gap {ms(lat.p99_gap)} ms; first requests went out p99 {ms(lag.p99)} ms late)",
        f"capacity {'reached' if v.capacity_reached else 'not reached'}: {v.reason}",
    ]


# --- the open-model knee, and the highest rate sustained ------------------------------------------

SETTLE_S = 1
"""Seconds skipped at the start of each step: the second holding the jump mixes two rates, and its
latency is still the previous step's."""

STEP_COLUMNS = (
    "rate",
    "seconds",
    "scheduled",
    "started",
    "dropped",
    "achieved_rate",
    "dropped_ratio",
    "intended_p99_ms",
    "held",
    "why_not",
)


def _judge(hold: Hold, rows: pd.DataFrame, bound_ms: float | None) -> dict:
    n = len(rows)
    scheduled, started, dropped = (int(rows[c].sum()) for c in ("scheduled", "started", "dropped"))
    p99 = pd.to_numeric(rows["intended_p99_ms"], errors="coerce").max()
    ratio = dropped / scheduled if scheduled else 1.0
    achieved = started / n
    why = []
    if ratio >= DROP_LIMIT:
        why.append(f"{ratio:.1%} dropped")
    if achieved < (1 - DROP_LIMIT) * hold.rate:
        why.append(f"achieved {achieved:.4g} of {hold.rate:g}/s")
    if bound_ms is not None and not (p99 <= bound_ms):  # NaN (no sample) is no evidence of holding
        why.append(f"intended-start p99 {p99:g} ms over {bound_ms:g} ms")
    return {
        "rate": hold.rate,
        "seconds": n,
        "scheduled": scheduled,
        "started": started,
        "dropped": dropped,
        "achieved_rate": round(achieved, 2),
        "dropped_ratio": round(ratio, 4),
        "intended_p99_ms": None if pd.isna(p99) else float(p99),
        "held": not why,
        "why_not": "; ".join(why),
    }


def step_table(run: OpenRun, bound_ms: float | None = None) -> pd.DataFrame:
    """One row per constant-rate step with at least one whole second after SETTLE_S (STEP_COLUMNS).
    The run's last second is partial (the run stopped within it) and is left out."""
    seconds = run.seconds
    schedule = parse_arrival_rate(run.summary.arrival_rate or "")
    last = int(seconds["second"].max()) if not seconds.empty else -1
    rows = []
    for hold in holds(schedule):
        first, end = math.ceil(hold.t0) + SETTLE_S, min(hold.t1, last)
        part = seconds[(seconds["second"] >= first) & (seconds["second"] + 1 <= end)]
        if not part.empty:
            rows.append(_judge(hold, part, bound_ms))
    return pd.DataFrame(rows, columns=list(STEP_COLUMNS))


def highest_held(steps: pd.DataFrame) -> float | None:
    """The rate of the last step of the unbroken run of held steps from the first; None if none."""
    rate = None
    for row in steps.itertuples():
        if not row.held:
            break
        rate = row.rate
    return rate


@dataclass(frozen=True)
class OpenKnee:
    steps: pd.DataFrame  # STEP_COLUMNS, in order
    rate: float | None  # the highest rate held (the knee); None when even the first step was not
    bound_ms: float

    def failed(self) -> pd.Series | None:
        """The first step not held (None when every step held)."""
        bad = self.steps[~self.steps["held"]]
        return None if bad.empty else bad.iloc[0]

    def sentence(self) -> str:
        rule = (
            f"< {DROP_LIMIT:.0%} dropped, achieved within {DROP_LIMIT:.0%}, "
            f"intended-start p99 ≤ {self.bound_ms:g} ms"
        )
        bad = self.failed()
        if bad is None:
            return f"No knee up to {self.steps['rate'].max():g}/s: every step held ({rule})."
        if self.rate is None:
            return f"No rate held: already at {bad['rate']:g}/s, {bad['why_not']} ({rule})."
        return (
            f"Knee: {self.rate:g}/s is the highest rate held ({rule}); at {bad['rate']:g}/s, "
            f"{bad['why_not']}."
        )


MIN_STEPS = 2
"""Fewer constant-rate steps than this is one offered rate, not a knee search."""


def open_model_knee(run: OpenRun, bound_ms: float = KNEE_P99_MS) -> OpenKnee | None:
    """The open-model knee of a stepped schedule, its steps' intended-start p99 bounded by BOUND_MS;
    None when the schedule has fewer than MIN_STEPS."""
    steps = step_table(run, bound_ms)
    if len(steps) < MIN_STEPS:
        return None
    return OpenKnee(steps, highest_held(steps), bound_ms)


def sustained_rate(run: OpenRun) -> dict:
    """What one sweep point sustained (drops and achieved rate only: the sweep has no latency bound):
    {"offered" (its highest step), "sustained" (highest_held, None: not even the first)}."""
    steps = step_table(run)
    return {
        "offered": float(steps["rate"].max()) if not steps.empty else None,
        "sustained": highest_held(steps),
    }


def sweep_table(points: list[tuple[str | None, int | None, OpenRun]]) -> pd.DataFrame | None:
    """Per (user class, workers) of open-model sweep points: the highest rate sustained in every
    repeat and in the best one (0 where even the first step was not); None with < 2 worker counts."""
    rows = [
        {"user_class": cls or "-", "workers": w, **sustained_rate(run)}
        for cls, w, run in points
        if w is not None
    ]
    frame = pd.DataFrame(rows, columns=["user_class", "workers", "offered", "sustained"])
    if frame["workers"].nunique() < 2:
        return None
    frame["sustained"] = frame["sustained"].fillna(0.0).astype(float)
    out = frame.groupby(["user_class", "workers"], as_index=False).agg(
        repeats=("sustained", "size"),
        offered_up_to=("offered", "max"),
        sustained_every_repeat=("sustained", "min"),
        sustained_best_repeat=("sustained", "max"),
    )
    return out.sort_values(["user_class", "workers"]).reset_index(drop=True)


def sweep_figure(table: pd.DataFrame) -> Figure:
    """Highest rate sustained in every repeat against workers, one line per user class."""
    fig = _figure((7.0, 4.0))
    ax = fig.subplots()
    for cls, part in table.groupby("user_class"):
        ax.plot(part["workers"], part["sustained_every_repeat"], marker="o", label=str(cls))
        ax.vlines(part["workers"], part["sustained_every_repeat"], part["sustained_best_repeat"], alpha=0.4)
    ax.set_xlabel("workers")
    ax.set_ylabel("highest rate sustained (iterations/s)")
    ax.set_xticks(sorted(table["workers"].unique()))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig
