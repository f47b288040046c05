"""The bottleneck verdict (core/bottleneck.py) in tests: judged from a run.json-like dict or from its
inputs, and read back in the JSON form run.json records it in."""

from __future__ import annotations

from swarmbench.core import bottleneck
from swarmbench.core.manifest import RunManifest, VerdictInputs


def judge(given: dict | VerdictInputs, rps: float | None = None, avg_ms: float | None = None) -> dict:
    """The verdict of GIVEN, in run.json's form: a run.json-like dict, judged as the plugin judges a
    finished run (with Locust's own RPS and AVG_MS where given), or the VerdictInputs themselves,
    which carry their own rate and latency."""
    if isinstance(given, VerdictInputs):
        assert rps is None and avg_ms is None, "VerdictInputs carry their own rate and latency"
        return bottleneck.judge(given).to_json()
    return bottleneck.judge_manifest(RunManifest.from_json(given), rps=rps, avg_ms=avg_ms).to_json()
