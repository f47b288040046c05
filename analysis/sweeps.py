"""sweep.json files: a sweep's settings and every point's status, so missing points are visible.

A point that failed or was interrupted has no run folder where the analysis looks (the sweep moves
partial folders aside), so without sweep.json the report would show a silent gap. Here each such
point becomes a row saying what is missing and why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import warn

SWEEP_JSON = "sweep.json"


@dataclass(frozen=True)
class Sweep:
    path: Path
    sweep_id: str
    state: str | None
    settings: dict
    points: list[dict]

    @property
    def missing(self) -> list[dict]:
        """Points without a finished run (failed, interrupted or not run yet)."""
        return [p for p in self.points if p.get("status") != "done"]


def find_sweeps(paths: list[str | Path]) -> list[Sweep]:
    """sweep.json in each PATH (or, for a run folder, its parent). Unreadable ones are warnings."""
    found: dict[Path, None] = {}
    for given in paths:
        path = Path(given)
        for candidate in (path / SWEEP_JSON, path.parent / SWEEP_JSON):
            if candidate.is_file():
                found[candidate.resolve()] = None
                break
    out = []
    for f in found:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            out.append(
                Sweep(
                    f, str(data["sweep_id"]), data.get("state"), dict(data["settings"]), list(data["points"])
                )
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            warn(f, f"unreadable sweep.json ({e}); its missing points cannot be listed")
    return out
