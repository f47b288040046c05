"""Fair comparisons: every setting that differs between the sides is named; only differences in the
load itself are refused (they change what is measured), unless --allow-different. Differences in
the system under test (host, target settings, git commit, store) are what a user compares: named,
never refused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from swarmbench.compare.load import RunData
from swarmbench.core.manifest import RunManifest


def _arrival(m: RunManifest) -> str | None:
    return m.open_model.arrival_rate if m.open_model else None


def _model(m: RunManifest) -> str:
    return "open" if m.open_model else "closed"


def _locustfile(m: RunManifest) -> str | None:
    return f"sha256:{m.locustfile_sha256[:12]}" if m.locustfile_sha256 else m.locustfile


Getter = Callable[[RunManifest], object]

LOAD: dict[str, Getter] = {
    "locustfile": _locustfile,
    "user classes": lambda m: "+".join(m.user_classes) or None,
    "model": _model,
    "users": lambda m: m.users,
    "wait time": lambda m: m.wait_time,
    "arrival rate": _arrival,
    "request mix": lambda m: m.albums_mix,
}
"""The load: a difference here is refused (the sides measured different things)."""

OTHER: dict[str, Getter] = {
    "workers": lambda m: m.workers,
    "host": lambda m: m.host,
    "target store": lambda m: m.store,
    "target cpus": lambda m: m.target.cpus if m.target else None,
    "git commit": lambda m: (m.git_commit or "")[:12] or None,
    "locust version": lambda m: m.locust_version,
    "run time": lambda m: m.run_time,
    "spawn rate": lambda m: m.spawn_rate,
    # Only when on: runs from before the key and runs with it off both counted the ramp-up.
    "reset stats": lambda m: "on" if m.reset_stats else None,
}
"""Named, never refused: the system under test and how the load was generated."""


@dataclass(frozen=True)
class Difference:
    setting: str
    baseline: str
    candidate: str
    load: bool  # a difference in the load itself (refused unless --allow-different)


def values(runs: list[RunData], get: Getter) -> str:
    """The side's value(s) of a setting, e.g. "8" or "8, 16" when its repeats differ."""
    found = sorted({str(get(r.manifest)) for r in runs if get(r.manifest) is not None})
    return ", ".join(found) if found else "-"


def differences(baseline: list[RunData], candidate: list[RunData]) -> list[Difference]:
    """Every setting whose values differ between the sides (unknown on both sides: not named)."""
    out = []
    for settings, load in ((LOAD, True), (OTHER, False)):
        for setting, get in settings.items():
            b, c = values(baseline, get), values(candidate, get)
            if b != c:
                out.append(Difference(setting, b, c, load))
    return out
