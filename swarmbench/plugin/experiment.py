"""Experiment settings a run records about itself: sweep membership, the scenario's request mix,
the optional step-load shape, and the whole machine's CPU while the test ran.

`python -m swarmbench sweep` sets LOCUST_SWEEP_* for every point, so each run folder says which
sweep, repeat and point it belongs to (analysis groups and labels runs by it); a run outside a
sweep records nothing here. The names (mixes, modes, the step grammar) are swarmbench.core.experiment's.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
import psutil
from locust.env import Environment

from swarmbench.core.experiment import MIXES, SWEEP_MODES
from swarmbench.core.sections import HostCpu, SweepMembership
from swarmbench.core.steps import parse_step_users
from swarmbench.plugin.errors import die
from swarmbench.plugin.lifecycle import Run

logger = logging.getLogger("swarmbench")

HOST_CPU_INTERVAL_S = 1.0
"""How often the master samples the whole machine's CPU (psutil.cpu_percent)."""

STEP_SHAPE = "StepLoadShape"
"""locustfiles/step_load.py's shape class: inert unless --step-users is set."""


def validate(opts: Any, environment: Environment) -> None:
    """Reject a bad mix, sweep mode or step spec before anything is created."""
    if opts.albums_mix not in MIXES:
        die(f"--albums-mix/LOCUST_ALBUMS_MIX {opts.albums_mix!r}: expected one of {', '.join(MIXES)}")
    if opts.sweep_mode and opts.sweep_mode not in SWEEP_MODES:
        die(f"--sweep-mode/LOCUST_SWEEP_MODE {opts.sweep_mode!r}: expected {' or '.join(SWEEP_MODES)}")
    if opts.step_users:
        try:
            parse_step_users(opts.step_users)
        except ValueError as e:
            die(f"--step-users/LOCUST_STEP_USERS {e}")
    elif environment.shape_class is not None and type(environment.shape_class).__name__ == STEP_SHAPE:
        # step_load.py was loaded but no steps asked for: behave exactly like a normal run.
        environment.shape_class = None


def sweep_section(opts: Any) -> SweepMembership | None:
    if not getattr(opts, "sweep_id", ""):
        return None
    repeat = opts.sweep_repeat
    return SweepMembership(
        id=opts.sweep_id,
        mode=opts.sweep_mode or None,
        repeat=int(repeat) if str(repeat).isdigit() else None,
        point=opts.sweep_point or None,
    )


def record(run: Run, opts: Any, environment: Environment) -> None:
    """run.json's sweep, albums_mix and load_shape sections."""
    m = run.manifest
    m.sweep = sweep_section(opts)
    m.albums_mix = opts.albums_mix
    if opts.step_users and environment.shape_class is not None:
        steps = parse_step_users(opts.step_users)
        # run.json's "users" is otherwise locust.conf's, which a step load ignores: the most users
        # the steps reach (lifecycle keeps it: it fills `users` only where nothing set it).
        m.users = int(steps.max)
        m.load_shape = steps.load_shape()


def start_host_cpu(run: Run) -> None:
    """Sample the machine's CPU, all processes together, while the test runs (master or standalone).

    Workers measure only themselves: on a shared machine (4 workers on 2 cores, the target next to
    them) no worker reaches 90 % of a core, yet they are starved. The machine's total shows it. In
    a container this is still the host's figure (/proc/stat is not namespaced), which is the point.
    """
    if run.manifest.host_cpu is not None:
        return
    samples: list[float] = []
    section = HostCpu(cpus=psutil.cpu_count())
    run.manifest.host_cpu = section
    psutil.cpu_percent(None)  # primes the counter: the first call has no interval to measure

    def sample() -> None:
        while True:
            gevent.sleep(HOST_CPU_INTERVAL_S)
            samples.append(psutil.cpu_percent(None))
            section.mean_percent = round(sum(samples) / len(samples), 1)
            section.max_percent = max(samples)
            section.samples = len(samples)

    run.greenlets.append(gevent.spawn(sample))
