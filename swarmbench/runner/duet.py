"""`DUET=1 make ab`: A and B run AT ONCE, in one Locust run, and are compared in pairs.

Each duet run is one Locust master and its workers driving two targets with the same load:
locustfiles/duet.py runs every step of the albums scenario against A and against B, back to back
in a random order, and tags each request name with its side (`[A] GET /albums`). Both sides then
share every second of the run -- the machine, the load generator, a neighbour's build -- and the
comparison (`swarmbench compare --duet`, compare/duet.py) works on the windows in pairs, so what
hits both sides cancels. What it cannot see: A and B contend for this machine (docs/compare.md).

- LOCAL=1: two bundled targets built from target/ (the sweep's LocalRunner build), one with A's
  settings (A="ALBUMS_DELAY=10ms": NAME=value words), one with B's, each on a free 127.0.0.1 port,
  each with TARGET_CPUS (default 1) Go CPUs.
- A_HOST/B_HOST: two deploys; no target is started, Locust runs on this machine (LOCAL or not).
- Neither: refused (exit 2, one line): a duet under Docker compose is not built.
- REPEATS duet runs (default 3, as make ab), each RUN_TIME long; each is one pair of the
  comparison (compare/duet.py Pair).
- BUDGET (run_sequential): duet runs until every gated row is decisive or the budget is spent, a
  look after each: make ab's sequential loop (runner/ab.py sequence_loop) with a duet run for a pair,
  the look `compare --duet DIR --sequential K --first-look F --look`; ab.json's `sequential` as make
  ab's. An A/A duet takes BUDGET too (it is compared in pairs, not by the noise floor).
- Folders: results/<AB_ID>/duet/<d1, d2, ...> (run folders) and duet/targets.json (each run's two
  targets: settings, host, the CPU seconds each used, scraped from its /metrics before and after the
  run), the comparison in .../compare/, ab.json (the settings, `design: duet`, each run's status).
  Resume as make ab: the same AB_ID and settings run only what is not done.
- Exit codes as make ab: the comparison's (3 regressed), 1 when a run failed and nothing regressed,
  130 on Ctrl-C, 2 for bad settings (before anything runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path

from swarmbench.core import cmdline, exits
from swarmbench.core import target as scraper
from swarmbench.core.atomic import write_atomic
from swarmbench.core.checks import COMPARE_METRICS, PERCENTILE_METRICS
from swarmbench.core.exits import InputError, UsageError
from swarmbench.core.folder import AB_JSON, LOGS_DIR, MANIFEST, create_run_dir
from swarmbench.core.loadspec import STRONG
from swarmbench.core.manifest import git_commit
from swarmbench.core.sweepstate import SweepPoint, SweepState, take_recorded
from swarmbench.runner import ab
from swarmbench.runner import settings as S
from swarmbench.runner.points import (
    DEFAULT_TARGET_CPUS,
    LocalRunner,
    Point,
    SweepSettings,
    _PointError,
    _spawn,
    free_port,
    wait_http,
)
from swarmbench.runner.settings import display, find_checkout, record_runs, results_dir
from swarmbench.runner.sweep import fmt_duration

DUET_LOCUSTFILE = "locustfiles/duet.py"
"""The duet's locustfile: the albums steps against both sides, names tagged."""
DUET_CLASS = "AlbumsDuetUser"
"""Its user class (FastHttpUser, as make ab's single runs)."""
HOST_B_ENV = "LOCUST_DUET_HOST_B"
"""B's base URL for the duet's users (locustfiles/duet.py --duet-host-b); A's is LOCUST_HOST."""
DUET_DIR = "duet"
"""The duet runs' folder in the A/B run's folder (a folder of run folders: compare --duet reads it)."""
TARGETS_JSON = "targets.json"
"""Each run's two targets, in DUET_DIR (compare/duet_sides.py reads it under the same name)."""
TARGET_START_S = 15.0
"""How long a bundled target may take to answer /healthz (LocalRunner's wait)."""


def check(environ: Mapping[str, str]) -> None:
    """DUET=1's own rules (UsageError, one line) before anything runs."""
    if not S.flag(environ, "LOCAL") and not environ.get("A_HOST", "").strip():
        raise UsageError(
            "DUET=1 runs A and B at once on this machine: set LOCAL=1 (two bundled targets from "
            "target/) or A_HOST and B_HOST (two deploys); a duet under Docker compose is not built"
        )
    for name in ("LOCUST_LOCUSTFILE", "LOCUST_USER_CLASSES"):
        if environ.get(name, "").strip():
            raise UsageError(f"DUET=1 runs {DUET_LOCUSTFILE}'s {DUET_CLASS}: unset {name}")


def duet_settings(environ: Mapping[str, str], check_args: ab.CompareArgsCheck) -> ab.AbSettings:
    """make ab's settings for a duet: LOCAL for hosts too (Locust runs here, so a loopback host is
    fine), the duet's class, and COMPARE_ARGS checked as a comparison's (an A/A duet is compared in
    pairs too, not by the noise floor)."""
    check(environ)
    env = {**environ, "LOCAL": "1"} if environ.get("A_HOST", "").strip() else environ
    s = ab.ab_settings(env, lambda words, aa: check_args(words, False), paired_aa=True)
    asked = metrics_asked(s.compare_args)
    if asked is not None and not asked & set(JUDGED):
        raise UsageError(
            f"COMPARE_ARGS: a duet judges {', '.join(JUDGED)} only (each step runs on both sides)"
        )
    return replace(s, user_class=DUET_CLASS, local=True)


JUDGED = tuple(m for m in COMPARE_METRICS if m in PERCENTILE_METRICS)
"""The metrics a duet judges (compare/duet.py DUET_METRICS): the percentiles, not throughput."""


def metrics_asked(words: tuple[str, ...]) -> set[str] | None:
    """The metrics COMPARE_ARGS' --metrics names (its last one, as argparse takes it); None: not given."""
    found = None
    for i, word in enumerate(words):
        if word == "--metrics" and i + 1 < len(words):
            found = words[i + 1]
        elif word.startswith("--metrics="):
            found = word.partition("=")[2]
    return None if found is None else {m.strip() for m in found.split(",") if m.strip()}


def identity(s: ab.AbSettings, env: Mapping[str, str]) -> dict:
    """make ab's identity, marked a duet: an interleaved A/B run never resumes as a duet or back."""
    return {**ab.identity(s, env), "design": DUET_DIR}


def schedule(repeats: int) -> list[SweepPoint]:
    """The duet runs: d1, d2, ... (each one pair)."""
    return [SweepPoint(f"d{i}", i, 1, "", 0) for i in range(1, repeats + 1)]


def load_points(root: Path, s: ab.AbSettings, env: Mapping[str, str], runs: int = 0) -> list[SweepPoint]:
    """schedule() (RUNS when more than REPEATS: a sequential duet's planned K), with each run's
    recorded outcome when ROOT holds ab.json (make ab's resume)."""
    points = schedule(max(s.repeats, runs))
    path = root / AB_JSON
    if not path.is_file():
        return points
    try:
        diff = take_recorded(path, identity(s, env), points, lambda p: root / DUET_DIR / p.id / MANIFEST)
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
    s: ab.AbSettings,
    env: Mapping[str, str],
    points: list[SweepPoint],
    state: str,
    sequential: dict | None = None,
) -> None:
    """ab.json, as make ab's (SEQUENTIAL: the sequential duet's state, with BUDGET)."""
    commit = git_commit(find_checkout())
    SweepState.from_points(
        s.ab_id,
        identity(s, env),
        points,
        state=state,
        runner="local",
        git_commit=commit,
        sequential=sequential,
    ).write(root, AB_JSON)


class DuetRunner(LocalRunner):
    """One duet run: A's and B's targets (or hosts), then the sweep's local master and workers with
    the duet's locustfile, A as Locust's host and B as HOST_B_ENV. Each target's CPU seconds are
    scraped before and after (core/target.py) into `counters`."""

    ab: ab.AbSettings
    port_b: int = 0
    urls: dict[str, str]
    before: dict[str, scraper.TargetSnapshot | None]
    targets: list
    counters: dict[str, dict]
    point_id: str = ""

    def setup(self) -> None:
        self.external_host = self.ab.hosts["A"] is not None
        self.counters, self.targets, self.urls, self.before = {}, [], {}, {}
        super().setup()
        if not self.external_host:
            self.port_b = free_port()

    def start(self, p: Point, env: dict[str, str], log) -> None:
        self.point_id, self.targets = p.id, []
        if self.external_host:
            self.urls = {side: str(self.ab.hosts[side]) for side in ab.SIDES}
        else:
            self.urls = {
                side: self._start_side(side, port, env, log)
                for side, port in (("A", self.port), ("B", self.port_b))
            }
        self.before = {side: scraper.scrape(url) for side, url in self.urls.items()}
        loc_env = {
            **env,
            "LOCUST_HOST": self.urls["A"],
            HOST_B_ENV: self.urls["B"],
            "LOCUST_LOCUSTFILE": DUET_LOCUSTFILE,
        }
        external, self.external_host = self.external_host, True  # the targets are up: start Locust only
        try:
            super().start(p, loc_env, log)
        finally:
            self.external_host = external
        self.procs = [*self.targets, *self.procs]  # kill() reaches the targets too

    def _start_side(self, side: str, port: int, env: dict[str, str], log) -> str:
        """SIDE's bundled target with its settings on PORT; its URL once healthy."""
        assert self.binary is not None
        target_env = {
            **env,
            **self.ab.sides[side],
            "PORT": str(port),
            "GOMAXPROCS": env.get("TARGET_CPUS") or DEFAULT_TARGET_CPUS,
        }
        proc = _spawn([str(self.binary)], target_env, log)
        self.targets.append(proc)
        self.procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        if not wait_http(url + "/healthz", TARGET_START_S, proc):
            raise _PointError(f"target {side} did not answer on {url}/healthz")
        return url

    def _stop_target(self) -> None:
        """After Locust ended: each target's counters over the run, then the bundled targets stopped."""
        found = {}
        for side, url in self.urls.items():
            before, after = self.before.get(side), scraper.scrape(url)
            counters = scraper.delta(before, after).to_json() if before and after else None
            found[side] = {"host": url, "settings": self.ab.sides[side], "target": counters}
        self.counters[self.point_id] = found
        for proc in self.targets:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.targets = []
        self.procs.clear()


def duet_runner(s: ab.AbSettings, folder: Path, env: dict[str, str]) -> DuetRunner:
    plan = SweepSettings(s.ab_id, (s.workers,), (s.user_class,), s.repeats, s.run_time, s.users, STRONG, None)
    runner = DuetRunner(plan, folder, env)
    runner.ab = s
    return runner


def run_duet(environ: Mapping[str, str], check_args: ab.CompareArgsCheck, record: str | None = None) -> int:
    """`DUET=1 swarmbench ab`: the duet runs, then the paired comparison; make ab's exit codes."""
    s = duet_settings(environ, check_args)
    env = dict(environ)
    if not environ.get("AB_ID"):  # make ab's exclusive default name (runner/ab.py run_ab)
        s = replace(s, ab_id=create_run_dir(results_dir(env), s.ab_id, explicit=False).name)
    root = results_dir(env) / s.ab_id
    if s.budget is not None:
        return run_sequential(s, root, env, record)
    points = load_points(root, s, env)
    if any(p.status != "done" for p in points):
        runner = duet_runner(s, root / DUET_DIR, env)
        loop = partial(run_all, s, runner, root, env, points, record)
        stopped = ab.run_with(runner, loop, s, root, points, "duet runs")
        if stopped is not None:
            return stopped
    else:
        print(
            f"swarmbench ab: {s.ab_id}: all {len(points)} duet runs already done; comparing", file=sys.stderr
        )
    code = compare(s, root)
    failed = [p.id for p in points if p.status != "done"]
    return code if code or not failed else exits.REQUESTS_FAILED


def run_all(
    s: ab.AbSettings,
    runner: DuetRunner,
    root: Path,
    env: dict[str, str],
    points: list[SweepPoint],
    record: str | None,
) -> bool:
    """Every duet run not done yet (one_run), ab.json rewritten after each; whether the user
    interrupted."""
    for p in points:  # those done before a resume too: ab.json is rewritten from them
        p.workers, p.user_class, p.users = s.workers, s.user_class, s.users
    todo = [p for p in points if p.status != "done"]
    what = f"A {ab.describe(s, 'A')} and B {ab.describe(s, 'B')} at once (duet)"
    print(f"swarmbench ab: {what}, {len(todo)} runs of {s.run_time} -> {display(root)}/", file=sys.stderr)
    run = one_run(s, runner, root, record, len(todo))
    interrupted = False
    try:
        for i, p in enumerate(todo, 1):
            if run(p, i, len(todo) - i):
                interrupted = True
                break
            save_points(root, s, env, points, "running")
    except KeyboardInterrupt:  # between two runs: nothing is running
        interrupted = True
    finally:
        complete = all(p.status == "done" for p in points)
        state = "interrupted" if interrupted else "complete" if complete else "incomplete"
        save_points(root, s, env, points, state)
    return interrupted


def one_run(
    s: ab.AbSettings, runner: DuetRunner, root: Path, record: str | None, runs: int
) -> Callable[[SweepPoint, int, int], bool]:
    """A function running one duet run (the sweep's run_point: its log, timeout, Ctrl-C and folder
    rules; the i-th of RUNS, n left), its targets' counters added to targets.json; True when the
    user interrupted."""
    from swarmbench.runner.sweep import Progress, run_point

    folder, logs = root / DUET_DIR, root / LOGS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    progress = Progress(runs, S.timespan_seconds("RUN_TIME", s.run_time))
    targets_path = folder / TARGETS_JSON
    counters = json.loads(targets_path.read_text(encoding="utf-8")) if targets_path.is_file() else {}

    def run(p: SweepPoint, i: int, left: int) -> bool:
        if run_point(runner, runner.s, folder, p, logs, progress, i, left):
            return True
        if p.status != "done":
            print(f"swarmbench ab: duet run {p.id} failed: {p.reason}", file=sys.stderr)
        else:
            counters[p.id] = runner.counters.get(p.id)
            write_atomic(targets_path, json.dumps(counters, indent=2) + "\n")
            if record is not None:
                record_runs([folder / p.id], record)
        return False

    return run


# --- DUET=1 with BUDGET: duet runs until every gated metric is decisive -------------------------------
#
# make ab's sequential loop (runner/ab.py sequence_loop) with a duet run for a pair: after each, one
# look of `swarmbench compare --duet DIR --sequential K --first-look F --look` (d = ln(B/A) of each
# duet run's whole-run percentiles; compare/sequential.py's repeated CIs), the same lines printed and
# the same record in ab.json (`sequential`: its pair_s and max_pairs are a duet run's time and count).

UNIT = "duet run"
"""A sequential duet's step, in the lines printed (compare/commands.py DUET_UNIT in compare.json)."""


def run_sequential(s: ab.AbSettings, root: Path, env: dict[str, str], record: str | None) -> int:
    """`DUET=1 make ab` with BUDGET: duet runs until every gated row is decisive, K runs are done or
    the budget is spent; then the comparison of all of them, its gated rows judged by the design's
    repeated CIs; the exit code as run_duet's. Resume (same AB_ID) continues the sequence."""
    seq = ab.new_sequence(s, root)
    points = load_points(root, s, env, seq["max_pairs"] or 0)
    if seq["stopped"] is None:
        runner = duet_runner(s, root / DUET_DIR, env)
        what = f"A {ab.describe(s, 'A')} and B {ab.describe(s, 'B')} at once (duet)"
        print(
            f"swarmbench ab: {what}, {s.run_time} duet runs until every gated metric is decisive or "
            f"BUDGET={fmt_duration(s.budget or 0)} is spent (looks from duet run {seq['first_look']}) "
            f"-> {display(root)}/",
            file=sys.stderr,
        )
        steps = ab.Steps(
            UNIT, 1, schedule, one_run(s, runner, root, record, 1), partial(look_command, s, root),
            partial(save_points, root, s, env),
        )  # fmt: skip
        loop = partial(ab.sequence_loop, steps, s, points, seq)
        stopped = ab.run_with(runner, loop, s, root, points, "duet runs", total=False)
        if stopped is not None:
            return stopped
    else:
        print(f"swarmbench ab: {s.ab_id}: the sequence ended ({seq['stopped']}); comparing", file=sys.stderr)
    code = compare(s, root, (seq["max_pairs"], seq["first_look"]) if seq["max_pairs"] else None)
    failed = [p.id for p in points if p.status in ("failed", "interrupted")]
    return code if code or not failed else exits.REQUESTS_FAILED


def look_command(s: ab.AbSettings, root: Path, design: tuple[int, int]) -> list[str]:
    """`swarmbench compare --duet ROOT/duet [COMPARE_ARGS] --sequential K --first-look F --look`."""
    o = s.compare_args
    return [*cmdline.PROGRAM, *cmdline.duet(root / DUET_DIR, root, options=o, sequential=design, look=True)]


def compare(s: ab.AbSettings, root: Path, design: tuple[int, int] | None = None) -> int:
    """The paired comparison of ROOT/duet into ROOT/compare (compare-2, ... when one is there; DESIGN:
    a sequential duet's (K, first look)); its exit code."""
    out = ab.compare_dir(root)
    print(
        f"swarmbench ab: swarmbench {' '.join(cmdline.duet(root / DUET_DIR, out, sequential=design))}",
        file=sys.stderr,
        flush=True,
    )
    return subprocess.run(compare_command(s, root, out, design), cwd=find_checkout()).returncode


def compare_command(
    s: ab.AbSettings, root: Path, out: Path, design: tuple[int, int] | None = None
) -> list[str]:
    """`swarmbench compare --duet ROOT/duet -o OUT` with COMPARE_ARGS (and DESIGN's --sequential K
    --first-look F)."""
    return [*cmdline.PROGRAM, *cmdline.duet(root / DUET_DIR, out, options=s.compare_args, sequential=design)]
