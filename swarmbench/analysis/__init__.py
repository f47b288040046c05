"""Swarmbench analysis: run folders read, summarized, scaling laws fitted, charted and reported
(pandas, matplotlib; the `analysis` extra). The top data layer: it may use compare, latency, core.

Library use (pure functions; only commands.py writes files):

    from swarmbench.analysis import load_runs, summarize, analyze_scaling
    runs = load_runs(["results/examples"])
    table = summarize(runs)                  # one row per (run, endpoint)
    groups, notes = analyze_scaling(runs)    # Amdahl + USL per group of runs differing in workers

Charts (swarmbench.analysis.plots) and the page (swarmbench.analysis.report) import matplotlib;
import them when needed.
"""

import importlib

_HOME = {
    "AnalysisError": "locust_csv",
    "AnalysisWarning": "locust_csv",
    "AmdahlFit": "scaling",
    "FitError": "scaling",
    "USLFit": "scaling",
    "fit_amdahl": "scaling",
    "fit_usl": "scaling",
    "Run": "runs",
    "discover_runs": "runs",
    "load_run": "runs",
    "load_runs": "runs",
    "read_manifest": "runs",
    "GroupKey": "scaling",
    "ScalingGroup": "scaling",
    "ScalingPoint": "scaling",
    "analyze_scaling": "scaling",
    "group_runs": "scaling",
    "scaling_json": "scaling",
    "aggregated": "summary",
    "history_frame": "summary",
    "failures_table": "summary",
    "settings_table": "summary",
    "summarize": "summary",
}
"""Each public name's module, imported on first use (PEP 562): `swarmbench.analysis.columns` alone
(what `swarmbench compare` reads) must not cost pandas' import."""


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)


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
    "history_frame",
    "load_run",
    "load_runs",
    "read_manifest",
    "scaling_json",
    "settings_table",
    "summarize",
]
