"""Experiment settings a run records about itself: sweep membership, the scenario's request mix and
the optional step-load shape -- options in Locust's config chain, sections of run.json.

`python -m swarmbench sweep` sets LOCUST_SWEEP_* for every point, so each run folder says which
sweep, repeat and point it belongs to (analysis groups and labels runs by it); a run outside a
sweep records nothing here.
"""

from __future__ import annotations

import logging

import gevent
import psutil
from locust import events
from locust.argument_parser import LocustArgumentParser
from locust.env import Environment
from locust.runners import Runner, WorkerRunner

from .errors import die
from .lifecycle import current_run

logger = logging.getLogger("swarmbench")

MIXES = ("default", "read-heavy", "post-heavy")
"""Request mixes of the bundled albums scenario (the cycles live in locustfiles/albums.py):
default 3 GET : 1 POST, read-heavy 9 : 1, post-heavy 1 : 3 -- the store strategies differ most
between a write-heavy and a read-heavy load."""

SWEEP_MODES = ("strong", "weak")


def add_options(parser: LocustArgumentParser) -> None:
    for name, help_text in (
        ("id", "Sweep this run belongs to (recorded in run.json's `sweep`)."),
        ("mode", "Sweep scaling mode: strong (total users fixed) or weak (users per worker fixed)."),
        ("repeat", "Repeat number of this point within its sweep (1, 2, ...)."),
        ("point", "Point id within its sweep (also the run folder's name)."),
    ):
        parser.add_argument(
            f"--sweep-{name}",
            env_var=f"LOCUST_SWEEP_{name.upper()}",
            default="",
            include_in_web_ui=False,
            help=help_text,
        )
    parser.add_argument(
        "--albums-mix",
        env_var="LOCUST_ALBUMS_MIX",
        default="default",
        include_in_web_ui=False,
        help=f"Request mix of the albums scenario: {', '.join(MIXES)} (3:1, 9:1, 1:3 GET:POST).",
    )
    parser.add_argument(
        "--step-users",
        env_var="LOCUST_STEP_USERS",
        default="",
        include_in_web_ui=False,
        help=(
            "Step load for knee finding, 'START STEP SECONDS MAX' (e.g. '10 10 20 80'): needs "
            "locustfiles/step_load.py in the locustfile list; without this option that file is inert."
        ),
    )


def register() -> None:
    """Options and validation: before lifecycle's init listener creates the run folder."""
    events.init_command_line_parser.add_listener(add_options)
    events.init.add_listener(on_init)


def register_recording() -> None:
    """After lifecycle's init listener: the run exists, add this module's run.json sections."""
    events.init.add_listener(record)
    events.test_start.add_listener(start_host_cpu)


HOST_CPU_INTERVAL_S = 1.0
"""How often the master samples the whole machine's CPU (psutil.cpu_percent)."""


def start_host_cpu(environment: Environment, **_kw) -> None:
    """Sample the machine's CPU, all processes together, while the test runs (master or standalone).

    Workers measure only themselves: on a shared machine (4 workers on 2 cores, the target next to
    them) no worker reaches 90 % of a core, yet they are starved. The machine's total shows it. In
    a container this is still the host's figure (/proc/stat is not namespaced), which is the point.
    """
    run = current_run()
    if run is None or isinstance(environment.runner, WorkerRunner) or "host_cpu" in run.extra:
        return
    samples: list[float] = []
    run.extra["host_cpu"] = {"cpus": psutil.cpu_count(), "mean_percent": None, "max_percent": None}
    psutil.cpu_percent(None)  # primes the counter: the first call has no interval to measure

    def sample() -> None:
        while True:
            gevent.sleep(HOST_CPU_INTERVAL_S)
            samples.append(psutil.cpu_percent(None))
            run.extra["host_cpu"].update(
                mean_percent=round(sum(samples) / len(samples), 1),
                max_percent=max(samples),
                samples=len(samples),
            )

    run.greenlets.append(gevent.spawn(sample))


def parse_step_users(spec: str) -> tuple[int, int, float, int]:
    """'START STEP SECONDS MAX' -> (start, step, seconds, max); ValueError naming the problem."""
    words = spec.replace(",", " ").split()
    if len(words) != 4:
        raise ValueError(f"{spec!r}: expected 'START STEP SECONDS MAX', e.g. '10 10 20 80'")
    try:
        start, step, top = int(words[0]), int(words[1]), int(words[3])
        seconds = float(words[2].rstrip("s"))
    except ValueError:
        raise ValueError(f"{spec!r}: START, STEP and MAX must be whole numbers, SECONDS a number") from None
    if start < 1 or step < 1 or seconds <= 0 or top < start:
        raise ValueError(f"{spec!r}: need START >= 1, STEP >= 1, SECONDS > 0 and MAX >= START")
    return start, step, seconds, top


def sweep_section(opts) -> dict | None:
    if not getattr(opts, "sweep_id", ""):
        return None
    repeat = opts.sweep_repeat
    return {
        "id": opts.sweep_id,
        "mode": opts.sweep_mode or None,
        "repeat": int(repeat) if str(repeat).isdigit() else None,
        "point": opts.sweep_point or None,
    }


def on_init(environment: Environment, runner: Runner, **_kw) -> None:
    opts = environment.parsed_options
    if opts is None:
        return
    if opts.albums_mix not in MIXES:
        die(f"--albums-mix/LOCUST_ALBUMS_MIX {opts.albums_mix!r}: expected one of {', '.join(MIXES)}")
    if opts.sweep_mode and opts.sweep_mode not in SWEEP_MODES:
        die(f"--sweep-mode/LOCUST_SWEEP_MODE {opts.sweep_mode!r}: expected strong or weak")
    if opts.step_users:
        try:
            parse_step_users(opts.step_users)
        except ValueError as e:
            die(f"--step-users/LOCUST_STEP_USERS {e}")
    elif environment.shape_class is not None and type(environment.shape_class).__name__ == "StepLoadShape":
        # step_load.py was loaded but no steps asked for: behave exactly like a normal run.
        environment.shape_class = None


def record(environment: Environment, runner: Runner, **_kw) -> None:
    opts = environment.parsed_options
    if opts is None or isinstance(runner, WorkerRunner):
        return
    run = current_run()
    if run is None:
        return
    sweep = sweep_section(opts)
    if sweep:
        run.extra["sweep"] = sweep
    run.extra["albums_mix"] = opts.albums_mix
    if opts.step_users and environment.shape_class is not None:
        start, step, seconds, top = parse_step_users(opts.step_users)
        # run.json's "users" is otherwise locust.conf's, which a step load ignores: record the
        # most users the steps reach (run.extra overrides the base keys of the manifest).
        run.extra["users"] = top
        run.extra["load_shape"] = {
            "kind": "step",
            "start": start,
            "step": step,
            "seconds": seconds,
            "max": top,
        }
