"""Step load for knee finding: users rise START, START+STEP, ... up to MAX, SECONDS per step.

Add this file to the locustfile list next to a scenario and set the steps:

    LOCUST_LOCUSTFILE=locustfiles/albums.py,locustfiles/step_load.py \\
    LOCUST_STEP_USERS="10 10 20 80" make headless            # or simply: make knee

Locust lets a shape class found in ANY loaded locustfile take over the run, so the shape is inert
unless --step-users / LOCUST_STEP_USERS is set (the plugin drops it at init otherwise; see
swarmbench/plugin/lifecycle.py). The compose stack does not load this file by default either.
`python -m analysis report` finds the steps in the run's history and marks the knee: the load
where throughput per user stops growing while latency stays up (swarmbench/analysis/knee.py).
"""

from __future__ import annotations

from locust import LoadTestShape

from swarmbench.core.loadspec import parse_step_users


class StepLoadShape(LoadTestShape):
    """One step per SECONDS; the test ends after the MAX step has run its SECONDS."""

    use_common_options = False

    def tick(self) -> tuple[int, float] | None:
        opts = self.runner.environment.parsed_options if self.runner else None
        spec = getattr(opts, "step_users", "") if opts else ""
        if not spec:
            return None
        steps = parse_step_users(spec)
        users = steps.users_at(self.get_run_time())
        if users is None:
            return None
        # Spawn a whole step within ~1 s, so each step's window measures its own load level.
        return users, float(max(users, steps.step))
