"""`python -m swarmbench knee`: a step load, then a report that marks the latency-vs-throughput knee.

Closed model (STEP_USERS): users rise START, START+STEP, ... up to MAX, SECONDS per step
(locustfiles/step_load.py, driven by LOCUST_STEP_USERS). Open model (STEP_RATES / --rates): the
arrival rate rises START, START+STEP, ... up to MAX iterations/s (core/loadspec.py), run by a pool
of LOCUST_USERS users, and the knee is the highest rate held (analysis/openmodel.py; the report gets
KNEE_P99_MS as --knee-p99-ms).
The run lasts exactly the steps (plus a few seconds), its folder is results/knee-<UTC time>/ (-2,
-3, ... for a second knee started in the same second) unless LOCUST_RUN_ID says otherwise, and
`python -m analysis report` writes <run>/analysis/. The exit code is the run's. --local (LOCAL=1)
runs the Go target, a master and WORKERS workers as local processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from swarmbench.core import exits
from swarmbench.core.exits import UsageError
from swarmbench.core.folder import reserve_run_id
from swarmbench.core.loadspec import STRONG, parse_step_rates, parse_step_users
from swarmbench.core.sweepstate import SweepPoint
from swarmbench.runner import compose, settings
from swarmbench.runner.points import LocalRunner, SweepSettings, _PointError
from swarmbench.runner.settings import results_dir
from swarmbench.runner.sweep import knee_bound, make_report
from swarmbench.runner.terminal import Console, verbose

DEFAULT_STEPS = "10 20 20 130"
"""10 to 130 users in steps of 20, 20 s each: 7 steps, about 2.5 minutes."""

DEFAULTS = {
    "LOCUST_LOCUSTFILE": "locustfiles/albums.py,locustfiles/step_load.py",
    "LOCUST_USER_CLASSES": "AlbumsFastHttpUser",
    "LOCUST_WAIT_TIME": "constant 0.05",
}
"""The knee run's scenario: the cheaper client and a short think time, so the steps load the server
rather than the generators (each is overridable by its variable)."""

OPEN_DEFAULTS = {
    "LOCUST_LOCUSTFILE": "locustfiles/albums.py",
    "LOCUST_USER_CLASSES": "AlbumsFastHttpUser",
    "LOCUST_USERS": "200",
}
"""The open-model knee's scenario: the cheaper client and a pool of 200 users, which holds 2,000
iterations/s up to 100 ms per iteration -- past that the pool, not the server, would be the knee
(raise LOCUST_USERS for higher rates)."""

LOCAL_GRACE_S = 90
"""Seconds a --local knee may run past its run time (start-up, the stop timeout, writing results)
before its processes are killed."""


def knee_env(
    environ: Mapping[str, str], steps: str | None = None, rates: str | None = None
) -> dict[str, str]:
    """The environment of the knee's headless run; UsageError (one line) on a bad step spec."""
    env = dict(environ)
    env.setdefault("LOCUST_RUN_ID", f"knee-{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
    rates = rates or env.get("STEP_RATES")
    if rates:
        return _open_env(env, rates)
    spec = steps or env.get("STEP_USERS") or env.get("LOCUST_STEP_USERS") or DEFAULT_STEPS
    try:
        step_load = parse_step_users(spec)
    except ValueError as e:
        raise UsageError(f"STEP_USERS: {e}") from None
    env["LOCUST_STEP_USERS"] = spec
    for key, value in DEFAULTS.items():
        env.setdefault(key, value)
    env["LOCUST_RUN_TIME"] = step_load.run_time()
    return env


def _open_env(env: dict[str, str], rates: str) -> dict[str, str]:
    if env.get("STEP_USERS") or env.get("LOCUST_STEP_USERS"):
        raise UsageError("STEP_RATES and STEP_USERS: choose one (an arrival-rate or a user-count knee)")
    try:
        steps = parse_step_rates(rates)
    except ValueError as e:
        raise UsageError(f"STEP_RATES: {e}") from None
    knee_bound(env)  # a bad KNEE_P99_MS fails now, not at the report
    env["LOCUST_ARRIVAL_RATE"] = steps.arrival_rate()
    settings.check_arrival(env)  # LOCUST_ARRIVAL_MAX_WAIT too
    for key, value in OPEN_DEFAULTS.items():
        env.setdefault(key, value)
    env.setdefault("LOCUST_SPAWN_RATE", env["LOCUST_USERS"])  # the whole pool before the first step
    env["LOCUST_RUN_TIME"] = steps.run_time()
    return env


def run_knee(
    environ: Mapping[str, str], steps: str | None = None, rates: str | None = None, local: bool = False
) -> int:
    env = knee_env(environ, steps, rates)
    if not environ.get("LOCUST_RUN_ID"):
        # The default knee-<UTC second>, reserved: a second knee started in the same second gets
        # knee-...Z-2 (the plugin refuses a run id whose folder exists).
        env["LOCUST_RUN_ID"] = reserve_run_id(results_dir(env), env["LOCUST_RUN_ID"])
    bound = knee_bound(env) if env.get("LOCUST_ARRIVAL_RATE") else None  # open model: the report's knee bound
    local = local or settings.flag(env, "LOCAL")
    shown = verbose(None, env)  # SWARMBENCH_VERBOSE: the run's own output as well as its progress line
    code = _run_local(env, shown) if local else compose.run_headless(settings.headless_from_env(env), shown)
    run_dir = results_dir(env) / env["LOCUST_RUN_ID"]
    if run_dir.is_dir():
        make_report(run_dir, run_dir / "analysis", f"Swarmbench knee {run_dir.name}", knee_p99_ms=bound)
    return code


def _run_local(env: dict[str, str], shown: bool = False) -> int:
    """The knee's run as local processes (the sweep's LocalRunner: target, master, WORKERS workers),
    shown as compose's run is (runner/terminal.py): a progress line, their output in the run
    folder's log (and printed when SHOWN), the summary last."""
    workers = settings.positive_int("WORKERS", env.get("WORKERS") or "1")
    users = settings.positive_int("LOCUST_USERS", env.get("LOCUST_USERS") or "50")
    run_id, cls = env["LOCUST_RUN_ID"], env["LOCUST_USER_CLASSES"]
    run_time = env["LOCUST_RUN_TIME"]
    s = SweepSettings(run_id, (workers,), (cls,), 1, run_time, users, STRONG, None, local=True)
    runner = LocalRunner(s, results_dir(env), env)
    runner.setup()
    console = Console(results_dir(env), shown)
    with console:
        try:
            with console.sink() as log:
                runner.start(SweepPoint(run_id, 1, workers, cls, users), env, log)
            code = runner.wait(settings.timespan_seconds("LOCUST_RUN_TIME", run_time) + LOCAL_GRACE_S)
            code = 1 if code is None else code
        except _PointError as e:
            console.say(f"swarmbench knee: {e}", err=True)
            code = 1
        except KeyboardInterrupt:
            runner.stop()
            code = exits.INTERRUPTED_SIGINT
        finally:
            runner.kill()
            runner.cleanup()
    console.finish(code)
    return code
