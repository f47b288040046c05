"""The comparison's commands, `swarmbench compare` and `swarmbench floor`: read both sides, compare,
write the outputs (the only comparison code that writes files).

`swarmbench compare BASELINE CANDIDATE`: exit 3 when any metric regressed (the thresholds' code: too
slow), 0 otherwise, 2 on bad input (one line naming the path; nothing written).

`swarmbench floor A B -o OUT`: an A/A run's noise floor (what `make ab` runs when B equals A).

Every run of both sides is one setting run 2 x REPEATS times, so together they calibrate the
run-to-run noise (noise.calibrate), written to A/compare-noise.json: a later `compare` against A
(or against one run in it) finds it there. Then A is compared with B as any two sides are (the
usual outputs in OUT), and per metric the noise floor is printed: the smallest change these
settings can tell from noise on this machine (FLOOR_METHOD)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from swarmbench.compare import noise, report, sequential, sides, stats
from swarmbench.compare.sides import CompareWarning, is_run, read_side
from swarmbench.core import exits
from swarmbench.core.atomic import write_atomic
from swarmbench.core.checks import AGGREGATED, COMPARE_METRICS, INCONCLUSIVE, REGRESSED
from swarmbench.core.exits import InputError, UsageError
from swarmbench.core.folder import create_run_dir
from swarmbench.history import comparable

PROG = "swarmbench compare"
"""The prefix of the comparison's warnings (its errors are the command line's: swarmbench/cli.py)."""


def options(args: argparse.Namespace) -> dict:
    """The comparison's options from the parsed command line; UsageError naming a bad one."""
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    bad = [m for m in metrics if m not in COMPARE_METRICS]
    if bad or not metrics:
        raise UsageError(
            f"--metrics: unknown {', '.join(bad) or '(none)'}; choose from {', '.join(COMPARE_METRICS)}"
        )
    check_levels(args)
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    return {
        "metrics": metrics,
        "names": names,
        "min_effect": args.min_effect / 100,
        "confidence": args.confidence / 100,
        "seed": args.seed,
    }


def check_levels(args: argparse.Namespace) -> None:
    """--confidence and --min-effect, in percent; UsageError when out of range."""
    if not 0 < args.confidence < 100:
        raise UsageError(f"--confidence: {args.confidence:g} is not between 0 and 100")
    if not 0 <= args.min_effect < 100:
        raise UsageError(f"--min-effect: {args.min_effect:g} is not between 0 and 100")


def check_noise_file(path: Path | None) -> None:
    """--noise, read now: a missing or malformed file must fail before `make ab`'s runs, not after."""
    if path is not None:
        try:
            noise.read(path)
        except InputError as e:
            raise UsageError(f"--noise: {e}") from None


def out_dir(chosen: Path | None, inputs: list[Path]) -> Path:
    """The output folder, checked before anything is computed: never inside a run folder, never
    one that already holds a comparison. Not created yet (bad input writes nothing): made() does,
    and gives the default name a -2, -3, ... suffix where another comparison took it."""
    out = chosen or Path("results") / f"compare-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    for parent in [out.resolve(), *out.resolve().parents]:
        if is_run(parent):
            raise InputError(out, f"inside the run folder {parent}; choose another -o")
    if chosen is not None and (out / "compare.json").exists():
        raise InputError(out, "already holds a comparison (nothing is written over)")
    return out


def made(out: Path, chosen: bool) -> Path:
    """OUT created, where the outputs go: a CHOSEN -o as it is (out_dir checked it holds no
    comparison); the default (results/compare-<UTC second>) created exclusively, as run folders
    are (core/folder.create_run_dir): two comparisons started in one second get compare-...Z and
    compare-...Z-2, never one folder."""
    if chosen:
        out.mkdir(parents=True, exist_ok=True)
        return out
    return create_run_dir(out.parent, out.name, explicit=False)


def calibrate(folder: Path, seed: int) -> int:
    runs = read_side(folder)
    if len(runs) < 2:
        raise InputError(folder, "calibration needs at least two identical complete runs")
    g, side, _ = sides.build(runs, runs[:1], [sides.names(runs, runs, None).common[-1]])
    found = noise.calibrate(side, g, seed)
    target = noise.write(
        folder, found, [r.path.name for r in runs], [str(r.manifest.started_at) for r in runs]
    )
    print(f"run-to-run noise of {len(runs)} runs -> {target}")
    print(", ".join(f"{m} {v:.1%}" for m, v in found.items()))
    return exits.OK


def compare_command(args: argparse.Namespace) -> int:
    """`swarmbench compare` (args: swarmbench/cli.py): the exit code, 3 when a metric regressed."""
    opts = options(args)
    seen: list[str] = []

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        seen.append(str(message))
        print(f"{PROG}: warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    warnings.simplefilter("always", CompareWarning)
    try:
        if args.calibrate:
            return calibrate(args.calibrate, args.seed)
        if args.history is not None:
            if args.sequential is not None:
                raise UsageError("--sequential pairs A and B runs; with --history use BUDGET on the run")
            return gate(args, opts)
        if args.look and args.sequential is None:
            raise UsageError("--look is one look of a sequential design: give --sequential K")
        if getattr(args, "load", None):
            raise UsageError(
                "--load: only with --history (the candidate's load; two sides' loads are in their run.json)"
            )
        if getattr(args, "duet", None) is not None:
            return duet(args, opts, seen)
        return compare(args, opts, seen)
    except InputError as e:
        raise UsageError(str(e)) from None


def compare(args: argparse.Namespace, opts: dict, seen: list[str]) -> int:
    base_path = args.baseline or (Path(os.environ["BASELINE"]) if os.environ.get("BASELINE") else None)
    cand_path = args.candidate or (Path(os.environ["CANDIDATE"]) if os.environ.get("CANDIDATE") else None)
    if base_path is None or cand_path is None:
        raise UsageError("give BASELINE and CANDIDATE (run folders or folders of repeats)")
    design = sequential_design(args, opts)
    if args.look:
        baseline, candidate = read_side(base_path), read_side(cand_path)
        found_names = sides.names(baseline, candidate, opts["names"])
        print(json.dumps(paired_look(baseline, candidate, found_names.common, opts, *design).to_json()))
        return exits.OK
    out = out_dir(args.out, [base_path, cand_path])
    baseline, candidate = read_side(base_path), read_side(cand_path)
    differ = sides.differences(baseline, candidate)
    refused = [d for d in differ if d.load]
    if refused and not args.allow_different:
        what = "; ".join(f"{d.setting} {d.baseline} vs {d.candidate}" for d in refused)
        raise InputError(
            cand_path, f"a different load than {base_path} ({what}); --allow-different to compare anyway"
        )
    found_names = sides.names(baseline, candidate, opts["names"])
    if len(found_names.common) <= (0 if opts["names"] else 1):
        raise InputError(cand_path, f"no request name in common with {base_path}")
    noise_file = args.noise or noise.find(base_path)
    calibration = noise.read(noise_file) if noise_file else noise.Calibration(dict(noise.DEFAULT_NOISE))
    level = calibration.noise
    g, a, b = sides.build(baseline, candidate, found_names.common)
    a.noise = b.noise = level
    a.noise_runs, b.noise_runs = calibration.pool_runs(baseline), calibration.pool_runs(candidate)
    found = stats.compare(
        a, b, g, opts["metrics"], opts["confidence"], opts["seed"], min_effect=opts["min_effect"]
    )
    rows = report.rows(found, opts["min_effect"])
    decision = None
    if design is not None:
        state = paired_look(baseline, candidate, found_names.common, opts, *design)
        rows, decision = sequential_rows(rows, state), state.to_json()
    outcome = report.Outcome(
        [str(r.path) for r in baseline],
        [str(r.path) for r in candidate],
        rows,
        found_names,
        differ,
        opts,
        level,
        str(noise_file) if noise_file else "default, docs/compare.md",
        not all(r.exact for r in baseline + candidate),
        seen,
        pooled(a, b),
        sequential=decision,
    )
    write(made(out, args.out is not None), outcome, g, a, b, args.fail_on_inconclusive)
    return exit_code(outcome, args.fail_on_inconclusive)


DUET_UNIT = "duet run"
"""What one pair of a sequential duet is (compare.json's `sequential.unit`; an interleaved design's
look has none: its pairs are pairs of runs)."""


def duet(args: argparse.Namespace, opts: dict, seen: list[str]) -> int:
    """`swarmbench compare --duet RUN`: the two sides of a duet run (or a folder of them: make ab's
    DUET=1) compared in pairs (compare/duet.py); the usual table, files and exit codes. Only the
    percentiles are judged (duet.DUET_METRICS says why). With --sequential K (DUET=1 and BUDGET):
    each duet run is one pair of the sequential design (d = ln(B/A) of its whole-run percentiles,
    duet.run_figures), the gated rows judged by its repeated CIs; --look: that look only, as JSON."""
    from swarmbench.compare import duet as paired
    from swarmbench.compare import duet_sides

    if args.baseline or args.candidate:
        raise UsageError("--duet takes one RUN (a duet run folder or a folder of them), no BASELINE")
    metrics = [m for m in opts["metrics"] if m in paired.DUET_METRICS]
    if not metrics:
        raise UsageError(f"--metrics: a duet judges {', '.join(paired.DUET_METRICS)} only")
    design = sequential_design(args, {**opts, "metrics": metrics})
    out = None if args.look else out_dir(args.out, [args.duet])
    runs = duet_sides.read_duet(args.duet)
    chosen, one_side = duet_sides.names(runs, opts["names"])
    if len(chosen) <= (0 if opts["names"] else 1):
        raise InputError(args.duet, "no request name that both sides have")
    g, a, b = duet_sides.build(runs, chosen)
    state = None
    if design is not None:
        state = look_at(paired.run_figures(a, b, g, metrics), chosen, metrics, opts, *design)
        if args.look:
            print(json.dumps({**state.to_json(), "unit": DUET_UNIT}))
            return exits.OK
    assert out is not None
    found = paired.compare(a, b, g, metrics, opts["confidence"], opts["seed"])
    notes, warned, cpu = duet_sides.cpu_lines(runs, duet_sides.read_targets(args.duet))
    for line in warned:
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    differences = {m: {n: f.difference for n, f in by_name.items()} for m, by_name in found.items()}
    pairs = {n: {m: found[m][n].to_json() for m in metrics} for n in chosen}
    rows = report.rows(differences, opts["min_effect"])
    if state is not None:
        rows = sequential_rows(rows, state)
    outcome = report.Outcome(
        [f"{r.path} [A]" for r in runs],
        [f"{r.path} [B]" for r in runs],
        rows,
        sides.Names(chosen, [], one_side),
        [],
        {**opts, "metrics": metrics},
        {},
        "not used: A and B are paired in time",
        False,
        seen + warned,
        method=paired.METHOD,
        notes=[f"note: {duet_sides.CONTENTION}", *notes, *(f"warning: {w}" for w in warned)],
        extra={"duet": {"pairs": pairs, "cpu": cpu}},
        sequential={**state.to_json(), "unit": DUET_UNIT} if state is not None else None,
    )
    write(made(out, args.out is not None), outcome, g, a, b, args.fail_on_inconclusive)
    return exit_code(outcome, args.fail_on_inconclusive)


# --- the sequential A/B's looks (make ab with BUDGET; compare/sequential.py) ----------------------------


def sequential_design(args: argparse.Namespace, opts: dict) -> tuple[int, int] | None:
    """(K, first look) of --sequential K --first-look F, checked (UsageError, one line); None without."""
    if args.sequential is None:
        return None
    k, first = args.sequential, args.first_look
    if not 2 <= first <= k <= sequential.MAX_PAIRS:
        raise UsageError(
            f"--sequential {k} --first-look {first}: need 2 <= first look <= K <= {sequential.MAX_PAIRS}"
        )
    if not [m for m in opts["metrics"] if m in sequential.METRICS]:
        raise UsageError(f"--sequential: judges {', '.join(sequential.METRICS)}; none in --metrics")
    return k, first


def paired_look(
    baseline: list, candidate: list, names: list[str], opts: dict, max_pairs: int, first: int
) -> sequential.Look:
    """The sequential design's look at these runs, paired by paired_runs (make ab's A B B A order
    makes a pair's runs neighbours in time), every (name,
    metric) of the gated metrics (the error rate is the final comparison's), the family's alpha 1 -
    confidence shared as the history gate shares its own (look_at)."""
    a, b = paired_runs(baseline, candidate)
    n = min(len(a), len(b))
    metrics = [m for m in opts["metrics"] if m in sequential.METRICS]
    g, side_a, side_b = sides.build(a[:n], b[:n], names)
    fig_a, fig_b = stats.per_run(side_a, g, metrics), stats.per_run(side_b, g, metrics)
    figures = {(name, m): (fig_a[m][name], fig_b[m][name]) for name in names for m in metrics}
    return look_at(figures, names, metrics, opts, max_pairs, first)


def look_at(
    figures: Mapping[tuple[str, str], tuple], names: list[str], metrics: list[str], opts: dict,
    max_pairs: int, first: int,
) -> sequential.Look:  # fmt: skip
    """The sequential look at FIGURES ((name, metric) -> (A's, B's figure per pair)): d = ln(B/A) per
    pair, A's level its geometric mean, each row at its share (history_stats.row_alphas) of the
    family's 1 - confidence. An interleaved pair is two runs beside each other in time, a duet's one
    duet run (duet_look)."""
    from swarmbench.compare.history_stats import row_alphas

    diffs = {key: sequential.log_ratios(fa, fb) for key, (fa, fb) in figures.items()}
    levels = {key: sequential.level(fa) for key, (fa, _) in figures.items()}
    alphas = row_alphas(names, metrics, 1 - opts["confidence"])
    return sequential.look(
        diffs,
        max_pairs=max_pairs,
        alphas=alphas,
        min_effect=opts["min_effect"],
        baselines=levels,
        first=first,
    )


PAIRED_RUN = re.compile(r"^[ab](\d+)$")
"""make ab's run folders: a1, b1, b2, a2, ... (runner/ab.py schedule): a<k> and b<k> are pair k."""


def paired_runs(baseline: list, candidate: list) -> tuple[list, list]:
    """The runs of both sides in pair order: make ab's a<k> with b<k> (a pair whose other run
    failed is left out, not paired with a later run), else the i-th run of each side by start."""
    numbers = [PAIRED_RUN.match(r.path.name) for r in baseline + candidate]
    if all(numbers):
        a = {int(PAIRED_RUN.match(r.path.name).group(1)): r for r in baseline}
        b = {int(PAIRED_RUN.match(r.path.name).group(1)): r for r in candidate}
        both = sorted(set(a) & set(b))
        return [a[k] for k in both], [b[k] for k in both]
    by_start = sorted(baseline, key=lambda r: str(r.manifest.started_at))
    return by_start, sorted(candidate, key=lambda r: str(r.manifest.started_at))


def sequential_rows(rows: list[report.Row], state: sequential.Look) -> list[report.Row]:
    """ROWS with each gated row's estimate, CI and verdict the sequential design's: the pairs' mean
    change (geometric) and its repeated CI, relative, around the row's baseline value, and the
    verdict on it. A fixed-design CI taken after the data chose when to stop is too narrow; the
    repeated CI holds at whichever look it stopped."""
    by_key = {(r.name, r.metric): r for r in state.rows}
    out = []
    for row in rows:
        seq = by_key.get((row.name, row.metric))
        if seq is None or not state.looked:
            out.append(row)
            continue
        b = row.d.baseline
        change = math.expm1(seq.mean)
        d = stats.Difference(b, b * (1 + change), b * change, b * seq.low, b * seq.high)
        out.append(report.Row(row.name, row.metric, d, seq.verdict, row.band))
    return out


REQUIRE_BASELINE_ENV = "SWARMBENCH_REQUIRE_BASELINE"
"""`--require-baseline` for a gate the runner starts (BASELINE=history: `compare --history` runs in a
process of its own and inherits it); 1 to require, unset or 0 not."""


def require_baseline(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> bool:
    """--require-baseline, else REQUIRE_BASELINE_ENV; UsageError on a value that is neither."""
    if getattr(args, "require_baseline", False):
        return True
    value = env.get(REQUIRE_BASELINE_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise UsageError(f"{REQUIRE_BASELINE_ENV}={value!r}: expected 1 or 0")


def gate(args: argparse.Namespace, opts: dict) -> int:
    """`swarmbench compare --history [STORE] RUN`: RUN (a run folder, or a folder of repeats)
    against the history's comparable runs (compare/trend.py gate_outcome); the same table, verdicts,
    files and exit codes as a comparison, the gate's method in its header. Too few comparable runs:
    no_verdict. --load KEY=VALUE: the load of a RUN without run.json (`history add`'s option)."""
    from swarmbench.compare import trend
    from swarmbench.history.commands import given_load, opened, store_spec
    from swarmbench.history.record import FolderError, read_run

    run_path = args.baseline or args.candidate
    if run_path is None or (args.baseline and args.candidate):
        raise UsageError("--history takes one RUN (a run folder or a folder of repeats), the candidate")
    required = require_baseline(args)
    load = given_load(getattr(args, "load", None))  # a candidate without run.json (as `history add`)
    out = out_dir(args.out, [run_path])
    try:
        runs = [read_run(folder, load=load) for folder in sides.run_folders(run_path)]
    except FolderError as e:
        raise UsageError(str(e)) from None
    near = None
    with opened(store_spec(args.history)) as store:
        try:
            # Only a change a person accepted (`history accept`) starts a new baseline.
            accepted = store.accepted(runs[0].fingerprint, runs[0].host, runs[0].testbed, args.branch)
            outcome, found = trend.gate_outcome(
                store, runs, branch=args.branch, metrics=opts["metrics"], wanted=opts["names"],
                min_effect=opts["min_effect"], confidence=opts["confidence"], accepted=accepted,
            )  # fmt: skip
        except ValueError as e:
            raise UsageError(f"{run_path}: {e}") from None
        if outcome is None and found == 0:
            first = runs[0]
            near = comparable.nearest(
                store.configurations(), first.load, first.host, first.testbed, args.branch
            )
        where = store.where
    if outcome is None:
        return no_verdict(args, made(out, args.out is not None), runs, where, found, near, required)
    write(made(out, args.out is not None), outcome, None, None, None, args.fail_on_inconclusive)
    return exit_code(outcome, args.fail_on_inconclusive)


def no_verdict(
    args: argparse.Namespace,
    out: Path,
    runs: list,
    where: str,
    found: int,
    near: comparable.Nearest | None,
    required: bool,
) -> int:
    """The gate without a verdict: fewer comparable runs than it needs. Said on stderr and kept in
    OUT/compare.txt (what a CI job's summary shows), OUT/compare.json and OUT/compare.html (a page
    saying so). No comparable run at all is a loud warning naming the nearest configuration and
    what differs (comparability is off: a changed load, host or testbed, or another branch). Exit
    0, or 3 with --require-baseline (a gate that must judge: a pull request once main has runs)."""
    from swarmbench.compare import trend

    run_path = args.baseline or args.candidate
    first = runs[0]
    code = exits.THRESHOLDS_BROKEN if required else exits.OK
    then = "exit 3 (--require-baseline)" if required else "exit 0; --require-baseline makes it exit 3"
    if found:
        lines = [
            f"history {where}: {found} comparable run(s) of {args.branch} before {run_path} "
            f"(the gate needs {trend.GATE_MIN_RUNS}): no verdict; record main's runs with --record"
            + (f"; {then}" if required else "")
        ]
    else:
        lines = [
            f"warning: NO COMPARABLE RUN: history {where} holds no complete run of {args.branch} before "
            f"{run_path} with its load (fingerprint {first.fingerprint}), host {first.host or '-'} and "
            f"testbed {first.testbed}: the gate cannot judge it, no verdict, {then}",
            f"warning: {near.text()}" if near else f"warning: history {where} holds no runs at all",
        ]
    for line in lines:
        print(f"{PROG}: {line}", file=sys.stderr)
    write_atomic(out / "compare.txt", "\n".join(lines) + "\n")
    said = {
        "verdict": None,
        "history": where,
        "branch": args.branch,
        "candidate": [r.run_id for r in runs],
        "identity": {"fingerprint": first.fingerprint, "host": first.host, "testbed": first.testbed},
        "comparable_runs": found,
        "gate_needs": trend.GATE_MIN_RUNS,
        "require_baseline": required,
        "exit_code": code,
        "warning": lines,
        "nearest": near.to_json() if near else None,
    }
    write_atomic(out / "compare.json", json.dumps(said, indent=2) + "\n")
    write_atomic(out / "compare.html", report.no_verdict_page(said))
    return code


def pooled(a: stats.Side, b: stats.Side) -> dict[str, int]:
    """The calibration's runs each side of repeats pools its spread with (stats.pooled; 0: none)."""
    return {side: s.noise_runs if len(s.runs) > 1 else 0 for side, s in (("baseline", a), ("candidate", b))}


def write(out: Path, outcome: report.Outcome, g, a, b, fail_on_inconclusive: bool) -> None:
    """The table printed, and OUT's files, compare.html among them: the sides' charts when G (the
    sides' grid) is given, else (the gate against history) its baseline runs' (report.gate_page)."""
    text = report.table(outcome)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "compare.txt", text + "\n")
    write_atomic(out / "compare.json", json.dumps(report.to_json(outcome), indent=2) + "\n")
    write_atomic(out / "junit.xml", report.junit(outcome, fail_on_inconclusive))
    page = report.page(outcome, g, a, b) if g is not None else report.gate_page(outcome)
    write_atomic(out / "compare.html", page)
    files = ["compare.txt", "compare.json", "junit.xml", "compare.html"]
    print(f"-> {out}/ ({', '.join(files)})")


def exit_code(outcome: report.Outcome, fail_on_inconclusive: bool) -> int:
    if outcome.count(REGRESSED):
        return exits.THRESHOLDS_BROKEN
    if outcome.count(INCONCLUSIVE):
        print(
            f"{PROG}: warning: {outcome.count(INCONCLUSIVE)} inconclusive (more runs would tell)",
            file=sys.stderr,
        )
        if fail_on_inconclusive:
            return exits.THRESHOLDS_BROKEN
    return exits.OK


# --- swarmbench floor: an A/A run's noise floor ---------------------------------------------------

FLOOR_PROG = "swarmbench ab"

FLOOR_METHOD = (
    "smallest detectable change = min-effect band + half the width of the A/A comparison's CI "
    "(relative to the value): a change that large has its CI just clear the band, so it is called "
    "about half the time; one more half-width and it is called almost always"
)
FLOOR_JSON = "noise-floor.json"


def half_widths(found: dict[str, dict[str, stats.Difference]]) -> dict[str, float]:
    """Half the CI width of each metric's Aggregated difference, relative to the baseline value."""
    out = {}
    for metric, by_name in found.items():
        d = by_name[AGGREGATED]
        out[metric] = (d.high - d.low) / 2 / abs(d.baseline) if d.baseline else math.nan
    return out


def floors(a: Path, b: Path, confidence: float, seed: int, min_effect: float) -> tuple[dict, dict, dict]:
    """(noise, floors, found): the calibrated noise of all runs; per metric {"value", "noise",
    "repeats", "single"} (floors without the band); the A vs B comparison itself. Both comparisons
    judge every request name, as a comparison of such runs would (its rows' level, stats.compare)."""
    side_a, side_b = read_side(a), read_side(b)
    runs = side_a + side_b
    if len(runs) < 2:
        raise InputError(a, "a noise floor needs at least two complete runs (A and B together)")
    everyone, all_runs, _ = sides.build(runs, runs[:1], [AGGREGATED])
    level = noise.calibrate(all_runs, everyone, seed)
    noise.write(
        a,
        level,
        [f"{r.path.parent.name}/{r.path.name}" for r in runs],
        [str(r.manifest.started_at) for r in runs],
    )
    names = sides.names(side_a, side_b, None)
    g, sa, sb = sides.build(side_a, side_b, names.common)
    sa.noise = sb.noise = level
    found = stats.compare(sa, sb, g, list(COMPARE_METRICS), confidence, seed, min_effect=min_effect)
    g1, one_a, one_b = sides.build(side_a[:1], side_b[:1], names.common)
    one_a.noise = one_b.noise = level
    single = half_widths(
        stats.compare(one_a, one_b, g1, list(COMPARE_METRICS), confidence, seed, min_effect=min_effect)
    )
    repeats = half_widths(found)
    table = {
        m: {
            "value": found[m][AGGREGATED].baseline,
            "noise": level[m],
            "repeats": repeats[m],
            "single": single[m],
        }
        for m in COMPARE_METRICS
    }
    return level, table, {"found": found, "names": names, "grid": g, "sides": (side_a, side_b, sa, sb)}


def floor_text(table: dict, min_effect: float, repeats: tuple[int, int]) -> str:
    """The noise-floor table: per metric its value, run-to-run noise and smallest detectable change
    with this A/A's repeats per side and with one run per side."""
    head = (
        "metric",
        "value",
        "run-to-run SD",
        f"floor, {repeats[0]} vs {repeats[1]} runs",
        "floor, 1 vs 1 run",
    )
    lines = [head]
    for m, row in table.items():
        unit = report.UNITS[m]
        value = report.shown(m, row["value"])
        lines.append(
            (
                m,
                f"{value} {unit}",
                f"{row['noise']:.1%}",
                _pct(min_effect + row["repeats"]),
                _pct(min_effect + row["single"]),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    rows = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    return "\n".join(
        [
            "noise floor (A/A): the smallest change these settings can detect on this machine",
            *rows,
            f"method: {FLOOR_METHOD}; band {min_effect:.0%}",
        ]
    )


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1%}"


def floor_command(args: argparse.Namespace) -> int:
    """`swarmbench floor A B -o OUT` (args: swarmbench/cli.py): the comparison's exit code."""
    check_levels(args)
    min_effect, confidence = args.min_effect / 100, args.confidence / 100
    try:
        out = out_dir(args.out, [args.a, args.b])
        level, table, c = floors(args.a, args.b, confidence, args.seed, min_effect)
        out = made(out, True)  # floor's -o is required
    except InputError as e:
        raise UsageError(str(e)) from None
    side_a, side_b, sa, sb = c["sides"]
    opts = {
        "metrics": list(COMPARE_METRICS),
        "names": None,
        "min_effect": min_effect,
        "confidence": confidence,
    }
    outcome = report.Outcome(
        [str(r.path) for r in side_a],
        [str(r.path) for r in side_b],
        report.rows(c["found"], min_effect),
        c["names"],
        [],
        {**opts, "seed": args.seed},
        level,
        f"calibrated from these {len(side_a) + len(side_b)} runs, {args.a / noise.NOISE_JSON}",
        not all(r.exact for r in side_a + side_b),
    )
    write(out, outcome, c["grid"], sa, sb, False)
    text = floor_text(table, min_effect, (len(side_a), len(side_b)))
    print("\n" + text)
    write_atomic(out / "noise-floor.txt", text + "\n")
    floor_json = {
        "method": FLOOR_METHOD,
        "min_effect": min_effect,
        "noise_file": str(args.a / noise.NOISE_JSON),
    }
    floor_json["metrics"] = {
        m: {
            "value": report._num(r["value"]),
            "run_to_run_sd": r["noise"],
            "floor_repeats": report._num(min_effect + r["repeats"]),
            "floor_single": report._num(min_effect + r["single"]),
        }
        for m, r in table.items()
    }
    write_atomic(out / FLOOR_JSON, json.dumps(floor_json, indent=2) + "\n")
    print(f"run-to-run noise -> {args.a / noise.NOISE_JSON} (later compares against {args.a} use it)")
    if outcome.count(REGRESSED):
        print(
            f"{FLOOR_PROG}: warning: identical settings were called regressed on {outcome.count(REGRESSED)} "
            "metric(s): this machine's noise is larger than a CI of these runs shows; use more repeats",
            file=sys.stderr,
        )
    return exits.OK
