"""`python -m swarmbench knee`: a step load, then a report that marks the latency-vs-throughput knee.

Users rise START, START+STEP, ... up to MAX, SECONDS per step (locustfiles/step_load.py, driven by
LOCUST_STEP_USERS); the run lasts exactly the steps (plus a few seconds), its folder is
results/knee-<UTC time>/ unless LOCUST_RUN_ID says otherwise, and `python -m analysis report`
writes <run>/analysis/. The exit code is the run's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from swarmbench.core.errors import UsageError
from swarmbench.core.experiment import parse_step_users

from . import compose, settings
from .paths import results_dir
from .sweep import make_report

DEFAULT_STEPS = "10 20 20 130"
"""10 to 130 users in steps of 20, 20 s each: 7 steps, about 2.5 minutes."""

DEFAULTS = {
    "LOCUST_LOCUSTFILE": "locustfiles/albums.py,locustfiles/step_load.py",
    "LOCUST_USER_CLASSES": "AlbumsFastHttpUser",
    "LOCUST_WAIT_TIME": "constant 0.05",
}
"""The knee run's scenario: the cheaper client and a short think time, so the steps load the server
rather than the generators (each is overridable by its variable)."""


def knee_env(environ: Mapping[str, str], steps: str | None = None) -> dict[str, str]:
    """The environment of the knee's headless run; UsageError (one line) on a bad step spec."""
    env = dict(environ)
    spec = steps or env.get("STEP_USERS") or env.get("LOCUST_STEP_USERS") or DEFAULT_STEPS
    try:
        step_load = parse_step_users(spec)
    except ValueError as e:
        raise UsageError(f"STEP_USERS: {e}") from None
    env["LOCUST_STEP_USERS"] = spec
    for key, value in DEFAULTS.items():
        env.setdefault(key, value)
    env["LOCUST_RUN_TIME"] = step_load.run_time()
    env.setdefault("LOCUST_RUN_ID", f"knee-{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
    return env


def run_knee(environ: Mapping[str, str], steps: str | None = None) -> int:
    env = knee_env(environ, steps)
    code = compose.run_headless(settings.headless_from_env(env))
    run_dir = results_dir(env) / env["LOCUST_RUN_ID"]
    if run_dir.is_dir():
        make_report(run_dir, out=run_dir / "analysis", title=f"Swarmbench knee {run_dir.name}")
    return code
