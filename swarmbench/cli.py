"""`swarmbench <command>`: every Swarmbench command, one parser (this module), validated first.

    swarmbench up | headless | sweep | knee | ab | swarm-lab     run load (the host runner)
    swarmbench compare | floor | trend                          did it get slower? (numpy)
    swarmbench history add | list | import | export | accept | triage   every run remembered
    swarmbench report | summary | checks                        read run folders (pandas, matplotlib)
    swarmbench launch master|worker [--headless] [LOCUST ARGS]  the Locust image's entrypoint

`python -m swarmbench` is the same command line, and `python -m analysis` its short name for the
three analysis commands. Settings of the runs come from the environment under Locust's own names
(LOCUST_USERS, LOCUST_RUN_TIME, ...) plus WORKERS, so make passes them without a shell ever seeing
them; the rest are flags. Bad input stops here with one line, `PROG: error: ...`, exit 2, before any
image is built or any run starts.

This module imports only the standard library and swarmbench.core at its top: the Locust image runs
`swarmbench launch` with core, latency and plugin alone. Every command's code is imported when it
runs, so `swarmbench headless` needs nothing beyond the standard library, and the commands that
need numpy or pandas say which extra to install when it is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from swarmbench.core import cmdline
from swarmbench.core.exits import UsageError, die

PROG = "swarmbench"

DESCRIPTION = {
    PROG: "Load tests with Locust: run them (compose, swarm, local), sweep and compare them, read them.",
    "analysis": "Summaries, scaling fits and an HTML report from Swarmbench/Locust run folders.",
}

ANALYSIS_COMMANDS = ("report", "summary", "checks")
"""What `python -m analysis` offers (the analysis entry users know)."""

EXTRAS = {
    "compare": ("numpy", "hdrh"),
    "analysis": ("numpy", "hdrh", "pandas", "matplotlib", "scipy"),
}
"""The modules each extra of pyproject.toml brings, checked before a command that needs them runs
(a sweep's report after an hour of runs must not fail on an import)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, `ROOT: error: COMMAND: MESSAGE (see ... --help)`, exit 2
    (argparse's own prints the whole usage first). Subparsers inherit it (add_subparsers uses the
    parent's class). With `raising`, a UsageError instead: `make ab` checks COMPARE_ARGS with the
    comparison's own parser before its runs, and says which variable was wrong."""

    root = PROG
    raising = False

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        if self.raising:
            raise UsageError(message)
        command = self.prog.removeprefix(self.root).strip()
        die(f"{command + ': ' if command else ''}{message} (see {self.prog} --help)", prog=self.root)


# --- options more than one command takes, defined once ---------------------------------------------


def add_out(p: argparse.ArgumentParser, required: bool, what: str) -> None:
    p.add_argument(cmdline.OUT, "--out", type=Path, required=required, metavar="OUT", help=what)


def add_levels(p: argparse.ArgumentParser) -> None:
    """The comparison's band and confidence (compare, floor, and make ab's COMPARE_ARGS)."""
    from swarmbench.core.checks import MIN_EFFECT

    p.add_argument("--min-effect", type=float, default=MIN_EFFECT * 100, help="band in %% (default 5)")
    p.add_argument(
        "--confidence",
        type=float,
        default=95.0,
        help="CI level in %% (default 95; with --history: the whole gate's, each row at its share)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def add_paths(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="run folder(s) or folder(s) holding run folders")


def add_load(p: argparse.ArgumentParser) -> None:
    """--load KEY=VALUE (repeated): the load of run folders without run.json (history/commands.py
    given_load reads it): `history add|import`'s and `compare --history`'s candidate's."""
    p.add_argument(
        "--load",
        action="append",
        metavar="KEY=VALUE",
        help="the load of run folders without run.json (refused without it), one key each time: "
        "users=50, user_classes=A,B, run_time=60, ... (docs/history.md)",
    )


def add_history(p: argparse.ArgumentParser, optional_value: bool = False) -> None:
    """--history STORE: a SQLite file or a postgresql:// URL (default SWARMBENCH_HISTORY, else
    results/history.sqlite). OPTIONAL_VALUE: `compare --history [STORE] RUN`."""
    text = (
        "the run history: a SQLite file or a postgresql:// URL "
        "(default $SWARMBENCH_HISTORY, else results/history.sqlite)"
    )
    if optional_value:
        p.add_argument(cmdline.HISTORY, nargs="?", const="", metavar="STORE", help=text)
    else:
        p.add_argument(cmdline.HISTORY, default="", metavar="STORE", help=text)


def add_record(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--record",
        action="store_true",
        default=None,
        help="add each run to the history as it finishes (SWARMBENCH_RECORD=1; the store: --history, "
        "else SWARMBENCH_HISTORY, else results/history.sqlite)",
    )


def add_local(p: argparse.ArgumentParser, default: bool | None) -> None:
    p.add_argument(
        "--local",
        action="store_true",
        default=default,
        help="local processes instead of docker compose (LOCAL=1)",
    )


# --- the parser -------------------------------------------------------------------------------------


def build_parser(prog: str = PROG, commands: Sequence[str] | None = None) -> Parser:
    """The one parser: every command, or only COMMANDS (`python -m analysis`)."""

    class Root(Parser):
        root = prog

    parser = Root(prog=prog, description=DESCRIPTION.get(prog))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if commands is None or name in commands:
            add(sub)
    parser.commands = sub.choices  # type: ignore[attr-defined]
    return parser


def _up(sub) -> None:
    sub.add_parser("up", help="the web UI on 127.0.0.1:8089 with WORKERS workers (docker compose up)")


def _headless(sub) -> None:
    p = sub.add_parser("headless", help="one headless run: results/<run-id>/, exit code = Locust's")
    p.add_argument(
        cmdline.STAGING,
        action="store_true",
        help="test LOCUST_HOST (required) without starting the bundled target (what `make staging` runs)",
    )
    p.add_argument(
        cmdline.SWARM,
        action="store_true",
        help="run as a Docker Swarm stack across the swarm's nodes (what `make swarm` runs)",
    )
    p.add_argument(
        "--baseline",
        metavar="DIR",
        help="then compare the run with this saved run or folder of repeats, or with the run history "
        "(`history`); exit 3 on a regression (BASELINE; docs/compare.md, docs/history.md)",
    )
    add_record(p)
    p.add_argument(
        "--verbose",
        action="store_true",
        default=None,
        help="print the containers' logs as well as the progress line (SWARMBENCH_VERBOSE=1); they are "
        "kept in the run folder's swarmbench.log either way",
    )


def _sweep(sub) -> None:
    """`sweep`: each flag falls back to its make variable (WORKERS, CLASSES, ...), then a default."""
    from swarmbench.core.loadspec import MIXES, STORES, SWEEP_MODES
    from swarmbench.runner import points, sweep

    p = sub.add_parser(
        "sweep",
        help="the scaling experiment: workers x classes x repeats -> results/<sweep-id>/ + report",
        description=(sweep.__doc__ or "").split("\n\n")[0] or None,
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
    add_local(p, default=None)
    p.add_argument(
        "--store-comparison",
        action="store_true",
        help="the store-strategy sweep's defaults (make sweep-stores), for each variable not set: "
        + ", ".join(f"{k}={v!r}" for k, v in d.STORE_COMPARISON.items()),
    )
    p.add_argument("--no-report", action="store_true", help="skip `swarmbench report` at the end")
    add_record(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan (and each point's status) and exit")


def _knee(sub) -> None:
    from swarmbench.runner import knee

    p = sub.add_parser(
        "knee",
        help="step load -> results/<run-id>/ and a report with the latency-vs-throughput knee",
        description=(knee.__doc__ or "").split("\n\n")[0] or None,
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
    add_local(p, default=False)


def _ab(sub) -> None:
    p = sub.add_parser(
        "ab",
        help="A and B interleaved against the same target, then compared (make ab: A, B, REPEATS, ...)",
    )
    add_record(p)


def _swarm_lab(sub) -> None:
    p = sub.add_parser("swarm-lab", help="a two-node swarm on this machine (root): up or down")
    p.add_argument("action", choices=("up", "down"), help="create (idempotent) or remove the lab")


def compare_parser(sub) -> argparse.ArgumentParser:
    """`swarmbench compare`'s parser.

    (Long on purpose: every option of the one comparison command, the A/B sides, the history gate,
    the duet and the sequential looks, declared in one place, as make ab and the runner build them
    through core/cmdline.py.)"""
    from swarmbench.core.checks import COMPARE_METRICS

    p = sub.add_parser(
        "compare",
        help="did it get slower? two runs or two sets of repeats, a verdict per metric (exit 3: regressed)",
        description="Did it get slower? Each metric's difference with a bootstrap confidence interval "
        "and a verdict: regressed, improved, no change or inconclusive (docs/compare.md).",
    )
    p.add_argument("baseline", nargs="?", type=Path, help="run folder or folder of repeats (BASELINE)")
    p.add_argument("candidate", nargs="?", type=Path, help="run folder or folder of repeats (CANDIDATE)")
    add_out(p, False, "output folder (default results/compare-<UTC time>)")
    add_levels(p)
    p.add_argument(
        "--metrics",
        default=",".join(COMPARE_METRICS),
        help=f"comma-separated, of {', '.join(COMPARE_METRICS)}",
    )
    p.add_argument("--names", help="comma-separated request names (default: every name in common)")
    p.add_argument(
        "--noise", type=Path, help="run-to-run noise file (default: compare-noise.json with the baseline)"
    )
    p.add_argument("--allow-different", action="store_true", help="compare runs of different loads")
    p.add_argument("--fail-on-inconclusive", action="store_true", help="exit 3 on inconclusive too")
    p.add_argument(
        "--calibrate",
        type=Path,
        metavar="DIR",
        help="A/A: measure the run-to-run noise of DIR's identical runs into DIR/compare-noise.json",
    )
    p.add_argument(
        cmdline.DUET,
        type=Path,
        metavar="RUN",
        help="a duet run (or a folder of them: DUET=1 make ab) compared side A against side B in pairs",
    )
    p.add_argument(
        cmdline.SEQUENTIAL,
        type=int,
        metavar="K",
        help="make ab with BUDGET: the sequential design's planned pairs (with --duet: duet runs, one a "
        "pair); the runs are paired in time and the gated rows judged by repeated CIs (docs/compare.md)",
    )
    p.add_argument(
        cmdline.FIRST_LOOK, type=int, default=3, metavar="F", help="with --sequential: the first look"
    )
    p.add_argument(
        cmdline.LOOK,
        action="store_true",
        help="with --sequential: one look, as JSON on stdout; nothing written",
    )
    add_history(p, optional_value=True)
    p.add_argument("--branch", default="main", help="with --history: the branch whose runs are the baseline")
    add_load(p)
    p.add_argument(
        "--require-baseline",
        action="store_true",
        help="with --history: exit 3 when too few comparable runs give no verdict (none: a loud warning "
        "either way; SWARMBENCH_REQUIRE_BASELINE=1, also for BASELINE=history)",
    )
    return p


def floor_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "floor",
        help="an A/A run's noise floor: the smallest change these settings can tell (make ab with B = A)",
    )
    p.add_argument("a", type=Path, help="folder of the A runs")
    p.add_argument("b", type=Path, help="folder of the B runs (the same settings as A)")
    add_out(p, True, "output folder")
    add_levels(p)
    return p


def _report(sub) -> None:
    from swarmbench.core.bottleneck import KNEE_P99_MS

    p = sub.add_parser(
        "report",
        help="write summary.csv, scaling.json, charts (PNG) and report.html into OUT",
        description="Every run folder (a folder with a *_stats.csv) under each PATH goes into one report.",
    )
    add_paths(p)
    add_out(p, True, "output folder (created if needed)")
    p.add_argument(cmdline.TITLE, default="Swarmbench report", help="page title")
    p.add_argument(
        "--include-partial",
        action="store_true",
        help="keep degraded, interrupted and failed runs (run.json status) in the scaling fits",
    )
    p.add_argument(
        cmdline.KNEE_P99_MS,
        type=_milliseconds,
        default=KNEE_P99_MS,
        metavar="MS",
        help="open-model knee: a step holds only with its intended-start p99 at most MS "
        f"(default {KNEE_P99_MS:g}; `swarmbench knee` passes KNEE_P99_MS)",
    )


def _milliseconds(text: str) -> float:
    """--knee-p99-ms: a positive number of milliseconds, '' the default (core's rule for KNEE_P99_MS)."""
    from swarmbench.core.bottleneck import knee_p99_ms

    try:
        return knee_p99_ms(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _summary(sub) -> None:
    p = sub.add_parser("summary", help="print the per-run, per-endpoint table")
    add_paths(p)
    p.add_argument("--format", choices=("table", "csv"), default="table")
    p.add_argument("--aggregated", action="store_true", help="only the Aggregated row of each run")


def _checks(sub) -> None:
    p = sub.add_parser(
        "checks",
        help="evaluate thresholds on a saved run folder (exit 3 when one is broken)",
        description="Latency from the run's HDR histograms (exact), else locust_stats.csv (rounded).",
    )
    p.add_argument("run", metavar="RUN", help="one run folder")
    p.add_argument("exprs", nargs="+", metavar="EXPR", help="thresholds, e.g. 'p50<108' (docs/ci.md)")


def _history(sub) -> None:
    p = sub.add_parser(
        "history", help="the run history: add runs, list, import a tree, export (docs/history.md)"
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    adding = (("add", "add run folders"), ("import", "add every run folder under DIR (old formats too)"))
    for name, what in adding:
        a = actions.add_parser(name, help=what)
        if name == "add":
            a.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders")
            a.add_argument(
                "--partial",
                action="store_true",
                help="add runs whose master was lost too (run.json `master_lost`: the runner wrote "
                "their record from what survived; refused without this)",
            )
        else:
            a.add_argument("folder", type=Path, metavar="DIR", help="a folder holding run folders")
        a.add_argument("--branch", help="the git branch the runs measured (default: each run.json's)")
        a.add_argument(
            "--testbed",
            help="the machine's name (default: each run.json's, else this machine's CPU and count)",
        )
        add_load(a)
        add_history(a)
    a = actions.add_parser(
        "accept", help="accept the new level a run starts (the trend's check stops calling it open)"
    )
    a.add_argument(
        "run", metavar="RUN", help="the run (its run id or run_key) that starts the accepted level"
    )
    a.add_argument("--reason", help="why the new level is accepted (required: recorded with the decision)")
    add_history(a)
    a = actions.add_parser(
        "triage", help="the open regressions of a branch and the decisions recorded (numpy)"
    )
    a.add_argument("--branch", default="main", help="the branch (default main)")
    a.add_argument("--json", action="store_true", help="print the open regressions and decisions as JSON")
    add_history(a)
    a = actions.add_parser("list", help="the stored runs, oldest first")
    a.add_argument("--json", action="store_true", help="one JSON object per run")
    add_history(a)
    a = actions.add_parser(
        "export", help="one CSV per configuration in Apache Otava's layout, and otava.yaml"
    )
    a.add_argument(
        "--format", choices=("csv",), default="csv", help="the layout Apache Otava reads (the only one)"
    )
    add_out(a, False, "output folder (default a new results/history-export-<UTC time>)")
    add_history(a)


def _trend(sub) -> None:
    p = sub.add_parser("trend", help="change points of every name and metric over the run history")
    add_history(p)
    p.add_argument("--branch", default="main", help="the branch whose runs make the series (default main)")
    p.add_argument("--last", type=int, metavar="N", help="only the last N runs of each configuration")
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"change_points": [...], "runs": [...]} instead of the table',
    )
    p.add_argument(
        "--pvalue", type=float, help="a change point's t-test p after the merge (Otava's; default 0.001)"
    )
    p.add_argument(
        "--magnitude",
        type=float,
        help="the smallest change kept, a fraction (Otava's; default: 0.02 or the series' noise, the larger)",
    )
    p.add_argument("--window", type=int, help="runs per sliding window of the split (Otava's; default 50)")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 3 while an un-triaged regression stands on the branch (docs/history.md: triage)",
    )
    p.add_argument(
        "--anchor", metavar="RUN", help="with --check: the run whose level is the reference (a release)"
    )
    add_out(p, False, "write trend.html (one chart per name and metric) and trend.json there")


def _launch(sub) -> None:
    sub.add_parser(
        "launch",
        help="the Locust image's entrypoint: `launch master|worker [--headless] [LOCUST ARGS]` execs Locust",
        description="Anything after the role goes to Locust unchanged (so `launch --help` is Locust's).",
    )


COMMANDS: dict[str, Callable] = {
    "up": _up,
    "headless": _headless,
    "sweep": _sweep,
    "knee": _knee,
    "ab": _ab,
    "swarm-lab": _swarm_lab,
    "compare": compare_parser,
    "floor": floor_parser,
    "history": _history,
    "trend": _trend,
    "report": _report,
    "summary": _summary,
    "checks": _checks,
    "launch": _launch,
}
"""Every command, in the order --help lists them."""


# --- running a command -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, prog: str = PROG, commands: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["launch"] and commands is None:
        # Not parsed here: every word after the role is Locust's (core/launch.py).
        from swarmbench.core.launch import main as launch

        launch(given[1:])
        return 2  # not reached: launch execs Locust
    if given[:1] == ["sweep"]:
        given = with_sweep_args(given, os.environ)
    args = parse_args(given, prog, commands)
    try:
        return RUN[args.command](args)
    except UsageError as e:
        die(str(e), prog=prog)


def parse_args(
    argv: Sequence[str], prog: str = PROG, commands: Sequence[str] | None = None
) -> argparse.Namespace:
    """ARGV parsed as main() runs it (bad input: one line, exit 2). The runner's subprocesses are
    parsed here too, in tests/test_cmdline.py: core/cmdline.py builds their argv. A command named
    first is parsed by a parser of that command alone (the same parse, the same errors): the others'
    options are not built (sweep's defaults import the runner: ~0.1 s of every `swarmbench trend`)."""
    if commands is None and argv[:1] and argv[0] in COMMANDS:
        commands = [argv[0]]
    parser = build_parser(prog, commands)
    args, unknown = parser.parse_known_args(list(argv))
    if unknown:  # said by the command's parser, so the line names the command and its --help
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    args.root = prog  # the program's name in every error, warning and check line
    # `compare --history STORE RUN`: argparse gives STORE to --history and RUN to baseline, as meant;
    # `compare --history RUN` gives it RUN: the default store then.
    if args.command == "compare" and args.history and args.baseline is None:
        args.history, args.baseline = "", Path(args.history)
    return args


def analysis_main(argv: Sequence[str] | None = None) -> int:
    """`python -m analysis report|summary|checks`: the analysis commands under their short name."""
    return main(argv, prog="analysis", commands=ANALYSIS_COMMANDS)


def with_sweep_args(argv: list[str], env: Mapping[str, str]) -> list[str]:
    """`make sweep SWEEP_ARGS='--dry-run'`: extra sweep flags from the environment, split like a
    shell would split them but never run by one (a ';' is just an unknown argument)."""
    extra = env.get("SWEEP_ARGS", "").strip()
    if not extra:
        return argv
    try:
        return [*argv, *shlex.split(extra)]
    except ValueError as e:
        die(f"SWEEP_ARGS={extra!r}: {e}")


def require(extra: str, why: str) -> None:
    """UsageError, before anything runs, when EXTRA's packages are not importable here."""
    missing = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"{why} needs {', '.join(missing)}: pip install 'swarmbench[{extra}]' "
            "(or `make .venv/.installed` and the venv's python)"
        )


def check_compare_args(words: list[str], aa: bool) -> None:
    """`make ab`'s COMPARE_ARGS, checked before any run by the comparison's own parser: options of
    `swarmbench compare` for A/B, of the noise floor (--min-effect, --confidence, --seed) for A/A.
    UsageError naming the problem (the runner names the variable)."""

    class Raising(Parser):
        raising = True

    sub = Raising(prog=PROG).add_subparsers(dest="command")
    if aa:
        args = floor_parser(sub).parse_args(["A", "B", "-o", "\0", *words])
        if str(args.out) != "\0":  # a later -o wins in argparse: the words gave one
            raise UsageError("-o is set by make ab, not by COMPARE_ARGS")
        from swarmbench.compare.commands import check_levels

        check_levels(args)
        return
    args = compare_parser(sub).parse_args(words)
    set_by_ab = {
        "baseline": "BASELINE",
        "candidate": "CANDIDATE",
        "out": "-o",
        "calibrate": "--calibrate",
        "duet": cmdline.DUET,
        "sequential": "--sequential (BUDGET)",
    }
    given = [name for name in set_by_ab if getattr(args, name) is not None] + (["look"] if args.look else [])
    set_by_ab["look"] = "--look (BUDGET)"
    if given:
        raise UsageError(f"{set_by_ab[given[0]]} is set by make ab, not by COMPARE_ARGS")
    from swarmbench.compare.commands import check_noise_file, options

    options(args)
    check_noise_file(args.noise)


def _run_up(args: argparse.Namespace) -> int:
    from swarmbench.runner import compose, settings

    chosen = settings.up_from_env(os.environ)
    settings.checkout(f"{args.root} {args.command}")
    return compose.run_up(chosen)


def recording(args: argparse.Namespace) -> str | None:
    """The history store a run command records into (--record or SWARMBENCH_RECORD=1), opened now
    so a store that cannot be written fails before the runs; None when not recording."""
    from swarmbench.history.commands import RECORD_ENV

    on = args.record if args.record is not None else os.environ.get(RECORD_ENV, "").strip()
    if on in (None, False, "", "0", "false", "no"):
        return None
    if on not in (True, "1", "true", "yes"):
        raise UsageError(f"{RECORD_ENV}={on!r}: expected 1 or 0")
    return runner_store()


def runner_store() -> str:
    """The history store of the run commands (--record, BASELINE=history), opened now and closed,
    so that one that cannot be written fails before the runs: SWARMBENCH_HISTORY, else
    history.sqlite beside the run folders (SWARMBENCH_RESULTS, else the checkout's results/)."""
    from swarmbench.history.commands import RESULTS_ENV, check_store, store_spec
    from swarmbench.runner.settings import results_dir

    spec = store_spec(None, {**os.environ, RESULTS_ENV: str(results_dir(os.environ))})
    check_store(spec)
    return spec


def _run_headless(args: argparse.Namespace) -> int:
    from functools import partial

    from swarmbench.runner import ab, compose, settings, swarm, terminal

    chosen = settings.headless_from_env(os.environ, staging=args.staging)
    settings.checkout(f"{args.root} {args.command}")  # after the settings: a typo is named first
    base = ab.baseline_path(args.baseline, os.environ)
    if base is not None:
        require("compare", "--baseline/BASELINE")
    record = recording(args)  # the store, opened once: recording and the gate use the same one
    store = (record or runner_store()) if base == ab.HISTORY else None
    run = partial(
        swarm.run_swarm if args.swarm else compose.run_headless,
        verbose=terminal.verbose(args.verbose, os.environ),
    )
    return ab.run_with_baseline(run, chosen, base, record, store)


def _run_sweep(args: argparse.Namespace) -> int:
    from swarmbench.runner import points, settings, sweep

    env = points.store_comparison_env(os.environ) if args.store_comparison else dict(os.environ)
    chosen = points.sweep_settings(vars(args), env)
    if not args.dry_run:  # a plan needs no checkout (given SWARMBENCH_RESULTS); the runs do
        settings.checkout(f"{args.root} {args.command}")
    if not args.no_report and not args.dry_run:
        require("analysis", "the sweep's report (--no-report skips it)")
    record = None if args.dry_run else recording(args)
    named = bool(args.sweep_id or env.get("SWEEP_ID"))  # else the default id, taken exclusively
    return sweep.run_sweep(
        chosen, env, report=not args.no_report, dry_run=args.dry_run, record=record, named=named
    )


def _run_knee(args: argparse.Namespace) -> int:
    from swarmbench.runner import knee, settings

    require("analysis", "the knee's report")
    settings.checkout(f"{args.root} {args.command}")
    return knee.run_knee(os.environ, steps=args.steps, rates=args.rates, local=args.local)


def _run_ab(args: argparse.Namespace) -> int:
    from swarmbench.runner import ab, settings

    require("compare", "make ab's comparison")
    settings.checkout(f"{args.root} {args.command}")
    if settings.flag(os.environ, "DUET"):  # A and B at once, compared in pairs (runner/duet.py)
        from swarmbench.runner import duet

        return duet.run_duet(os.environ, check_compare_args, record=recording(args))
    return ab.run_ab(os.environ, check_compare_args, record=recording(args))


def _run_swarm_lab(args: argparse.Namespace) -> int:
    from swarmbench.runner import settings, swarmlab

    if args.action == "up":  # it builds the images from the checkout's compose file
        settings.checkout(f"{args.root} {args.command} up")
    return swarmlab.up(dict(os.environ)) if args.action == "up" else swarmlab.down()


def _run_compare(args: argparse.Namespace) -> int:
    require("compare", "swarmbench compare")
    from swarmbench.compare import commands

    return commands.compare_command(args)


def _run_floor(args: argparse.Namespace) -> int:
    require("compare", "the noise floor")
    from swarmbench.compare import commands

    return commands.floor_command(args)


def _run_history(args: argparse.Namespace) -> int:
    if args.action == "triage":  # the trend's statistics: numpy
        require("compare", "swarmbench history triage")
        from swarmbench.compare import trend_commands

        return trend_commands.triage_command(args)
    from swarmbench.history import commands

    return commands.run(args)


def _run_trend(args: argparse.Namespace) -> int:
    require("compare", "swarmbench trend")
    from swarmbench.compare import trend_commands

    return trend_commands.trend_command(args)


def _run_analysis(args: argparse.Namespace) -> int:
    require("analysis", f"{args.root} {args.command}")
    from swarmbench.analysis import commands

    return commands.run(args)


RUN: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": _run_up,
    "headless": _run_headless,
    "sweep": _run_sweep,
    "knee": _run_knee,
    "ab": _run_ab,
    "swarm-lab": _run_swarm_lab,
    "compare": _run_compare,
    "floor": _run_floor,
    "history": _run_history,
    "trend": _run_trend,
    "report": _run_analysis,
    "summary": _run_analysis,
    "checks": _run_analysis,
}
