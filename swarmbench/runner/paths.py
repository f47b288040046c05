"""Where the runner finds the checkout and puts results."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: docker-compose.yml, locustfiles/, target/ (the runner runs from a clone)."""

RESULTS = ROOT / "results"
"""Default host folder for run folders; SWARMBENCH_RESULTS (also read by compose) overrides it."""


def results_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("SWARMBENCH_RESULTS") or RESULTS).resolve()


def display(path: Path) -> Path:
    """PATH relative to the checkout when it is inside it (shorter messages)."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
