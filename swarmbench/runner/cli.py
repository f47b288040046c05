"""`python -m swarmbench up|headless|sweep|knee|ab|compare`: every command make runs, validated first.

Settings come from the environment, under Locust's own names (LOCUST_USERS, LOCUST_RUN_TIME, ...)
plus WORKERS; see docs/headless.md "Settings". A bad value stops here with one line, before any image is
built or any shell sees it (make passes variables through the environment, never into a recipe).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping

from swarmbench.core.exits import UsageError, die
from swarmbench.core.loadspec import MIXES, STORES, SWEEP_MODES
from swarmbench.runner import ab, compare, compose, knee, points, settings, swarm, swarmlab, sweep


class _Parser(argparse.ArgumentParser):
    """argparse with our one-line errors (argparse's own prints the whole usage first).
    Subcommand parsers inherit it (add_subparsers uses the parent's class)."""

    def error(self, message: str):  # type: ignore[override]
        die(f"{self.prog}: {message} (see --help)")


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["compare"]:  # its own parser, on the analysis side (runner/compare.py)
        return compare.run(given[1:])
    parser = _Parser(prog="python -m swarmbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="the web UI on 127.0.0.1 with WORKERS workers (docker compose up)")
    headless = sub.add_parser("headless", help="one headless run: results/<run-id>/, exit code = Locust's")
    headless.add_argument(
        "--staging",
        action="store_true",
        help="test LOCUST_HOST (required) without starting the bundled target (what `make staging` runs)",
    )
    headless.add_argument(
        "--swarm",
        action="store_true",
        help="run as a Docker Swarm stack across the swarm's nodes (what `make swarm` runs)",
    )
    headless.add_argument(
        "--baseline",
        metavar="DIR",
        help="then compare the run with this saved run or folder of repeats; exit 3 on a regression "
        "(BASELINE; docs/compare.md)",
    )
    sub.add_parser("ab", help="A and B interleaved against the same target, then compared (make ab)")
    lab = sub.add_parser("swarm-lab", help="a two-node swarm on this machine (root): up or down")
    lab.add_argument("action", choices=("up", "down"), help="create (idempotent) or remove the lab")
    add_sweep_parser(sub)
    add_knee_parser(sub)
    args = parser.parse_args(with_sweep_args(sys.argv[1:] if argv is None else argv, os.environ))
    try:
        if args.command == "up":
            return compose.run_up(settings.up_from_env(os.environ))
        if args.command == "knee":
            return knee.run_knee(os.environ, steps=args.steps, rates=args.rates, local=args.local)
        if args.command == "swarm-lab":
            return swarmlab.up(dict(os.environ)) if args.action == "up" else swarmlab.down()
        if args.command == "headless":
            chosen = settings.headless_from_env(os.environ, staging=args.staging)
            base = ab.baseline_path(args.baseline, os.environ)
            return ab.run_with_baseline(
                swarm.run_swarm if args.swarm else compose.run_headless, chosen, base
            )
        if args.command == "ab":
            return ab.run_ab(os.environ)
        if args.command == "sweep":
            env = points.store_comparison_env(os.environ) if args.store_comparison else dict(os.environ)
            chosen = points.sweep_settings(vars(args), env)
            return sweep.run_sweep(chosen, env, report=not args.no_report, dry_run=args.dry_run)
    except UsageError as e:
        die(str(e))
    return 2


def with_sweep_args(argv: list[str], env: Mapping[str, str]) -> list[str]:
    """`make sweep SWEEP_ARGS='--dry-run'`: extra sweep flags from the environment, split like a
    shell would split them but never run by one (a ';' is just an unknown argument)."""
    extra = env.get("SWEEP_ARGS", "").strip()
    if not extra or not argv or argv[0] != "sweep":
        return argv
    try:
        return [*argv, *shlex.split(extra)]
    except ValueError as e:
        die(f"SWEEP_ARGS={extra!r}: {e}")


def add_sweep_parser(sub) -> None:
    """`sweep`: each flag falls back to its make variable (WORKERS, CLASSES, ...), then a default."""
    p = sub.add_parser(
        "sweep",
        help="the scaling experiment: workers x classes x repeats -> results/<sweep-id>/ + report",
        description=sweep.__doc__.split("\n\n")[0] if sweep.__doc__ else None,
    )
    d = points
    # flag, metavar, help: each value falls back to the make variable named in its help.
    for flag, metavar, text in (
        ("--workers", "LIST", f"worker counts (WORKERS; default '{' '.join(map(str, d.SWEEP_WORKERS))}')"),
        ("--classes", "LIST", f"user classes (CLASSES; default '{' '.join(d.SWEEP_CLASSES)}')"),
        ("--repeats", "N", f"repeats of every point (REPEATS; default {d.SWEEP_REPEATS})"),
        ("--run-time", "T", f"run time of each point (RUN_TIME; default {d.SWEEP_RUN_TIME})"),
        ("--users", "N", f"users: total (strong) or per worker (weak) (USERS; default {d.SWEEP_USERS})"),
        (
            "--mode",
            "MODE",
            f"{' or '.join(SWEEP_MODES)}: total users / users per worker fixed (MODE; default strong)",
        ),
        (
            "--wait-time",
            "SPEC",
            "users' pacing, e.g. 'constant 0.1' (WAIT_TIME; default LOCUST_WAIT_TIME/locust.conf)",
        ),
        (
            "--stores",
            "LIST",
            f"target store strategies to sweep: {' '.join(STORES)} (STORES; default: not swept)",
        ),
        ("--mixes", "LIST", f"request mixes to sweep: {' '.join(MIXES)} (MIXES; default: not swept)"),
        (
            "--arrival-rate",
            "SPEC",
            "open model: every point offers this schedule, e.g. '100; 100@20s; 200@0s; 200@20s' "
            "(ARRIVAL_RATE; --users is the pool; the report: the highest rate N workers sustain)",
        ),
        (
            "--sweep-id",
            "ID",
            "folder under results/; the same id resumes (SWEEP_ID; default sweep-<UTC time>)",
        ),
    ):
        p.add_argument(flag, metavar=metavar, help=text)
    p.add_argument(
        "--local",
        action="store_true",
        default=None,
        help="local processes instead of docker compose (LOCAL=1)",
    )
    p.add_argument(
        "--store-comparison",
        action="store_true",
        help="the store-strategy sweep's defaults (make sweep-stores), for each variable not set: "
        + ", ".join(f"{k}={v!r}" for k, v in points.STORE_COMPARISON.items()),
    )
    p.add_argument("--no-report", action="store_true", help="skip `python -m analysis report` at the end")
    p.add_argument("--dry-run", action="store_true", help="print the plan (and each point's status) and exit")


def add_knee_parser(sub) -> None:
    p = sub.add_parser(
        "knee",
        help="step load -> results/<run-id>/ and a report with the latency-vs-throughput knee",
        description=knee.__doc__.split("\n\n")[0] if knee.__doc__ else None,
    )
    p.add_argument(
        "--steps",
        metavar="SPEC",
        help=f"'START STEP SECONDS MAX' users (STEP_USERS; default '{knee.DEFAULT_STEPS}')",
    )
    p.add_argument(
        "--rates",
        metavar="SPEC",
        help="'START STEP SECONDS MAX' iterations/s: an open-model knee, e.g. '100 100 20 800' "
        "(STEP_RATES; the intended-start p99 bound: KNEE_P99_MS, default 500)",
    )
    p.add_argument("--local", action="store_true", help="local processes instead of docker compose (LOCAL=1)")
