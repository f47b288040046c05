"""run.json for the analysis: core's RunManifest, with warnings that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmbench.analysis.errors import warn
from swarmbench.core.manifest import RunManifest


def read_manifest(path: Path) -> RunManifest:
    """Parse and type-check run.json; AnalysisError (naming the file) when it is malformed."""
    return RunManifest.read(path, warn=lambda problem: warn(path, problem))


def manifest_from_dict(data: dict[str, Any], path: Path | str = "run.json") -> RunManifest:
    return RunManifest.from_json(data, path, warn=lambda problem: warn(path, problem))
