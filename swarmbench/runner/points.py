"""A sweep's points: planned (validated settings, a shuffled list, resumed from sweep.json), then each
run by compose, a swarm or local processes.

Loopback helpers for local processes: a free port, waiting until a service answers.

Used by the sweep's local-process runner, the tests and the benchmarks (the same code decides
"the target is up" everywhere). Everything here talks to 127.0.0.1 only.

The sweep's plan, pure: validated settings, the shuffled list of points, resume from sweep.json.

No process is started here (points.py runs them, sweep.py drives the whole sweep), so everything in
this module is a function of its inputs and is unit-tested as such.

How one sweep point runs: `python -m swarmbench headless` (compose), or local processes (the Go
target, a Locust master and N workers on 127.0.0.1). Both write the same run folder; `classify`
then decides from its run.json whether the point made a measurement."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from swarmbench.core import cmdline, exits, salvage
from swarmbench.core.exits import InputError, UsageError
from swarmbench.core.folder import MANIFEST, SWEEP_JSON, is_folder_name
from swarmbench.core.launch import DEFAULT_LOCUSTFILE, DEFAULT_WORKERS_WAIT_S, Launch
from swarmbench.core.loadspec import (
    MIXES,
    POST_HEAVY,
    READ_HEAVY,
    STORES,
    STRONG,
    SWEEP_MODES,
    parse_arrival_rate,
    parse_wait_time,
)
from swarmbench.core.manifest import RUN_END, RunManifest, git_branch, git_commit
from swarmbench.core.sweepstate import SweepPoint, SweepState, take_recorded
from swarmbench.runner import settings as S
from swarmbench.runner.terminal import VERBOSE_ENV

# --- loopback helpers for local processes ---------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> bool:
    """True once URL answers (any HTTP status), False after TIMEOUT seconds or when PROC (the
    process that should serve it) has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            time.sleep(0.1)
    return False


def wait_http_or_raise(url: str, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    """wait_http that raises TimeoutError naming URL (for scripts and tests)."""
    if not wait_http(url, timeout, proc):
        raise TimeoutError(f"{url} did not answer within {timeout:g} s")


# --- the sweep's plan -----------------------------------------------------------------------------

# A sweep's defaults (SWEEP_*): not those of one headless run (core/launch.py DEFAULT_*).
SWEEP_WORKERS = (1, 2, 4)
"""The worker counts a sweep runs (one run's default is launch.SWEEP_WORKERS)."""
SWEEP_CLASSES = ("AlbumsHttpUser", "AlbumsFastHttpUser")
SWEEP_REPEATS = 2
SWEEP_RUN_TIME = "20s"
"""Each point's run time: short enough for a 3 x 2 x 2 sweep in ~6 minutes, long enough for several
report intervals (one headless run's default is launch.SWEEP_RUN_TIME)."""
SWEEP_USERS = 50
SWEEP_MODE = STRONG


# --- settings ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepSettings:
    sweep_id: str
    workers: tuple[int, ...]
    classes: tuple[str, ...]
    repeats: int
    run_time: str
    users: int
    mode: str
    wait_time: str | None
    stores: tuple[str, ...] = ()  # empty: the target's configured store (ALBUMS_STORE), not swept
    mixes: tuple[str, ...] = ()  # empty: the scenario's default mix, not swept
    local: bool = False
    arrival_rate: str | None = None  # open model: every point's LOCUST_ARRIVAL_RATE (core/loadspec.py)

    def identity(self) -> dict:
        """What must match for a rerun to resume this sweep (how it runs, local or not, may differ)."""
        d = asdict(self)
        d.pop("local")
        if d["arrival_rate"] is None:  # closed model: sweep.json as before open-model sweeps existed
            d.pop("arrival_rate")
        for k in ("workers", "classes", "stores", "mixes"):
            d[k] = list(d[k])
        return d

    def users_at(self, workers: int) -> int:
        """strong: the total is fixed; weak: users per worker are fixed, so the total grows."""
        return self.users * workers if self.mode == "weak" else self.users


def parse_list(name: str, value: str) -> list[str]:
    items = [w for w in re.split(r"[\s,]+", value.strip()) if w]
    if not items:
        raise UsageError(f"{name}={value!r} is empty")
    return items


def parse_workers(value: str) -> tuple[int, ...]:
    out: list[int] = []
    for w in parse_list("WORKERS", value):
        n = S.positive_int("WORKERS", w)
        if n in out:
            raise UsageError(f"WORKERS={value!r} lists {n} twice")
        out.append(n)
    return tuple(sorted(out))


def known_classes(env: Mapping[str, str]) -> set[str] | None:
    """User classes defined in the locustfiles the sweep would load (None: cannot tell).

    Read from the source (no import: swarmbench/ is stdlib-only) as `class Name(...User...)`.
    """
    files = (env.get("LOCUST_LOCUSTFILE") or DEFAULT_LOCUSTFILE).split(",")
    root = S.find_checkout()
    found: set[str] = set()
    for f in files:
        path = Path(f.strip())
        if not path.is_absolute():
            if root is None:
                return None
            path = root / path
        if not path.is_file():
            return None
        found |= set(re.findall(r"^class (\w+)\([^)]*User[^)]*\)", path.read_text(), re.M))
    return found


def check_choice(name: str, items: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    for it in items:
        if it not in allowed:
            raise UsageError(f"{name}: unknown {it!r}; expected one of {', '.join(allowed)}")
    if len(set(items)) != len(items):
        raise UsageError(f"{name}: {' '.join(items)} lists a value twice")
    return tuple(items)


def default_sweep_id(now: datetime | None = None) -> str:
    return f"sweep-{(now or datetime.now(UTC)):%Y%m%dT%H%M%SZ}"


STORE_COMPARISON = {
    "STORES": " ".join(STORES),
    "MIXES": f"{POST_HEAVY} {READ_HEAVY}",
    "WORKERS": "1",
    "CLASSES": "AlbumsFastHttpUser",
    "REPEATS": "1",
    "WAIT_TIME": "constant 0.01",
    # Lock work (CPU spent holding the store's lock) and 2 target CPUs make the strategies differ.
    "ALBUMS_LOCK_WORK": "200us",
    "TARGET_CPUS": "2",
}
"""`make sweep-stores` (--store-comparison): defaults for each variable the caller did not set."""


def store_comparison_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    for key, value in STORE_COMPARISON.items():
        if not env.get(key):
            env[key] = value
    return env


def sweep_settings(args: Mapping[str, str | None], env: Mapping[str, str]) -> SweepSettings:
    """Validate everything before anything starts; UsageError (one line) on the first problem.

    ARGS: flag values (None = not given); each falls back to its make variable in ENV.
    (Long on purpose: one validation step per setting, in the order the errors should be reported.)
    """

    def get(key: str, var: str, default: str | None = None) -> str | None:
        v = args.get(key)
        if v is None or v == "":
            v = env.get(var) or None
        return v if v is not None else default

    workers = parse_workers(get("workers", "WORKERS", " ".join(map(str, SWEEP_WORKERS))) or "")
    classes = tuple(parse_list("CLASSES", get("classes", "CLASSES", " ".join(SWEEP_CLASSES)) or ""))
    for c in classes:
        S.user_classes("CLASSES", c)
    known = known_classes(env)
    if known is not None:
        unknown = [c for c in classes if c not in known]
        if unknown:
            raise UsageError(
                f"CLASSES: unknown user class {unknown[0]!r}; "
                f"the locustfiles define {', '.join(sorted(known))}"
            )
    if len(set(classes)) != len(classes):
        raise UsageError(f"CLASSES={' '.join(classes)!r} lists a class twice")
    repeats = S.positive_int("REPEATS", get("repeats", "REPEATS", str(SWEEP_REPEATS)) or "")
    run_time = get("run_time", "RUN_TIME", SWEEP_RUN_TIME) or SWEEP_RUN_TIME
    seconds = S.timespan_seconds("RUN_TIME", run_time)
    users = S.positive_int("USERS", get("users", "USERS", str(SWEEP_USERS)) or "")
    mode = (get("mode", "MODE", SWEEP_MODE) or SWEEP_MODE).lower()
    if mode not in SWEEP_MODES:
        raise UsageError(
            f"MODE={mode!r}: expected strong (total users fixed) or weak (users per worker fixed)"
        )
    wait = get("wait_time", "WAIT_TIME") or env.get("LOCUST_WAIT_TIME") or None
    if wait is not None:
        try:
            parse_wait_time(wait)
        except ValueError as e:
            raise UsageError(f"WAIT_TIME: {e}") from None
    stores = mixes = ()
    if get("stores", "STORES"):
        stores = check_choice("STORES", parse_list("STORES", get("stores", "STORES") or ""), STORES)
    if get("mixes", "MIXES"):
        mixes = check_choice("MIXES", parse_list("MIXES", get("mixes", "MIXES") or ""), tuple(MIXES))
    sweep_id = get("sweep_id", "SWEEP_ID") or default_sweep_id()
    if not is_folder_name(sweep_id):
        raise UsageError(f"SWEEP_ID={sweep_id!r} must be a folder name (letters, digits, . _ + -)")
    arrival_rate = check_arrival_rate(get("arrival_rate", "ARRIVAL_RATE") or env.get("LOCUST_ARRIVAL_RATE"))
    local = bool(args.get("local")) or S.flag(env, "LOCAL")
    return SweepSettings(
        sweep_id=sweep_id,
        workers=workers,
        classes=classes,
        repeats=repeats,
        run_time=f"{seconds}s",
        users=users,
        mode=mode,
        wait_time=wait,
        stores=stores,
        mixes=mixes,
        local=local,
        arrival_rate=arrival_rate,
    )


def check_arrival_rate(spec: str | None) -> str | None:
    """The sweep's arrival-rate schedule (ARRIVAL_RATE), validated; None: closed model."""
    if not spec or not spec.strip():
        return None
    try:
        parse_arrival_rate(spec)
    except ValueError as e:
        raise UsageError(f"ARRIVAL_RATE: {e}") from None
    return spec.strip()


# --- the plan ---------------------------------------------------------------------------------------


Point = SweepPoint
"""A planned point and its outcome (sweep.json's schema: swarmbench.core.sweepstate)."""


def point_id(repeat: int, workers: int, user_class: str, store: str | None, mix: str | None) -> str:
    return "-".join(p for p in (f"r{repeat}", f"w{workers}", user_class, store, mix) if p)


def plan(s: SweepSettings) -> list[Point]:
    """Every point in run order: repeat by repeat, each repeat shuffled (seeded by the sweep id)."""
    out: list[Point] = []
    for repeat in range(1, s.repeats + 1):
        block = [
            Point(point_id(repeat, w, c, st, mx), repeat, w, c, s.users_at(w), st, mx)
            for w in s.workers
            for c in s.classes
            for st in (s.stores or (None,))
            for mx in (s.mixes or (None,))
        ]
        random.Random(f"{s.sweep_id}:{repeat}").shuffle(block)
        out.extend(block)
    return out


def load_state(sweep_dir: Path, s: SweepSettings) -> list[Point]:
    """The plan, with each point's recorded status when resuming (sweep.json)."""
    points = plan(s)
    path = sweep_dir / SWEEP_JSON
    if not path.exists():
        return points
    try:
        diff = take_recorded(path, s.identity(), points, lambda p: sweep_dir / p.id / MANIFEST)
    except InputError as e:
        raise UsageError(f"{e}; move it away or choose another SWEEP_ID") from None
    if diff:
        raise UsageError(
            f"sweep {s.sweep_id!r} exists with other settings ({', '.join(diff)} differ); "
            "rerun with the same settings to resume, or choose another SWEEP_ID"
        )
    return points


def save_state(
    sweep_dir: Path, s: SweepSettings, points: Sequence[Point], state: str, engine: str = "compose"
) -> None:
    """sweep.json, rewritten atomically (state: running | complete | incomplete | interrupted);
    `runner` says how the points ran: local processes, or the docker ENGINE (compose, swarm)."""
    SweepState.from_points(
        s.sweep_id,
        s.identity(),
        list(points),
        state=state,
        runner="local" if s.local else engine,
        git_commit=git_commit(S.find_checkout()),
    ).write(sweep_dir)


# --- how one point runs ---------------------------------------------------------------------------

DEFAULT_TARGET_CPUS = "1"
"""--local: the target's GOMAXPROCS when TARGET_CPUS is unset, the same share compose gives it."""


@dataclass
class PointRunner:
    """How a point runs: compose (default) or local processes. Both write the same run folder."""

    s: SweepSettings
    sweep_dir: Path
    env: dict[str, str]
    procs: list[subprocess.Popen] = field(default_factory=list)

    def setup(self) -> None: ...

    def cleanup(self) -> None: ...

    def point_env(self, p: Point) -> dict[str, str]:
        env = dict(self.env)
        env.update(
            {
                "LOCUST_USERS": str(p.users),
                "LOCUST_RUN_TIME": self.s.run_time,
                "LOCUST_USER_CLASSES": p.user_class,
                "LOCUST_RUN_ID": p.id,
                "LOCUST_SWEEP_ID": self.s.sweep_id,
                "LOCUST_SWEEP_MODE": self.s.mode,
                "LOCUST_SWEEP_REPEAT": str(p.repeat),
                "LOCUST_SWEEP_POINT": p.id,
                "WORKERS": str(p.workers),
            }
        )
        # Spawn everyone within ~1 s: a slow ramp would eat a short run's measurement window.
        env.setdefault("LOCUST_SPAWN_RATE", str(max(p.users, 1)))
        if self.s.wait_time:
            env["LOCUST_WAIT_TIME"] = self.s.wait_time
        if p.store:
            env["ALBUMS_STORE"] = p.store
        if p.mix:
            env["LOCUST_ALBUMS_MIX"] = p.mix
        if self.s.arrival_rate:
            env["LOCUST_ARRIVAL_RATE"] = self.s.arrival_rate
        return env

    def start(self, p: Point, env: dict[str, str], log) -> None:
        raise NotImplementedError

    def wait(self, timeout: float) -> int | None:
        """The point's exit code, or None while it runs (polls for up to TIMEOUT seconds)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Ask the running point to stop cleanly (Locust still writes what it has)."""
        raise NotImplementedError

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                _signal_group(proc, signal.SIGKILL)
        for proc in self.procs:
            proc.wait()
        self.procs.clear()


def _spawn(cmd: list[str], env: dict[str, str], log) -> subprocess.Popen:
    """A point's process, logging to the point's log, in its own session: Ctrl-C reaches the sweep
    only, which then stops the point's processes in order (_signal_group). It runs in the checkout:
    the locustfiles and locust.conf are there (and `python -m swarmbench` from a fresh clone)."""
    return subprocess.Popen(
        cmd, cwd=S.checkout(), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)  # each child leads its own session: this reaches its children


class ComposeRunner(PointRunner):
    """Each point is `python -m swarmbench headless` (the compose stack up, run, down)."""

    staging: bool = False
    """Each point tests LOCUST_HOST (`headless --staging`): no bundled target."""
    swarm: bool = False
    """Each point is a Docker Swarm stack (`headless --swarm`)."""

    def setup(self) -> None:
        from swarmbench.runner.compose import check_docker

        check_docker()

    def start(self, p: Point, env: dict[str, str], log) -> None:
        env["SWARMBENCH_RESULTS"] = str(self.sweep_dir)
        env[VERBOSE_ENV] = "1"  # the point's log keeps the containers' lines (the reason of a failed point)
        self.procs = [_spawn(self.command(), env, log)]

    def command(self) -> list[str]:
        """`swarmbench headless [--staging] [--swarm]`: the point's settings are in its environment."""
        return [*cmdline.PROGRAM, *cmdline.headless(staging=self.staging, swarm=self.swarm)]

    def wait(self, timeout: float) -> int | None:
        try:
            return self.procs[0].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        # The headless runner handles SIGINT like Ctrl-C: it stops the master, then takes the stack down.
        os.kill(self.procs[0].pid, signal.SIGINT)


class SwarmRunner(ComposeRunner):
    """Each point is `python -m swarmbench headless --swarm`: WORKERS replicas over the swarm's nodes."""

    swarm = True

    def setup(self) -> None:
        from swarmbench.runner.swarm import check_swarm, swarm_env

        check_swarm(swarm_env(self.env)["SWARMBENCH_STACK"])


ENGINES = ("compose", "swarm")
"""ENGINE for `make sweep`: where each point's stack runs (LOCAL=1 runs local processes instead)."""


def check_engine(env: Mapping[str, str]) -> str:
    """ENGINE (default compose), or UsageError (one line) when it is not one of ENGINES."""
    engine = env.get("ENGINE") or "compose"
    if engine not in ENGINES:
        raise UsageError(f"ENGINE={engine!r} is not one of {', '.join(ENGINES)}")
    return engine


def point_runner(s: SweepSettings, sweep_dir: Path, env: dict[str, str]) -> PointRunner:
    """The runner LOCAL and ENGINE ask for."""
    engine = check_engine(env)
    if s.local:
        if engine != "compose":
            raise UsageError(f"LOCAL=1 runs local processes; it cannot be combined with ENGINE={engine}")
        return LocalRunner(s, sweep_dir, env)
    return (SwarmRunner if engine == "swarm" else ComposeRunner)(s, sweep_dir, env)


class LocalRunner(PointRunner):
    """Each point is the Go target on a free 127.0.0.1 port, a Locust master and N worker processes."""

    binary: Path | None = None
    port: int = 0
    external_host: bool = False  # True: each point's LOCUST_HOST is tested, no target is started (ab)
    _tmp: str | None = None
    _target: subprocess.Popen | None = None
    _master: subprocess.Popen | None = None
    _run_dir: Path | None = None  # the point's run folder (where a lost master's record goes)

    def setup(self) -> None:
        import importlib.util

        if importlib.util.find_spec("locust") is None:
            raise UsageError(
                "--local runs Locust on this machine: activate the venv (source .venv/bin/activate)"
            )
        if self.external_host:
            return  # nothing to build: each point's LOCUST_HOST is the target
        # One target port for the whole sweep: the host is part of every run's settings, and
        # analysis groups runs by settings (a new port per point would split the sweep apart).
        self.port = free_port()
        prebuilt = self.env.get("SWARMBENCH_TARGET_BIN")
        if prebuilt:
            self.binary = Path(prebuilt)
            return
        if shutil.which("go") is None:
            raise UsageError("--local builds the albums target from target/: Go is not installed")
        self._tmp = tempfile.mkdtemp(prefix="swarmbench-target-")
        self.binary = Path(self._tmp) / "albums"
        out = subprocess.run(
            ["go", "build", "-o", str(self.binary), "."],
            cwd=S.checkout() / "target",
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise UsageError(f"go build of target/ failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")

    def cleanup(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def start(self, p: Point, env: dict[str, str], log) -> None:
        mport = free_port()
        self.procs, self._target = [], None
        self._run_dir = self.sweep_dir / p.id
        url = env["LOCUST_HOST"] if self.external_host else self._start_target(env, log)
        # The same command lines the image's entrypoint builds (swarmbench.core.launch).
        master = Launch(
            role="master",
            locustfile=env.get("LOCUST_LOCUSTFILE"),
            headless=True,
            workers=p.workers,
            workers_wait_s=int(env.get("SWARMBENCH_WORKERS_WAIT") or DEFAULT_WORKERS_WAIT_S),
            run_time=self.s.run_time,
            bind_host="127.0.0.1",
            master_port=mport,
            host=url,
            results_dir=str(self.sweep_dir),
            run_id=p.id,
        )
        worker = Launch(
            role="worker", locustfile=env.get("LOCUST_LOCUSTFILE"), master_host="127.0.0.1", master_port=mport
        )
        loc_env = {k: v for k, v in env.items() if k != "LOCUST_LOCUSTFILE"}
        root = S.checkout()
        loc_env.setdefault("LOCUST_GIT_COMMIT", git_commit(root) or "")
        loc_env.setdefault("LOCUST_GIT_BRANCH", git_branch(root) or "")
        locust = [sys.executable, "-m", "locust"]
        self._master = _spawn([*locust, *master.argv()], loc_env, log)
        self.procs.append(self._master)
        self.procs += [_spawn([*locust, *worker.argv()], loc_env, log) for _ in range(p.workers)]

    def _start_target(self, env: dict[str, str], log) -> str:
        """The Go target on the sweep's port, with the point's environment; its URL once healthy."""
        assert self.binary is not None
        target_env = {
            **env,
            "PORT": str(self.port),
            "GOMAXPROCS": env.get("TARGET_CPUS") or DEFAULT_TARGET_CPUS,
        }
        self._target = _spawn([str(self.binary)], target_env, log)
        self.procs.append(self._target)
        url = f"http://127.0.0.1:{self.port}"
        if not wait_http(url + "/healthz", 15.0, self._target):
            raise _PointError(f"the target did not answer on {url}/healthz")
        return url

    def wait(self, timeout: float) -> int | None:
        master = self._master
        assert master is not None
        try:
            code = master.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        code, ended_at = salvage.shell_code(code), time.time()
        # Workers quit with the master; give them a moment, then make sure nothing is left.
        for proc in self.procs[self.procs.index(master) + 1 :]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
        self._stop_target()
        if self._run_dir is not None and salvage.lost(self._run_dir):
            # The master died (SIGKILL, OOM) before writing the run's record: the runner writes it.
            salvage.salvage(self._run_dir, code, ended_at=ended_at)
            return exits.MASTER_LOST
        return code

    def stop(self) -> None:
        # SIGTERM: Locust's graceful shutdown (the master quits its workers and writes run.json).
        if self._master is not None and self._master.poll() is None:
            self._master.send_signal(signal.SIGTERM)

    def _stop_target(self) -> None:
        if self._target and self._target.poll() is None:
            self._target.terminate()
            try:
                self._target.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._target.kill()
                self._target.wait()
        self.procs.clear()


class _PointError(Exception):
    """The point could not start; its message is the recorded reason."""


def last_error(log_path: Path) -> str | None:
    """The last line of a point's log that names an error (the reason a failed point records)."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if re.search(r"error|exception|unreachable|refused|cannot|failed", line, re.I):
            return line.strip()[-300:]
    return None


def classify(sweep_dir: Path, p: Point, code: int | None, log_path: Path) -> tuple[str, str | None]:
    """(status, reason) of a point whose processes have exited with CODE."""
    manifest = sweep_dir / p.id / MANIFEST
    if code not in exits.MEASURED:
        why = last_error(log_path) or "no error line in its log"
        return "failed", f"exit code {code}: {why}"
    if not manifest.is_file():
        return "failed", f"exit code {code} but no run.json in {p.id}/"
    try:
        m = RunManifest.read(manifest)
    except InputError as e:
        return "failed", f"unreadable run.json ({e.problem})"
    if m.partial:
        # A measurement of something other than the point asked for (lost generators, a target
        # that went away, a stop): not done, so a rerun of the sweep runs it again.
        last = m.last_event(RUN_END)
        return "failed", f"run {m.status}" + (f": {last}" if last else "")
    connected = m.workers or 0
    if connected != p.workers:
        return "failed", f"only {connected} of {p.workers} workers connected"
    if not m.requests:
        return "failed", "no request was made (target unreachable?)"
    return "done", None


def point_verdict(sweep_dir: Path, p: Point) -> str | None:
    try:
        m = RunManifest.read(sweep_dir / p.id / MANIFEST)
    except InputError:
        return None
    return m.verdict
