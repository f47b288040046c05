"""Comparing the runs the runner makes: `make ab` (A and B interleaved, then compared) and
`--baseline DIR` (one headless run, then compared with a saved baseline).

The comparison is `swarmbench compare` (or `swarmbench floor` for A/A) in a process of its own, the
same interpreter (sys.executable): this module stays standard library only, and a failing
comparison cannot take the runs' record with it. swarmbench/cli.py checks first that the
comparison's packages are there (numpy, hdrhistogram: `pip install 'swarmbench[compare]'`).

`--baseline DIR` on headless and staging runs (`BASELINE=DIR make headless|staging`): after the run,
compare it with a saved baseline (a run folder or a folder of repeats) and fail the build on a
regression (exit 3). The run folder itself is kept, whatever the verdict. The comparison goes NEXT
TO the run folder, in results/<run-id>-vs-baseline/, not inside it: a run folder holds what the
run wrote and nothing else, so it can itself be the next baseline (compare refuses an output
folder inside a run for that reason), and a folder of repeats never mistakes the comparison for a
run (it has no run.json).

`swarmbench ab` (make ab): A and B run interleaved against the same target, then compared.

- A and B differ by environment (`A="ALBUMS_STORE=mutex" B="ALBUMS_STORE=sharded"`: NAME=value
  words, the target's settings) or by host (`A_HOST`, `B_HOST`: two staging deploys).
- Order A B B A A B ... (REPEATS runs per side): each side's runs spread over the same stretch of
  time, so a machine that drifts (a neighbour's build, thermal throttling) hits both sides alike.
- A/A (B not given, or equal to A): the runs measure the noise floor. The comparison package
  calibrates the run-to-run noise from every run, writes it with the A side (compare-noise.json:
  later compares against that baseline use it) and prints the smallest change these settings can
  detect here, per metric.
- Compose by default (each run `swarmbench headless`, `--staging` for hosts); LOCAL=1 runs the
  sweep's local processes (runner/points.py LocalRunner: the Go target built from target/, a
  master and WORKERS workers on 127.0.0.1).
- Folders: results/<AB_ID or ab-<UTC time>>/{A,B}/<run folders>, the comparison in .../compare/,
  ab.json (the settings and every run's status, the sweep's record) beside them.
- Resume: rerunning with the same AB_ID and settings runs only what is not done, then compares
  (into compare-2/, ... when a comparison is there already); other settings are refused.
- COMPARE_ARGS: options for the comparison (`--min-effect 3 --metrics p50,p95`), checked first by
  the comparison's own parser (the check the command line passes in: cli.check_compare_args).
- Exit code: the comparison's (3 regressed, 0 otherwise, 2 bad input); 1 when a run failed and
  nothing regressed; 130 on Ctrl-C. Bad settings: one line, exit 2, before anything runs.
- BUDGET (a duration): the sequential design: pairs until every gated metric is decisive or the
  budget is spent, a look after each (run_sequential); without it, REPEATS runs a side as above.
  With BASELINE=history, BUDGET makes the gate buy candidate runs (gate_until_decided).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from swarmbench.core import cmdline, exits
from swarmbench.core.exits import InputError, UsageError
from swarmbench.core.folder import AB_JSON, LOGS_DIR, MANIFEST, create_run_dir, is_folder_name
from swarmbench.core.loadspec import STORES, STRONG
from swarmbench.core.manifest import git_commit
from swarmbench.core.sweepstate import SweepPoint, SweepState, take_recorded
from swarmbench.runner import settings as S
from swarmbench.runner.points import ComposeRunner, LocalRunner, PointRunner, SweepSettings
from swarmbench.runner.settings import Headless, display, find_checkout, record_runs, results_dir
from swarmbench.runner.sweep import Progress, fmt_duration, point_log
from swarmbench.runner.terminal import run_folders

# --- --baseline: one run against a saved baseline ----------------------------------------------------

SUFFIX = "-vs-baseline"
"""The comparison folder's name: the run's folder name plus this, beside it."""

HISTORY = "history"
"""BASELINE=history: the run is gated against the run history (`swarmbench compare --history RUN`:
the comparable runs of main before it), not against a folder."""

HISTORY_SUFFIX = "-vs-history"
"""The gate's folder name beside the run, as SUFFIX for a folder baseline."""


def baseline_path(cli_value: str | None, env: Mapping[str, str]) -> Path | str | None:
    """--baseline, else BASELINE; checked now (UsageError, one line), before anything runs: a
    folder that is a run folder (run.json) or holds run folders, or HISTORY."""
    value = cli_value or env.get("BASELINE", "").strip()
    if not value:
        return None
    if value == HISTORY:
        return HISTORY
    path = Path(value)
    if not path.is_dir():
        raise UsageError(f"BASELINE={value!r} is not a folder")
    if not (path / MANIFEST).is_file() and not any(
        p.is_dir() and (p / MANIFEST).is_file() for p in path.iterdir()
    ):
        raise UsageError(f"BASELINE={value!r} is not a run folder (no {MANIFEST}) or a folder of run folders")
    return path.resolve()


def out_dir(run_dir: Path, baseline: Path | str | None = None) -> Path:
    return run_dir.parent / f"{run_dir.name}{HISTORY_SUFFIX if baseline == HISTORY else SUFFIX}"


def compare_with_baseline(
    run_dir: Path, baseline: Path | str, run_code: int = exits.OK, store: str | None = None
) -> int:
    """Compare the finished RUN_DIR with BASELINE into out_dir(RUN_DIR); the build's exit code: the
    run's own when it is not 0 (a failed or broken run is reported as such; its numbers are not a
    measurement to judge), else the comparison's (3 regressed, 0, 2 bad input). STORE: the history
    store of BASELINE=history (None: the comparison's own default)."""
    if run_code not in exits.MEASURED:
        print(
            f"swarmbench: the run exited {run_code}: not compared with {display(baseline)}", file=sys.stderr
        )
        return run_code
    out = out_dir(run_dir, baseline)
    what = "the run history" if baseline == HISTORY else display(Path(baseline))
    print(
        f"swarmbench: compare {display(run_dir)} with {what} -> {display(out)}/",
        file=sys.stderr,
        flush=True,
    )
    code = subprocess.run(baseline_command(run_dir, baseline, store), cwd=find_checkout()).returncode
    return run_code or code


def baseline_command(run_dir: Path, baseline: Path | str, store: str | None = None) -> list[str]:
    """`swarmbench compare BASELINE RUN_DIR -o OUT`, or against the run history (STORE, None: the
    comparison's default) `swarmbench compare RUN_DIR -o OUT --history [STORE]`."""
    out = out_dir(run_dir, baseline)
    if baseline == HISTORY:
        return [*cmdline.PROGRAM, *cmdline.compare(run_dir, out, history=store or "")]
    return [*cmdline.PROGRAM, *cmdline.compare(run_dir, out, baseline=Path(baseline))]


def run_with_baseline(
    run: Callable[[Headless], int],
    chosen: Headless,
    baseline: Path | str | None,
    record: str | None = None,
    store: str | None = None,
) -> int:
    """RUN (compose or swarm) the headless run, then compare the folder it made with BASELINE (STORE:
    the history store of BASELINE=history), then (RECORD: a history store) add it to the history:
    after the gate, so a run is never its own baseline."""
    budget = gate_budget(chosen.environ, baseline)
    if budget is not None:
        return gate_until_decided(run, chosen, budget, record, store)
    if baseline is None and record is None:
        return run(chosen)
    results = results_dir(chosen.environ)
    before = run_folders(results)
    code = run(chosen)
    made = sorted(run_folders(results) - before)
    if not made:
        print("swarmbench: no run folder was written: nothing compared or recorded", file=sys.stderr)
        return code or exits.RUN_FAILED
    if baseline is not None:
        code = compare_with_baseline(made[-1].parent, baseline, code, store)
    if record is not None:
        record_runs([m.parent for m in made], record)
    return code


# --- BASELINE=history with BUDGET: the gate buys runs ------------------------------------------------
#
# The candidate run is repeated until the gate (`swarmbench compare RUNS --history`, which takes a
# folder of repeats) is decisive for every row, or the budget is spent. K, the runs the budget buys,
# is fixed after the first run from its time; each look gates the runs so far at a whole-gate level
# of alpha / K (Bonferroni over the K looks; inside a look, the gate's own weighted Bonferroni over
# its rows), so the sequence as a whole fails an unchanged service at most alpha of the time.

GATE_ALPHA = 0.05
"""The whole sequence's false-alarm rate (the gate's own default: --confidence 95)."""

MAX_GATE_RUNS = 20
"""The most candidate runs one gate sequence plans: alpha / K shrinks with K, so each look's
intervals widen (t quantile at 0.05/20/rows), and the gate reads only its window of past runs."""

GATE_FOLDER = "gate-"
"""The candidate runs of a gate sequence go into results/gate-<UTC second>/ (a folder of repeats the
gate reads as one candidate); its comparisons into results/gate-<...>-vs-history/ (look-1, ... and
the last look's verdict itself)."""


def gate_budget(env: Mapping[str, str], baseline: Path | str | None) -> int | None:
    """BUDGET (seconds) when BASELINE=history; None without BUDGET or without a baseline (a plain
    run ignores it). UsageError, before anything runs, for a bad value or a folder baseline."""
    value = env.get("BUDGET", "").strip()
    if not value or baseline is None:
        return None
    seconds = S.timespan_seconds("BUDGET", value)
    if baseline != HISTORY:
        raise UsageError(
            f"BUDGET={value!r} buys runs for BASELINE=history and make ab; a saved BASELINE folder is "
            "compared with one run (unset BUDGET)"
        )
    return seconds


def gate_until_decided(
    run: Callable[[Headless], int], chosen: Headless, budget: int, record: str | None, store: str | None
) -> int:
    """Repeat the candidate run into results/gate-<UTC>/ and gate the runs so far after each, at a
    whole-gate alpha of GATE_ALPHA / K, until a row is regressed or none is inconclusive (or the
    gate has no verdict), or K runs are done or the budget is spent; the last look's comparison is
    written again beside the folder, as a single run's is. The exit code as run_with_baseline's."""
    results = results_dir(chosen.environ)
    folder = create_run_dir(results, f"{GATE_FOLDER}{datetime.now(UTC):%Y%m%dT%H%M%SZ}", explicit=False)
    each = replace(chosen, environ={**chosen.environ, "SWARMBENCH_RESULTS": str(folder)})
    looks_dir = out_dir(folder, HISTORY)
    t0, k, planned, made, code = time.monotonic(), 0, MAX_GATE_RUNS, [], exits.OK
    while True:
        k += 1
        started = time.monotonic()
        before = run_folders(folder)
        code = run(each)
        new = sorted(run_folders(folder) - before)
        if not new or code not in exits.MEASURED:
            why = "no run folder was written" if not new else f"the run exited {code}"
            print(f"swarmbench: {why}: the gate sequence stops", file=sys.stderr)
            if not made:
                return code or exits.RUN_FAILED
            code = code or exits.RUN_FAILED
            break
        made += [m.parent for m in new]
        if k == 1:
            planned = max(1, min(MAX_GATE_RUNS, math.floor(budget / (time.monotonic() - started))))
            level = 1 - GATE_ALPHA / planned
            print(f"swarmbench: a run takes {fmt_duration(time.monotonic() - started)}: at most "
                  f"{planned} runs in BUDGET={fmt_duration(budget)}, each look's gate at {level:.2%}",
                  file=sys.stderr)  # fmt: skip
        found = gate_look(folder, looks_dir / f"look-{k}", planned, store)
        counts = (found or {}).get("verdicts") or {}
        # Decided: no row inconclusive, or a row regressed (the gate fails whatever later runs show:
        # each look's intervals hold at its alpha / K, all K looks together at alpha).
        left = 0 if counts.get("regressed") else counts.get("inconclusive", 0)
        spent = time.monotonic() - t0
        said = "no verdict" if not counts else f"{left} inconclusive" if left else "decided"
        print(f"swarmbench: gate look {k}/{planned} ({k} run(s), {fmt_duration(spent)} spent): {said}",
              file=sys.stderr, flush=True)  # fmt: skip
        if not counts or not left or k >= planned or spent + spent / k > budget * BUDGET_SLACK:
            break
    final = subprocess.run(gate_look_command(folder, looks_dir, planned, store), cwd=find_checkout())
    if record is not None:
        record_runs(made, record)  # after the gate: a run is never its own baseline
    return code or final.returncode  # the runs' own code when not 0, as compare_with_baseline


def gate_look_command(folder: Path, out: Path, planned: int, store: str | None) -> list[str]:
    """`swarmbench compare FOLDER -o OUT --confidence C --history [STORE]`, C = 1 - GATE_ALPHA / PLANNED
    (in percent): the whole gate's level of one look of a sequence of PLANNED."""
    level = ("--confidence", f"{100 * (1 - GATE_ALPHA / planned):.6g}")
    return [*cmdline.PROGRAM, *cmdline.compare(folder, out, history=store or "", options=level)]


def gate_look(folder: Path, out: Path, planned: int, store: str | None) -> dict | None:
    """One look: the gate of the runs in FOLDER so far into OUT, its output kept in OUT (quiet here);
    its compare.json (None when it wrote none)."""
    res = subprocess.run(
        gate_look_command(folder, out, planned, store), cwd=find_checkout(), capture_output=True, text=True
    )
    if res.returncode not in (exits.OK, exits.THRESHOLDS_BROKEN):
        sys.stderr.write(res.stderr)
    try:
        return json.loads((out / "compare.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# --- make ab: A and B interleaved -----------------------------------------------------------------

AB_REPEATS = 3
"""Runs per side: the fewest for which the bootstrap can resample runs (2 leave 2 possible draws
of a side's runs' mean, 3 leave 10) -- issue 19's goals are stated for 3 x 20 s."""
AB_RUN_TIME = "20s"
"""Each run's length: 20 one-second windows give the within-run block bootstrap 4 blocks of 5 s."""
AB_USERS = 10
"""Users per run when LOCUST_USERS is unset: a light load, so the comparison measures the system
under test rather than a saturated load generator on a small machine."""
AB_USER_CLASS = "AlbumsFastHttpUser"
"""The class when LOCUST_USER_CLASSES is unset (headless runs default to AlbumsHttpUser). A
comparison is as sharp as its runs are repeatable, and a client's own CPU per request is latency
it adds and varies from run to run: 8 identical 20 s runs here (8 users, `constant 0.02`,
ALBUMS_DELAY=10ms) had a run-to-run p95 SD of 2.8 % with HttpUser, 1.3 % with FastHttpUser,
which made a 10 % p95 slowdown called `regressed` in 21 % vs 95 % of 3-against-3 draws
(bench/bench_compare.py). Both sides always run the same class, whichever it is."""

SIDES = ("A", "B")
ORDER = ("A", "B", "B", "A")
"""The interleaving, repeated: A B B A A B B A ... (each side equally often first in a pair)."""

_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
LOAD_PREFIX = "LOCUST_"
"""A/B set the system under test; Locust's settings are the load, the same on both sides (compare
refuses a different load), so they are set once, outside A and B."""


@dataclass(frozen=True)
class AbSettings:
    ab_id: str
    sides: dict[str, dict[str, str]]  # side -> its environment assignments
    hosts: dict[str, str | None]  # side -> its host (None: the bundled target)
    repeats: int
    run_time: str
    users: int
    workers: int
    user_class: str
    local: bool
    aa: bool = field(default=False)
    compare_args: tuple[str, ...] = ()
    budget: int | None = None  # BUDGET in seconds: the sequential design (None: REPEATS runs a side)


def assignments(name: str, value: str) -> dict[str, str]:
    """A="ALBUMS_STORE=mutex ALBUMS_DELAY=2ms": NAME=value words, split like a shell would (never
    run by one); UsageError naming the variable and the word."""
    try:
        words = shlex.split(value)
    except ValueError as e:
        raise UsageError(f"{name}={value!r}: {e}") from None
    out: dict[str, str] = {}
    for word in words:
        key, eq, val = word.partition("=")
        if not eq or not _NAME.match(key):
            raise UsageError(f'{name}: {word!r} is not NAME=value (e.g. {name}="ALBUMS_STORE=mutex")')
        if key.startswith(LOAD_PREFIX):
            raise UsageError(
                f"{name}: {key} is the load, the same for both sides: set it outside {name} "
                "(A and B set the system under test, e.g. ALBUMS_STORE)"
            )
        if key in out:
            raise UsageError(f"{name}: {key} is set twice")
        if key == "ALBUMS_STORE" and val not in STORES:
            raise UsageError(f"{name}: ALBUMS_STORE={val!r} is not one of {', '.join(STORES)}")
        out[key] = val
    return out


def side_hosts(env: Mapping[str, str], local: bool) -> dict[str, str | None]:
    a, b = env.get("A_HOST", "").strip() or None, env.get("B_HOST", "").strip() or None
    if b and not a:
        raise UsageError("B_HOST without A_HOST: give both hosts (or only A_HOST for an A/A run)")
    for name, value in (("A_HOST", a), ("B_HOST", b)):
        if value:
            S.host(name, value)
            if not local:
                S.container_host(name, value)
    return {"A": a, "B": b or a}


def default_ab_id() -> str:
    """`ab-<UTC second>`: the A/B run's folder when AB_ID is not given (run_ab adds -2, -3, ...)."""
    return f"ab-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"


def ab_settings(env: Mapping[str, str], check: CompareArgsCheck, paired_aa: bool = False) -> AbSettings:
    """Every setting of an A/B run, validated (UsageError, one line) before anything starts.
    PAIRED_AA: an A/A is compared in pairs like any A/B (a duet), so it may take BUDGET too."""
    local = S.flag(env, "LOCAL")
    a = assignments("A", env.get("A", ""))
    b = assignments("B", env["B"]) if env.get("B", "").strip() else dict(a)
    hosts = side_hosts(env, local)
    if hosts["A"] and (a or b):
        raise UsageError("A/B (environment) and A_HOST/B_HOST (hosts): choose one")
    ab_id = env.get("AB_ID") or default_ab_id()
    if not is_folder_name(ab_id):
        raise UsageError(f"AB_ID={ab_id!r} is not a folder name (letters, digits, . _ + -)")
    root = results_dir(env) / ab_id
    if env.get("AB_ID") and root.exists() and not (root / AB_JSON).is_file():
        raise UsageError(
            f"{display(root)} exists and holds no {AB_JSON} to resume; choose another AB_ID "
            "(nothing is overwritten)"
        )
    run_time = env.get("RUN_TIME") or env.get("LOCUST_RUN_TIME") or AB_RUN_TIME
    S.timespan_seconds("RUN_TIME", run_time)
    classes = S.user_classes("LOCUST_USER_CLASSES", env.get("LOCUST_USER_CLASSES") or AB_USER_CLASS)
    S.check_arrival(env)
    aa = a == b and hosts["A"] == hosts["B"]
    budget = env.get("BUDGET", "").strip()
    seconds = S.timespan_seconds("BUDGET", budget) if budget else None
    if seconds and aa and not paired_aa:
        raise UsageError(
            "BUDGET with an A/A run: the noise floor takes REPEATS runs a side; give B, or drop BUDGET"
        )
    words = compare_args(env.get("COMPARE_ARGS", ""), aa, check)
    return AbSettings(
        ab_id=ab_id,
        sides={"A": a, "B": b},
        hosts=hosts,
        repeats=S.positive_int("REPEATS", env.get("REPEATS") or str(AB_REPEATS)),
        run_time=run_time,
        users=S.positive_int("LOCUST_USERS", env.get("LOCUST_USERS") or str(AB_USERS)),
        workers=S.positive_int("WORKERS", env.get("WORKERS") or "1"),
        user_class=" ".join(classes),
        local=local,
        aa=aa,
        compare_args=tuple(words),
        budget=seconds,
    )


CompareArgsCheck = Callable[[list[str], bool], None]
"""The comparison's own check of COMPARE_ARGS words (A/A: True): UsageError saying what is wrong."""


def compare_args(value: str, aa: bool, check: CompareArgsCheck) -> list[str]:
    """COMPARE_ARGS: options for the comparison after the runs (`--min-effect 3 --metrics p50,p95`;
    for A/A the noise floor's --min-effect, --confidence, --seed), checked now by the comparison's
    own parser (CHECK), so a typo fails before the runs rather than after them."""
    try:
        words = shlex.split(value)
    except ValueError as e:
        raise UsageError(f"COMPARE_ARGS={value!r}: {e}") from None
    if not words:
        return []
    try:
        check(words, aa)
    except UsageError as e:
        why = str(e)
        if aa and "unrecognized" in why:
            why += "; an A/A run's noise floor takes --min-effect, --confidence, --seed"
        raise UsageError(f"COMPARE_ARGS={value!r}: {why}") from None
    return words


def identity(s: AbSettings, env: Mapping[str, str]) -> dict:
    """What must match for a rerun to resume an A/B run: both sides, the load (every LOCUST_*
    setting, which compare would refuse to differ) and the runs' shape. How it runs (LOCAL) and
    COMPARE_ARGS may change: they do not change what a run measures, or only the comparison."""
    d = {k: v for k, v in asdict(s).items() if k not in ("ab_id", "local", "compare_args")}
    d["load"] = {k: v for k, v in sorted(env.items()) if k.startswith(LOAD_PREFIX)}
    return d


def load_points(root: Path, s: AbSettings, env: Mapping[str, str], pairs: int = 0) -> list[SweepPoint]:
    """schedule() (PAIRS pairs when more than REPEATS: a sequential design's planned K), with each
    run's recorded outcome when ROOT holds ab.json (a resume); a run recorded done whose folder is
    gone runs again. UsageError when the settings differ."""
    points = schedule(max(s.repeats, pairs))
    path = root / AB_JSON
    if not path.is_file():
        return points
    try:
        diff = take_recorded(
            path, identity(s, env), points, lambda p: root / p.id[0].upper() / p.id / MANIFEST
        )
    except InputError as e:
        raise UsageError(f"{e}; move it away or choose another AB_ID") from None
    if diff:
        raise UsageError(
            f"{display(root)} holds an A/B run with other settings ({', '.join(diff)} differ); "
            "rerun with the same settings to resume, or choose another AB_ID"
        )
    return points


def save_points(
    root: Path,
    s: AbSettings,
    env: Mapping[str, str],
    points: list[SweepPoint],
    state: str,
    sequential: dict | None = None,
) -> None:
    """ab.json, rewritten atomically (the sweep's record: state, each run's status; SEQUENTIAL: the
    sequential design's state, with BUDGET)."""
    runner = "local" if s.local else "compose"
    SweepState.from_points(
        s.ab_id, identity(s, env), points, state=state, runner=runner, git_commit=git_commit(find_checkout()),
        sequential=sequential,
    ).write(root, AB_JSON)  # fmt: skip


def schedule(repeats: int) -> list[SweepPoint]:
    """The runs in order: A B B A ..., REPEATS per side; ids a1, b1, b2, a2, ..."""
    seen = dict.fromkeys(SIDES, 0)
    out = []
    for i in range(2 * repeats):
        side = ORDER[i % len(ORDER)]
        seen[side] += 1
        out.append(SweepPoint(f"{side.lower()}{seen[side]}", seen[side], 1, "", 0))
    return out


class StagingRunner(ComposeRunner):
    """Each run is `python -m swarmbench headless --staging`: the side's host, no bundled target."""

    staging = True


def point_runner(s: AbSettings, root: Path, env: dict[str, str]) -> PointRunner:
    """The sweep's runners: local processes (LOCAL=1) or compose, for the bundled target or hosts."""
    plan = SweepSettings(s.ab_id, (s.workers,), (s.user_class,), s.repeats, s.run_time, s.users, STRONG, None)
    if s.local:
        runner = LocalRunner(plan, root, env)
        runner.external_host = s.hosts["A"] is not None
        return runner
    return (StagingRunner if s.hosts["A"] else ComposeRunner)(plan, root, env)


def side_env(s: AbSettings, env: Mapping[str, str], side: str) -> dict[str, str]:
    out = {**env, **s.sides[side]}
    if s.hosts[side]:
        out["LOCUST_HOST"] = str(s.hosts[side])
    return out


def run_ab(environ: Mapping[str, str], check: CompareArgsCheck, record: str | None = None) -> int:
    """`swarmbench ab`: the runs, then the comparison; the exit code (module docstring). CHECK:
    the comparison's check of COMPARE_ARGS (the command line's); RECORD: a history store each
    finished run is added to."""
    s = ab_settings(environ, check)
    env = dict(environ)
    if not environ.get("AB_ID"):
        # The default name, taken exclusively as run folders are: a second `make ab` started in the
        # same second gets ab-...Z-2, never the first one's folder (which it would resume or refuse).
        s = replace(s, ab_id=create_run_dir(results_dir(env), s.ab_id, explicit=False).name)
    root = results_dir(env) / s.ab_id
    if s.budget is not None:
        return run_sequential(s, root, env, record)
    points = load_points(root, s, env)
    if any(p.status != "done" for p in points):
        runner = point_runner(s, root, env)
        stopped = run_with(runner, partial(run_all, s, runner, root, env, points, record), s, root, points)
        if stopped is not None:
            return stopped
    else:
        print(f"swarmbench ab: {s.ab_id}: all {len(points)} runs already done; comparing", file=sys.stderr)
    code = compare_sides(s, root)
    failed = [p.id for p in points if p.status != "done"]
    return code if code or not failed else exits.REQUESTS_FAILED


def run_with(
    runner: PointRunner,
    loop: Callable[[], bool],
    s: AbSettings,
    root: Path,
    points: list[SweepPoint],
    what: str = "runs",
    total: bool = True,
) -> int | None:
    """RUNNER set up, LOOP run (it returns True when interrupted), RUNNER cleaned up whatever
    happens. Interrupted: one line saying how many of POINTS (WHAT) are kept and how to resume, and
    exits.INTERRUPTED_SIGINT; None when the loop ran through. TOTAL: say "N of M" (a sequence's
    planned pairs are a bound, not a count: "N")."""
    runner.setup()
    try:
        interrupted = loop()
    finally:
        runner.cleanup()
    if not interrupted:
        return None
    done = sum(p.status == "done" for p in points)
    kept = f"{done} of {len(points)} {what}" if total else f"{done} {what}"
    print(
        f"swarmbench ab: interrupted; {kept} kept in {display(root)}/. "
        f"Resume: the same settings and AB_ID={s.ab_id}",
        file=sys.stderr,
    )
    return exits.INTERRUPTED_SIGINT


def run_all(
    s: AbSettings,
    runner: PointRunner,
    root: Path,
    env: dict[str, str],
    points: list[SweepPoint],
    record: str | None = None,
) -> bool:
    """Every run not done yet, in schedule() order (the sweep's run_point: its log, timeout, Ctrl-C
    and folder rules: a folder left by an earlier attempt is moved aside first), ab.json rewritten
    after each; whether the user interrupted."""
    from swarmbench.runner.sweep import run_point  # the sweep's point loop, one run at a time

    logs = root / LOGS_DIR
    logs.mkdir(parents=True, exist_ok=True)
    for p in points:
        p.workers, p.user_class, p.users = s.workers, s.user_class, s.users
    todo = [p for p in points if p.status != "done"]
    what = "A/A (noise floor)" if s.aa else f"A {describe(s, 'A')} vs B {describe(s, 'B')}"
    left = f"{len(todo)} of {len(points)}" if len(todo) < len(points) else f"{len(points)}"
    print(f"swarmbench ab: {what}, {left} runs of {s.run_time} -> {display(root)}/", file=sys.stderr)
    progress = Progress(len(todo), S.timespan_seconds("RUN_TIME", s.run_time))
    interrupted = False
    try:
        for i, p in enumerate(todo, 1):
            side = p.id[0].upper()
            runner.env, runner.sweep_dir = side_env(s, env, side), root / side
            (root / side).mkdir(exist_ok=True)
            if run_point(runner, runner.s, root / side, p, logs, progress, i, len(todo) - i):
                interrupted = True
                break
            after_run(root, side, p, logs, record)
            save_points(root, s, env, points, "running")
    except KeyboardInterrupt:  # between two runs: nothing is running
        interrupted = True
    finally:
        complete = all(p.status == "done" for p in points)
        save_points(
            root, s, env, points, "interrupted" if interrupted else "complete" if complete else "incomplete"
        )
    return interrupted


def after_run(root: Path, side: str, p: SweepPoint, logs: Path, record: str | None) -> None:
    """A run that failed: why, and where its processes' output is (the reason is one line of it);
    one that is done: into the history store, when asked (RECORD)."""
    if p.status != "done":
        log = display(point_log(logs, p.id))
        print(f"swarmbench ab: run {side}/{p.id} failed: {p.reason} (its log: {log})", file=sys.stderr)
    elif record is not None:
        record_runs([root / side / p.id], record)


def describe(s: AbSettings, side: str) -> str:
    words = s.hosts[side] or " ".join(f"{k}={v}" for k, v in s.sides[side].items())
    return f"({words or 'defaults'})"


def compare_sides(s: AbSettings, root: Path, design: tuple[int, int] | None = None) -> int:
    """The comparison of root/A and root/B into root/compare/: A/A reports the noise floor
    (`swarmbench floor`), A/B the verdicts (`swarmbench compare`; DESIGN: the sequential design's
    (K, first look), whose repeated CIs judge the gated rows); its exit code."""
    command = "floor" if s.aa else "compare"
    out = compare_dir(root)
    seq = ("--sequential", str(design[0]), "--first-look", str(design[1])) if design else ()
    print(
        f"swarmbench ab: swarmbench {command} {display(root)}/A {display(root)}/B -o {display(out)}",
        *s.compare_args,
        *seq,
        file=sys.stderr,
        flush=True,
    )
    return subprocess.run(sides_command(s, root, out, design), cwd=find_checkout()).returncode


def sides_command(s: AbSettings, root: Path, out: Path, design: tuple[int, int] | None = None) -> list[str]:
    """`swarmbench floor A B -o OUT` (A/A) or `swarmbench compare A B -o OUT`, with COMPARE_ARGS (and
    the sequential DESIGN's --sequential K --first-look F)."""
    a, b = root / "A", root / "B"
    if s.aa:
        return [*cmdline.PROGRAM, *cmdline.floor(a, b, out, options=s.compare_args)]
    return [*cmdline.PROGRAM, *cmdline.compare(b, out, baseline=a, options=s.compare_args, sequential=design)]


def compare_dir(root: Path) -> Path:
    """ROOT/compare, or compare-2, -3, ... when a resumed or repeated A/B run already has one (a
    comparison is never written over)."""
    out, n = root / "compare", 1
    while out.exists():
        n += 1
        out = root / f"compare-{n}"
    return out


# --- make ab with BUDGET: pairs until every gated metric is decisive --------------------------------
#
# The statistic is the comparison package's (compare/sequential.py: repeated confidence intervals of a
# group-sequential paired design), asked after each pair in a process of its own (`swarmbench compare
# A B --sequential K --first-look F --look`: its decision state as JSON on stdout). This module keeps
# the design's record in ab.json (`sequential`): the budget, K, the pair time, each look's intervals.
# A duet with BUDGET (runner/duet.py) runs the same loop (sequence_loop), a duet run for a pair.

FIRST_LOOK = 3
"""The first look (pairs) when REPEATS is not more: compare/sequential.py FIRST_LOOK (why 3 there)."""

MAX_PAIRS = 200
"""The most pairs a design plans: compare/sequential.py MAX_PAIRS (the comparison refuses more)."""

BUDGET_SLACK = 1.1
"""A pair starts while the time spent plus the mean pair time is within the budget times this: pairs
vary by a second or two, and K was planned from the first pair's time (K = budget // pair time)."""


def planned_pairs(budget_s: float, pair_s: float, first: int) -> int:
    """K: the pairs the budget buys at the first pair's time, at least FIRST, at most MAX_PAIRS."""
    fits = math.floor(budget_s / pair_s) if pair_s > 0 else MAX_PAIRS
    return max(first, min(MAX_PAIRS, fits))


def recorded_sequential(root: Path) -> dict | None:
    """The sequential state a resumed A/B recorded in ab.json (None: none, or no ab.json)."""
    path = root / AB_JSON
    if not path.is_file():
        return None
    try:
        return SweepState.read(path).sequential
    except InputError:
        return None  # load_points names the unreadable file


def new_sequence(s: AbSettings, root: Path) -> dict:
    """ab.json's `sequential` of ROOT: as recorded (a resume continues it), else a new one (K not
    known until the first pair has run; the first look at FIRST_LOOK pairs, or REPEATS when more)."""
    return recorded_sequential(root) or {
        "budget_s": s.budget, "first_look": max(FIRST_LOOK, s.repeats), "max_pairs": None, "pair_s": None,
        "spent_s": 0.0, "stopped": None, "looks": [],
    }  # fmt: skip


def run_sequential(s: AbSettings, root: Path, env: dict[str, str], record: str | None) -> int:
    """`make ab` with BUDGET: interleaved pairs (A B, B A, ...) until every gated row is decisive,
    K pairs are done or the budget is spent; then the comparison of all the runs, its gated rows
    judged by the design's repeated CIs; the exit code as run_ab's. Resume (same AB_ID) continues."""
    seq = new_sequence(s, root)
    points = load_points(root, s, env, seq["max_pairs"] or 0)
    if seq["stopped"] is None:
        runner = point_runner(s, root, env)
        loop = partial(pairs_loop, s, runner, root, env, points, seq, record)
        stopped = run_with(runner, loop, s, root, points, total=False)  # the planned pairs are not all run
        if stopped is not None:
            return stopped
    else:
        print(f"swarmbench ab: {s.ab_id}: the sequence ended ({seq['stopped']}); comparing", file=sys.stderr)
    design = (seq["max_pairs"], seq["first_look"]) if seq["max_pairs"] else None
    code = compare_sides(s, root, design)
    failed = [p.id for p in points if p.status in ("failed", "interrupted")]
    return code if code or not failed else exits.REQUESTS_FAILED


@dataclass(frozen=True)
class Steps:
    """What a sequential loop (sequence_loop) repeats, a look after each step: an interleaved pair
    (two runs) or a duet run (one)."""

    unit: str
    """The step's word in the lines printed and ab.json's `stopped` (`pair`, `duet run`)."""
    size: int
    """Runs per step."""
    schedule: Callable[[int], list[SweepPoint]]
    """The points of K steps, in order (the first ones those of the first step)."""
    run: Callable[[SweepPoint, int, int], bool]
    """Run one point (the i-th of its step's runs to do, n left after it): True when interrupted."""
    look: Callable[[tuple[int, int]], list[str]]
    """The look command of the design (K, first look): its decision state as JSON on stdout."""
    save: Callable[[list[SweepPoint], str, dict], None]
    """ab.json rewritten: the points, the state, the sequence."""


def pairs_loop(
    s: AbSettings,
    runner: PointRunner,
    root: Path,
    env: dict[str, str],
    points: list[SweepPoint],
    seq: dict,
    record: str | None,
) -> bool:
    """The interleaved pairs (sequence_loop); whether the user interrupted."""
    logs = root / LOGS_DIR
    logs.mkdir(parents=True, exist_ok=True)
    what = f"A {describe(s, 'A')} vs B {describe(s, 'B')}"
    print(
        f"swarmbench ab: {what}, pairs of {s.run_time} runs until every gated metric is decisive or "
        f"BUDGET={fmt_duration(s.budget or 0)} is spent (looks from pair {seq['first_look']}) "
        f"-> {display(root)}/",
        file=sys.stderr,
    )
    progress = Progress(2, S.timespan_seconds("RUN_TIME", s.run_time))

    def run(p: SweepPoint, i: int, left: int) -> bool:
        from swarmbench.runner.sweep import run_point

        side = p.id[0].upper()
        runner.env, runner.sweep_dir = side_env(s, env, side), root / side
        (root / side).mkdir(exist_ok=True)
        if run_point(runner, runner.s, root / side, p, logs, progress, i, left):
            return True
        after_run(root, side, p, logs, record)
        return False

    steps = Steps(
        "pair", 2, schedule, run, partial(look_command, s, root), partial(save_points, root, s, env)
    )
    return sequence_loop(steps, s, points, seq)


def sequence_loop(steps: Steps, s: AbSettings, points: list[SweepPoint], seq: dict) -> bool:
    """STEPS until one_look says stop (every gated row decisive, K steps done) or the next step would
    overrun the budget (by BUDGET_SLACK), a look after each from the first look on; SEQ (ab.json's
    `sequential`) updated and ab.json rewritten after each run (the time spent, for a resume); POINTS
    extended as steps are added, cut to the steps run once the sequence ends; whether the user
    interrupted."""
    size = steps.size
    t0, spent0, k, interrupted = time.monotonic(), float(seq["spent_s"]), 0, False
    try:
        while seq["stopped"] is None:
            k += 1
            if len(points) < size * k:
                points[:] = points + steps.schedule(k)[len(points) :]  # recorded outcomes kept
            step = points[size * (k - 1) : size * k]
            for p in step:  # those done before a resume too: ab.json is rewritten from them
                p.workers, p.user_class, p.users = s.workers, s.user_class, s.users
            todo = [p for p in step if p.status != "done"]
            spent = spent0 + time.monotonic() - t0
            if todo and seq["pair_s"] and spent + seq["pair_s"] > BUDGET_SLACK * seq["budget_s"]:
                seq["stopped"] = "budget spent"
                k -= 1  # this step is not run
                break
            started = time.monotonic()
            for i, p in enumerate(todo, 1):
                if steps.run(p, i, len(todo) - i):
                    interrupted = True
                    break
                seq["spent_s"] = round(spent0 + time.monotonic() - t0, 1)
                steps.save(points, "running", seq)
            if interrupted:
                break
            if todo and seq["pair_s"] is None and len(todo) == size:
                seq["pair_s"] = round(time.monotonic() - started, 1)
            plan(seq, steps.unit)
            if not todo and k < len(points) // size:
                continue  # done before a resume: its look was recorded then
            seq["stopped"] = one_look(seq, k, steps.look, steps.unit)
            if seq["stopped"] is None and seq["max_pairs"] and k >= seq["max_pairs"]:
                seq["stopped"] = f"all {k} {steps.unit}s done"
    except KeyboardInterrupt:  # between two runs: nothing is running
        interrupted = True
    finally:
        if not interrupted and seq["stopped"] is not None:
            del points[size * k :]  # the steps planned but not needed: not runs that are missing
        complete = all(p.status == "done" for p in points)
        steps.save(points, "interrupted" if interrupted else "complete" if complete else "incomplete", seq)
    return interrupted


def plan(seq: dict, unit: str = "pair") -> None:
    """K, once the first pair's time is known: the pairs (UNITs) the budget buys (said in one line)."""
    if seq["max_pairs"] is None and seq["pair_s"]:
        seq["max_pairs"] = planned_pairs(seq["budget_s"], seq["pair_s"], seq["first_look"])
        print(
            f"swarmbench ab: a {unit} takes {fmt_duration(seq['pair_s'])}: at most "
            f"{seq['max_pairs']} {unit}s in {fmt_duration(seq['budget_s'])}",
            file=sys.stderr,
        )


def one_look(
    seq: dict, k: int, command: Callable[[tuple[int, int]], list[str]], unit: str = "pair"
) -> str | None:
    """The look after step K (a pair, a duet run: UNIT), COMMAND the design's look (before the first
    look: the line says when it comes): recorded in SEQ, one line printed; why the sequence stops
    (None: it goes on)."""
    head = f"swarmbench ab: {unit} {k}/{seq['max_pairs'] or '?'}"
    if k < seq["first_look"] or seq["max_pairs"] is None:
        print(f"{head}: the first look is at {unit} {seq['first_look']}", file=sys.stderr, flush=True)
        return None
    res = subprocess.run(
        command((seq["max_pairs"], seq["first_look"])), cwd=find_checkout(), capture_output=True, text=True
    )
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        print(f"{head}: the look failed (exit {res.returncode}); stopping", file=sys.stderr)
        return "the look failed"
    found = json.loads(res.stdout)
    seq["looks"].append(
        {
            "pairs": found["pairs"],
            "decided": found["decided"],
            "spent_s": seq["spent_s"],
            "rows": [
                {k_: r[k_] for k_ in ("name", "metric", "pairs", "c", "sd_log", "change", "rci", "verdict")}
                for r in found["rows"]
            ],
        }
    )
    print(f"{head}: {look_line(found, seq, unit)}", file=sys.stderr, flush=True)
    return "decided" if found["decided"] else None


def look_command(s: AbSettings, root: Path, design: tuple[int, int]) -> list[str]:
    """`swarmbench compare A B [COMPARE_ARGS] --sequential K --first-look F --look`: one look of the
    sequential DESIGN at the runs so far, its decision state as JSON on stdout."""
    a, b = root / "A", root / "B"
    o = s.compare_args
    return [*cmdline.PROGRAM, *cmdline.compare(b, root, baseline=a, options=o, sequential=design, look=True)]


def look_line(found: dict, seq: dict, unit: str = "pair") -> str:
    """`catches now p50 ≥ +7.1 %, p95 ≥ +12.3 %; 2 of 8 rows undecided; decided in ~1m20s`: per
    gated metric (Aggregated, else its widest row) the smallest change it could call now (band +
    the repeated CI's half-width), and the time to decide at the current spread (pairs needed x
    the pair time; `≥ budget` when beyond it)."""
    rows = found["rows"]
    by_metric: dict[str, float] = {}
    for r in rows:
        if r["half_log"] is None:
            continue
        catch = math.expm1(math.log1p(found["min_effect"]) + r["half_log"])
        if r["name"] == "Aggregated" or r["metric"] not in by_metric:
            by_metric[r["metric"]] = (
                catch if r["name"] == "Aggregated" else max(catch, by_metric.get(r["metric"], 0))
            )
    catches = ", ".join(f"{m} ±{v:.1%}" for m, v in by_metric.items())
    open_rows = [r for r in rows if r["verdict"] == "inconclusive"]
    if found["decided"]:
        verdicts = sorted({f"{r['metric']} {r['verdict']}" for r in rows if r["name"] == "Aggregated"})
        return f"catches now {catches}; decided ({', '.join(verdicts) or 'every row decisive'})"
    needed = found["pairs_needed"]
    left = (seq["max_pairs"] - found["pairs"]) * (seq["pair_s"] or 0)
    if needed is None or needed == "inf" or needed > seq["max_pairs"]:
        when = "≥ budget"
    else:
        wait = max(0, needed - found["pairs"]) * (seq["pair_s"] or 0)
        more = needed - found["pairs"]
        when = "≥ budget" if wait > left else f"~{fmt_duration(wait)} ({more} more {unit}s)"
    return f"catches now {catches}; {len(open_rows)} of {len(rows)} rows undecided; decided in {when}"
