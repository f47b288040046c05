"""The arrows subprocesses hide: every `swarmbench` command line the runner can build (each branch)
is parsed by cli.py's real parser, and each value must land where the runner meant it. A flag
renamed in the parser, a positional swapped or an nargs changed fails here in a second, not in a
Docker end-to-end test. Nothing is started."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness import ROOT

from swarmbench import cli
from swarmbench.core import cmdline
from swarmbench.core.bottleneck import KNEE_P99_MS
from swarmbench.runner import ab, duet, points, sweep

RUN = Path("/r/results/run-1")
OUT = Path("/r/out")


def parsed(cmd: list[str]):
    """CMD (the program and its words) as `swarmbench` would parse it."""
    assert tuple(cmd[: len(cmdline.PROGRAM)]) == cmdline.PROGRAM, cmd
    return cli.parse_args(cmd[len(cmdline.PROGRAM) :])


@pytest.mark.parametrize(
    ("runner", "staging", "swarm"),
    [
        (points.ComposeRunner, False, False),
        (points.SwarmRunner, False, True),
        (ab.StagingRunner, True, False),
    ],
)
def test_each_point_runner_starts_a_headless_run_the_parser_reads_as_meant(runner, staging, swarm):
    args = parsed(runner(None, OUT, {}).command())
    assert (args.command, args.staging, args.swarm) == ("headless", staging, swarm)
    assert args.baseline is None and args.record is None  # a point never gates nor records itself


@pytest.mark.parametrize(("staging", "swarm"), [(False, False), (True, False), (False, True), (True, True)])
def test_every_headless_flag_combination_parses(staging, swarm):
    args = cli.parse_args(cmdline.headless(staging=staging, swarm=swarm))
    assert (args.staging, args.swarm) == (staging, swarm)


def test_a_run_against_a_saved_baseline():
    base = Path("/r/results/main-run")
    args = parsed(ab.baseline_command(RUN, base))
    assert (args.command, args.baseline, args.candidate) == ("compare", base, RUN)
    assert args.out == ab.out_dir(RUN, base) and args.history is None


@pytest.mark.parametrize("store", ["/r/results/history.sqlite", "postgresql://u@127.0.0.1/h", None])
def test_a_run_against_the_history(store):
    args = parsed(ab.baseline_command(RUN, ab.HISTORY, store))
    assert (args.command, args.baseline, args.candidate) == ("compare", RUN, None)
    assert args.history == (store or "")  # '': the command's default store
    assert args.out == ab.out_dir(RUN, ab.HISTORY)


def ab_settings(aa: bool, compare_args: tuple[str, ...]) -> ab.AbSettings:
    sides = {"A": {}, "B": {} if aa else {"ALBUMS_STORE": "sharded"}}
    return ab.AbSettings("ab", sides, {"A": None, "B": None}, 1, "5s", 1, 1, "U", False, aa, compare_args)


@pytest.mark.parametrize("compare_args", [(), ("--min-effect", "3", "--metrics", "p50,p95", "--seed", "7")])
def test_make_ab_compares_b_with_a(compare_args):
    root = Path("/r/results/ab")
    args = parsed(ab.sides_command(ab_settings(False, compare_args), root, root / "compare"))
    assert (args.command, args.baseline, args.candidate, args.out) == (
        "compare",
        root / "A",
        root / "B",
        root / "compare",
    )
    if compare_args:
        assert (args.min_effect, args.metrics, args.seed) == (3.0, "p50,p95", 7)


@pytest.mark.parametrize("compare_args", [(), ("--min-effect", "3", "--metrics", "p95", "--seed", "7")])
def test_a_duet_compares_its_two_sides_in_pairs(compare_args):
    root = Path("/r/results/ab")
    args = parsed(duet.compare_command(ab_settings(False, compare_args), root, root / "compare"))
    assert (args.command, args.duet, args.out) == ("compare", root / "duet", root / "compare")
    assert args.baseline is None and args.candidate is None and args.history is None
    if compare_args:
        assert (args.min_effect, args.metrics, args.seed) == (3.0, "p95", 7)


@pytest.mark.parametrize("compare_args", [(), ("--min-effect", "3", "--metrics", "p50,p95")])
def test_make_ab_with_a_budget_looks_then_compares_with_its_design(compare_args):
    root, s = Path("/r/results/ab"), ab_settings(False, compare_args)
    look = parsed(ab.look_command(s, root, (12, 4)))
    assert (look.command, look.baseline, look.candidate, look.out) == (
        "compare",
        root / "A",
        root / "B",
        None,
    )
    assert (look.sequential, look.first_look, look.look) == (12, 4, True)
    final = parsed(ab.sides_command(s, root, root / "compare", (12, 4)))
    assert (final.out, final.sequential, final.first_look, final.look) == (root / "compare", 12, 4, False)
    if compare_args:
        assert (look.min_effect, look.metrics) == (final.min_effect, final.metrics) == (3.0, "p50,p95")


@pytest.mark.parametrize("compare_args", [(), ("--metrics", "p95", "--names", "Aggregated")])
def test_a_duet_with_a_budget_looks_then_compares_with_its_design(compare_args):
    root, s = Path("/r/results/ab"), ab_settings(False, compare_args)
    look = parsed(duet.look_command(s, root, (12, 4)))
    assert (look.command, look.duet, look.out, look.baseline) == ("compare", root / "duet", None, None)
    assert (look.sequential, look.first_look, look.look) == (12, 4, True)
    final = parsed(duet.compare_command(s, root, root / "compare", (12, 4)))
    assert (final.duet, final.out, final.sequential, final.first_look, final.look) == (
        root / "duet", root / "compare", 12, 4, False,
    )  # fmt: skip
    if compare_args:
        assert (look.metrics, look.names) == (final.metrics, final.names) == ("p95", "Aggregated")


@pytest.mark.parametrize("compare_args", [(), ("--min-effect", "2", "--confidence", "90")])
def test_an_aa_run_measures_the_noise_floor(compare_args):
    root = Path("/r/results/ab")
    args = parsed(ab.sides_command(ab_settings(True, compare_args), root, root / "compare-2"))
    assert (args.command, args.a, args.b, args.out) == ("floor", root / "A", root / "B", root / "compare-2")
    if compare_args:
        assert (args.min_effect, args.confidence) == (2.0, 90.0)


@pytest.mark.parametrize(
    ("out", "title", "knee"),
    [
        (None, None, None),
        (OUT, "Swarmbench knee run-1", 250.0),
        (None, None, sweep.knee_bound({"KNEE_P99_MS": "0.25s"})),
    ],
)
def test_the_sweeps_and_the_knees_report(out, title, knee):
    folder = Path("/r/results/sweep-1")
    args = parsed(sweep.report_command(folder, out, title, knee_p99_ms=knee))
    assert (args.command, args.paths, args.out) == ("report", [str(folder)], out or folder / "report")
    assert args.title == (title or "Swarmbench sweep sweep-1")
    assert args.knee_p99_ms == (KNEE_P99_MS if knee is None else knee)  # the bound the runner read


@pytest.mark.parametrize("runs", [[RUN], [RUN, Path("/r/results/run-2")]])
def test_recorded_runs_are_added_to_the_history(runs):
    store = "postgresql://u@127.0.0.1/h"
    args = cli.parse_args(cmdline.history_add(runs, store))
    assert (args.command, args.action, args.runs, args.history) == ("history", "add", runs, store)
    assert args.branch is None and args.testbed is None  # each run.json's own


def test_compare_refuses_both_or_neither_side():
    with pytest.raises(ValueError):
        cmdline.compare(RUN, OUT)
    with pytest.raises(ValueError):
        cmdline.compare(RUN, OUT, baseline=RUN, history="")


def test_the_runner_builds_no_command_line_by_hand():
    """Every `swarmbench` the runner starts goes through a builder of core/cmdline.py (parsed above)."""
    for path in sorted((ROOT / "swarmbench" / "runner").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert '"-m", "swarmbench"' not in text, path
        uses = text.count("cmdline.PROGRAM")
        built = len(re.findall(r"\[\*cmdline\.PROGRAM, \*cmdline\.\w+\(", text))
        assert uses == built, f"{path.name}: a command line not built by core/cmdline.py"
