"""Swarmbench analysis: read Locust run folders, summarize, fit scaling laws, chart, report.

Library use (pure functions; only analysis.cli writes files):

    from analysis import load_runs, summarize, analyze_scaling
    runs = load_runs(["results/examples"])
    table = summarize(runs)                  # one row per (run, endpoint)
    groups, notes = analyze_scaling(runs)    # Amdahl + USL per group of runs differing in workers

Charts (analysis.plots) and the page (analysis.report) import matplotlib; import them when needed.
"""

from .errors import AnalysisError, AnalysisWarning
from .fit import AmdahlFit, FitError, USLFit, fit_amdahl, fit_usl
from .load import Run, discover_runs, load_run, load_runs
from .manifest import read_manifest
from .scaling import GroupKey, ScalingGroup, ScalingPoint, analyze_scaling, group_runs, scaling_json
from .summary import aggregated, failures_table, settings_table, summarize

__all__ = [
    "AmdahlFit",
    "AnalysisError",
    "AnalysisWarning",
    "FitError",
    "GroupKey",
    "Run",
    "ScalingGroup",
    "ScalingPoint",
    "USLFit",
    "aggregated",
    "analyze_scaling",
    "discover_runs",
    "failures_table",
    "fit_amdahl",
    "fit_usl",
    "group_runs",
    "load_run",
    "load_runs",
    "read_manifest",
    "scaling_json",
    "settings_table",
    "summarize",
]
