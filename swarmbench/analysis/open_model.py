"""Open-model runs (--arrival-rate): offered vs achieved rate, drops per second, service-time and
intended-start latency over time, and the gap between them -- the coordinated omission a
closed-loop test would have hidden. Plus the open-mode verdict (core/verdict.judge_open).

Pure like the rest of the analysis: `load()` reads a run folder, `figure()` returns a Figure,
`merged_latency()` merges several runs' HDR histograms exactly; writing files is the CLI's job.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from swarmbench.analysis.errors import InputError
from swarmbench.analysis.plots_time import figure as _figure
from swarmbench.analysis.plots_time import message as _message
from swarmbench.core import folder
from swarmbench.core.manifest import RunManifest
from swarmbench.core.sections import LatencyFigures, OpenCapacity, OpenLatency, OpenModel
from swarmbench.core.verdict import judge_open
from swarmbench.hdr import LatencyBook

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
        seconds = pd.read_csv(csv_path)
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

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    return [
        f"offered {om.offered_rate or 0:g}/s, achieved {om.achieved_rate or 0:g}/s over "
        f"{om.window_s or 0:g} s; {om.dropped_iterations or 0} dropped "
        f"({om.pool_exhaustion_events or 0} pool exhaustion events), pool {om.pool_users}",
        f"p99 service {ms(service.p99)} ms, from the intended start {ms(intended.p99)} ms "
        f"(gap {ms(lat.p99_gap)} ms)",
        f"capacity {'reached' if v.capacity_reached else 'not reached'}: {v.reason}",
    ]
