"""`python -m swarmbench sweep`: the scaling experiment in one command (what `make sweep` runs).

Workers x user classes (x target stores x request mixes) x repeats, every point one normal headless
run under results/<sweep-id>/<point-id>/, then `python -m analysis report` on the whole sweep.

- Order: the points of each repeat run in a shuffled order (seeded by the sweep id, so a resumed
  sweep keeps its plan), so slow drift of a shared machine does not masquerade as scaling.
- sweep.json (in the sweep folder) records the settings and every point's status: pending, done,
  failed (with its reason) or interrupted. It is rewritten atomically after every point.
- Resume: rerunning with the same sweep id runs only what is not done; a point folder left by an
  interrupted or failed attempt is moved aside to .aborted/<point-id>-<n>/ first (hidden, so the
  analysis never mixes it in; never deleted, never overwritten). Other settings under an existing
  sweep id are an error.
- Ctrl-C stops the current point cleanly (Locust writes what it has, the stack goes down), keeps
  every finished point and exits 130.

Standard library only, like the rest of swarmbench/: `--local` needs Locust (the venv) and Go.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from . import settings as S
from .compose import ROOT, git_commit, prepare_results, results_dir
from .errors import UsageError

SCHEMA_VERSION = 1
SWEEP_JSON = "sweep.json"
REPORT_DIR = "report"
ABORTED_DIR = ".aborted"
"""Where a failed or interrupted point's partial folder goes (hidden: analysis skips dot-folders)."""

DEFAULT_WORKERS = (1, 2, 4)
DEFAULT_CLASSES = ("AlbumsHttpUser", "AlbumsFastHttpUser")
DEFAULT_REPEATS = 2
DEFAULT_RUN_TIME = "20s"
DEFAULT_USERS = 50
DEFAULT_MODE = "strong"
MODES = ("strong", "weak")
STORES = ("mutex", "rwmutex", "syncmap", "sharded")
MIXES = ("default", "read-heavy", "post-heavy")
"""Must match locustfiles/_swarmbench/experiment.py MIXES (the plugin validates them again)."""

DEFAULT_TARGET_CPUS = "1"
"""--local: the target's GOMAXPROCS when TARGET_CPUS is unset, the same share compose gives it."""

POINT_OVERHEAD_S = 20.0
"""First ETA guess of a point's cost beyond its run time (stack start, spawn, stop, teardown);
replaced by the measured mean once a point has finished."""
POINT_GRACE_S = 180.0
"""A point may take this long beyond its run time before it is killed and recorded as failed
(image builds on a first compose run take most of it)."""
STOP_WAIT_S = 60.0
"""After Ctrl-C, how long the current point may take to stop cleanly before it is killed."""
DONE_EXIT_CODES = (0, 1, 3)
"""Locust exit codes that still make a measurement: 0 ok, 1 some requests failed, 3 a threshold
was broken (issue 5). 2 (configuration) and anything else mean the point did not run."""

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


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

    def identity(self) -> dict:
        """What must match for a rerun to resume this sweep (how it runs, local or not, may differ)."""
        d = asdict(self)
        d.pop("local")
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
    files = (env.get("LOCUST_LOCUSTFILE") or "locustfiles/albums.py").split(",")
    found: set[str] = set()
    for f in files:
        path = (ROOT / f.strip()) if not Path(f.strip()).is_absolute() else Path(f.strip())
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


def sweep_settings(args: Mapping[str, str | None], env: Mapping[str, str]) -> SweepSettings:
    """Validate everything before anything starts; UsageError (one line) on the first problem.

    ARGS: flag values (None = not given); each falls back to its make variable in ENV.
    """

    def get(key: str, var: str, default: str | None = None) -> str | None:
        v = args.get(key)
        if v is None or v == "":
            v = env.get(var) or None
        return v if v is not None else default

    workers = parse_workers(get("workers", "WORKERS", " ".join(map(str, DEFAULT_WORKERS))) or "")
    classes = tuple(parse_list("CLASSES", get("classes", "CLASSES", " ".join(DEFAULT_CLASSES)) or ""))
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
    repeats = S.positive_int("REPEATS", get("repeats", "REPEATS", str(DEFAULT_REPEATS)) or "")
    run_time = get("run_time", "RUN_TIME", DEFAULT_RUN_TIME) or DEFAULT_RUN_TIME
    seconds = S.timespan_seconds("RUN_TIME", run_time)
    users = S.positive_int("USERS", get("users", "USERS", str(DEFAULT_USERS)) or "")
    mode = (get("mode", "MODE", DEFAULT_MODE) or DEFAULT_MODE).lower()
    if mode not in MODES:
        raise UsageError(
            f"MODE={mode!r}: expected strong (total users fixed) or weak (users per worker fixed)"
        )
    wait = get("wait_time", "WAIT_TIME") or env.get("LOCUST_WAIT_TIME") or None
    if wait is not None:
        _check_wait(wait)
    stores = mixes = ()
    if get("stores", "STORES"):
        stores = check_choice("STORES", parse_list("STORES", get("stores", "STORES") or ""), STORES)
    if get("mixes", "MIXES"):
        mixes = check_choice("MIXES", parse_list("MIXES", get("mixes", "MIXES") or ""), MIXES)
    sweep_id = get("sweep_id", "SWEEP_ID") or default_sweep_id()
    if not _ID.match(sweep_id) or sweep_id in (".", ".."):
        raise UsageError(f"SWEEP_ID={sweep_id!r} must be a folder name (letters, digits, . _ + -)")
    local = bool(args.get("local")) or env.get("LOCAL", "") not in ("", "0", "false", "no")
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
    )


_WAIT = re.compile(r"^(between \S+ \S+|constant \S+|throughput \S+|pacing \S+)$")


def _check_wait(spec: str) -> None:
    words = spec.replace(",", " ").split()
    try:
        ok = bool(_WAIT.match(" ".join(words))) and all(float(w) >= 0 for w in words[1:])
    except ValueError:
        ok = False
    if not ok:
        raise UsageError(
            f"WAIT_TIME={spec!r}: expected 'between MIN MAX', 'constant S', 'throughput R' or 'pacing S'"
        )


# --- the plan ---------------------------------------------------------------------------------------


@dataclass
class Point:
    id: str
    repeat: int
    workers: int
    user_class: str
    users: int
    store: str | None = None
    mix: str | None = None
    status: str = "pending"  # pending | done | failed | interrupted
    reason: str | None = None
    attempts: int = 0
    exit_code: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    verdict: str | None = None

    @property
    def label(self) -> str:
        extra = "".join(f" {v}" for v in (self.store, self.mix) if v)
        return f"w{self.workers} {self.user_class}{extra} rep {self.repeat}"


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
        data = json.loads(path.read_text(encoding="utf-8"))
        recorded = data["settings"]
        by_id = {p["id"]: p for p in data["points"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path} is unreadable ({e}); move it away or choose another SWEEP_ID") from None
    if recorded != s.identity():
        diff = [k for k in s.identity() if recorded.get(k) != s.identity()[k]]
        raise UsageError(
            f"sweep {s.sweep_id!r} exists with other settings ({', '.join(diff)} differ); "
            "rerun with the same settings to resume, or choose another SWEEP_ID"
        )
    for p in points:
        old = by_id.get(p.id, {})
        for k in (
            "status",
            "reason",
            "attempts",
            "exit_code",
            "started_at",
            "ended_at",
            "duration_s",
            "verdict",
        ):
            if k in old:
                setattr(p, k, old[k])
        if p.status == "done" and not (sweep_dir / p.id / "run.json").is_file():
            p.status, p.reason = "pending", "its run folder is gone"
    return points


def save_state(sweep_dir: Path, s: SweepSettings, points: Sequence[Point], state: str) -> None:
    data = {
        "schema_version": SCHEMA_VERSION,
        "sweep_id": s.sweep_id,
        "state": state,  # running | complete | incomplete | interrupted
        "updated_at": _now(),
        "runner": "local" if s.local else "compose",
        "git_commit": git_commit() or None,
        "settings": s.identity(),
        "counts": {
            st: sum(p.status == st for p in points) for st in ("done", "failed", "interrupted", "pending")
        },
        "points": [asdict(p) for p in points],
    }
    tmp = sweep_dir / (SWEEP_JSON + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, sweep_dir / SWEEP_JSON)


def move_aside(sweep_dir: Path, pid: str) -> Path | None:
    """A point folder from an attempt that did not finish: keep it, out of the analysis' way."""
    folder = sweep_dir / pid
    if not folder.exists():
        return None
    aside = sweep_dir / ABORTED_DIR
    aside.mkdir(exist_ok=True)
    n = 1
    while (aside / f"{pid}-{n}").exists():
        n += 1
    folder.rename(aside / f"{pid}-{n}")
    return aside / f"{pid}-{n}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# --- progress ---------------------------------------------------------------------------------------


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    m, s = divmod(seconds, 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """`[3/8] w2 AlbumsFastHttpUser rep 1 · ETA 2m10s` on stderr, with a per-second countdown on a
    terminal (one line per point otherwise, e.g. in CI logs)."""

    def __init__(self, total: int, run_s: float) -> None:
        self.total, self.run_s = total, run_s
        self.durations: list[float] = []
        self.tty = sys.stderr.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def per_point(self) -> float:
        if self.durations:
            return sum(self.durations) / len(self.durations)
        return self.run_s + POINT_OVERHEAD_S

    def start(self, index: int, point: Point, remaining_after: int) -> None:
        t0 = time.monotonic()

        def line() -> str:
            left = max(0.0, self.per_point() - (time.monotonic() - t0)) + remaining_after * self.per_point()
            return f"[{index}/{self.total}] {point.label} · ETA {fmt_duration(left)}"

        if not self.tty:
            print(f"swarmbench: {line()}", file=sys.stderr, flush=True)
            return
        self._stop.clear()

        def tick() -> None:
            while not self._stop.wait(1.0):
                print(f"\r\x1b[K{line()}", end="", file=sys.stderr, flush=True)

        print(f"\r\x1b[K{line()}", end="", file=sys.stderr, flush=True)
        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()

    def finish(self, point: Point, elapsed: float) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._thread = None
        self.durations.append(elapsed)
        end = "\r\x1b[K" if self.tty else ""
        note = f" ({point.reason})" if point.reason and point.status != "done" else ""
        verdict = f", {point.verdict}" if point.verdict else ""
        print(
            f"{end}swarmbench: {point.id}: {point.status}{verdict} in {fmt_duration(elapsed)}{note}",
            file=sys.stderr,
            flush=True,
        )


# --- running one point ------------------------------------------------------------------------------


@dataclass
class Outcome:
    exit_code: int | None
    reason: str | None = None
    interrupted: bool = False


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
    only, which then stops the point's processes in order (_signal_group)."""
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)  # each child leads its own session: this reaches its children


class ComposeRunner(PointRunner):
    """Each point is `python -m swarmbench headless` (the compose stack up, run, down)."""

    def setup(self) -> None:
        from .compose import check_docker

        check_docker()

    def start(self, p: Point, env: dict[str, str], log) -> None:
        env["SWARMBENCH_RESULTS"] = str(self.sweep_dir)
        self.procs = [_spawn([sys.executable, "-m", "swarmbench", "headless"], env, log)]

    def wait(self, timeout: float) -> int | None:
        try:
            return self.procs[0].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        # The headless runner handles SIGINT like Ctrl-C: it stops the master, then takes the stack down.
        os.kill(self.procs[0].pid, signal.SIGINT)


class LocalRunner(PointRunner):
    """Each point is the Go target on a free 127.0.0.1 port, a Locust master and N worker processes."""

    binary: Path | None = None
    port: int = 0
    _tmp: str | None = None
    _target: subprocess.Popen | None = None

    def setup(self) -> None:
        import importlib.util

        if importlib.util.find_spec("locust") is None:
            raise UsageError(
                "--local runs Locust on this machine: activate the venv (source .venv/bin/activate)"
            )
        # One target port for the whole sweep: the host is part of every run's settings, and
        # analysis groups runs by settings (a new port per point would split the sweep apart).
        self.port = _free_port()
        prebuilt = self.env.get("SWARMBENCH_TARGET_BIN")
        if prebuilt:
            self.binary = Path(prebuilt)
            return
        if shutil.which("go") is None:
            raise UsageError("--local builds the albums target from target/: Go is not installed")
        self._tmp = tempfile.mkdtemp(prefix="swarmbench-target-")
        self.binary = Path(self._tmp) / "albums"
        out = subprocess.run(
            ["go", "build", "-o", str(self.binary), "."], cwd=ROOT / "target", capture_output=True, text=True
        )
        if out.returncode != 0:
            raise UsageError(f"go build of target/ failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")

    def cleanup(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def start(self, p: Point, env: dict[str, str], log) -> None:
        assert self.binary is not None
        port, mport = self.port, _free_port()
        target_env = {**env, "PORT": str(port), "GOMAXPROCS": env.get("TARGET_CPUS") or DEFAULT_TARGET_CPUS}
        self._target = _spawn([str(self.binary)], target_env, log)
        self.procs = [self._target]
        url = f"http://127.0.0.1:{port}"
        if not _wait_http(url + "/healthz", 15.0, self._target):
            raise _PointError(f"the target did not answer on {url}/healthz")
        files = "locustfiles/swarmbench_plugin.py," + (
            env.get("LOCUST_LOCUSTFILE") or "locustfiles/albums.py"
        )
        common = [sys.executable, "-m", "locust", "-f", files]
        master = [
            *common,
            "--master",
            "--headless",
            "--master-bind-host=127.0.0.1",
            f"--master-bind-port={mport}",
            f"--expect-workers={p.workers}",
            "--expect-workers-max-wait=60",
            f"--run-time={self.s.run_time}",
            f"--host={url}",
            f"--results-dir={self.sweep_dir}",
            f"--run-id={p.id}",
        ]
        loc_env = {k: v for k, v in env.items() if k != "LOCUST_LOCUSTFILE"}
        loc_env.setdefault("LOCUST_GIT_COMMIT", git_commit())
        self.procs.append(_spawn(master, loc_env, log))
        worker = [*common, "--worker", "--master-host=127.0.0.1", f"--master-port={mport}"]
        self.procs += [_spawn(worker, loc_env, log) for _ in range(p.workers)]

    def wait(self, timeout: float) -> int | None:
        master = self.procs[1]
        try:
            code = master.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        # Workers quit with the master; give them a moment, then make sure nothing is left.
        for proc in self.procs[2:]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
        self._stop_target()
        return code

    def stop(self) -> None:
        # SIGTERM: Locust's graceful shutdown (the master quits its workers and writes run.json).
        if len(self.procs) > 1 and self.procs[1].poll() is None:
            self.procs[1].send_signal(signal.SIGTERM)

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


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float, proc: subprocess.Popen) -> bool:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except OSError:
            time.sleep(0.1)
    return False


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
    manifest = sweep_dir / p.id / "run.json"
    if code not in DONE_EXIT_CODES:
        why = last_error(log_path) or "no error line in its log"
        return "failed", f"exit code {code}: {why}"
    if not manifest.is_file():
        return "failed", f"exit code {code} but no run.json in {p.id}/"
    try:
        m = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return "failed", f"unreadable run.json ({e})"
    connected = m.get("workers_connected") if m.get("mode") != "local" else 1
    if connected != p.workers:
        return "failed", f"only {connected} of {p.workers} workers connected"
    if not (m.get("totals") or {}).get("requests"):
        return "failed", "no request was made (target unreachable?)"
    return "done", None


def point_verdict(sweep_dir: Path, p: Point) -> str | None:
    try:
        m = json.loads((sweep_dir / p.id / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (m.get("bottleneck") or {}).get("verdict")


# --- the sweep --------------------------------------------------------------------------------------


def run_sweep(
    s: SweepSettings, environ: Mapping[str, str], report: bool = True, dry_run: bool = False
) -> int:
    """Run (or resume) the sweep. 0 all points done, 1 some failed, 130 interrupted."""
    env = dict(environ)
    root = results_dir(env)
    sweep_dir = root / s.sweep_id
    points = load_state(sweep_dir, s) if sweep_dir.exists() else plan(s)
    todo = [p for p in points if p.status != "done"]
    if dry_run:
        for i, p in enumerate(points, 1):
            print(f"{i:3d} {p.id} users={p.users} [{p.status}]")
        return 0
    if not todo:
        print(f"swarmbench: sweep {s.sweep_id}: all {len(points)} points already done; nothing to run")
        if report and not (sweep_dir / REPORT_DIR / "report.html").exists():
            return 0 if make_report(sweep_dir) == 0 else 1
        return 0
    runner: PointRunner = (LocalRunner if s.local else ComposeRunner)(s, sweep_dir, env)
    runner.setup()
    prepare_results(env, sweep_dir)
    runner.env = env
    logs = sweep_dir / ".logs"
    logs.mkdir(exist_ok=True)
    print(
        f"swarmbench: sweep {s.sweep_id}: {len(todo)} of {len(points)} points to run "
        f"({'local processes' if s.local else 'docker compose'}) -> {sweep_dir}/",
        file=sys.stderr,
    )
    save_state(sweep_dir, s, points, "running")
    progress = Progress(len(todo), S.timespan_seconds("RUN_TIME", s.run_time))
    interrupted = False
    try:
        for i, p in enumerate(todo, 1):
            if run_point(runner, s, sweep_dir, p, logs, progress, i, len(todo) - i):
                interrupted = True
                break
            save_state(sweep_dir, s, points, "running")
    except KeyboardInterrupt:  # between two points: nothing is running
        interrupted = True
    finally:
        state = (
            "interrupted"
            if interrupted
            else ("complete" if all(p.status == "done" for p in points) else "incomplete")
        )
        save_state(sweep_dir, s, points, state)
        runner.cleanup()
    done = sum(p.status == "done" for p in points)
    failed = [p for p in points if p.status == "failed"]
    if interrupted:
        print(
            f"swarmbench: interrupted; {done} of {len(points)} points kept. Resume with the same settings "
            f"and SWEEP_ID={s.sweep_id}",
            file=sys.stderr,
        )
        return 128 + signal.SIGINT
    for p in failed:
        print(f"swarmbench: point {p.id} failed: {p.reason}", file=sys.stderr)
    if report and done and make_report(sweep_dir) != 0:
        return 1
    return 1 if failed else 0


def run_point(
    runner: PointRunner,
    s: SweepSettings,
    sweep_dir: Path,
    p: Point,
    logs: Path,
    progress: Progress,
    index: int,
    remaining_after: int,
) -> bool:
    """Run one point and record its status; True when the user interrupted it."""
    moved = move_aside(sweep_dir, p.id)
    if moved:
        print(f"swarmbench: kept the folder of an earlier attempt at {moved}", file=sys.stderr)
    p.attempts += 1
    p.started_at, p.ended_at, p.reason, p.exit_code, p.verdict = _now(), None, None, None, None
    limit = S.timespan_seconds("RUN_TIME", s.run_time) + POINT_GRACE_S
    log_path = logs / f"{p.id}.log"
    t0 = time.monotonic()
    progress.start(index, p, remaining_after)
    interrupted = False
    with open(log_path, "ab") as log:
        try:
            try:
                runner.start(p, runner.point_env(p), log)
                code = None
                while code is None:
                    code = runner.wait(0.5)
                    if code is None and time.monotonic() - t0 > limit:
                        runner.kill()
                        raise _PointError(f"did not finish within {fmt_duration(limit)}; killed")
                p.exit_code = code
                p.status, p.reason = classify(sweep_dir, p, code, log_path)
            except KeyboardInterrupt:
                interrupted = True
                _stop_cleanly(runner)
                p.status, p.reason = "interrupted", "stopped by Ctrl-C"
        except _PointError as e:
            runner.kill()
            p.status, p.reason = "failed", str(e)
    runner.kill()  # nothing of this point may outlive it (a no-op after a clean end)
    p.ended_at = _now()
    p.duration_s = round(time.monotonic() - t0, 1)
    if p.status == "done":
        p.verdict = point_verdict(sweep_dir, p)
    else:
        move_aside(sweep_dir, p.id)  # never leave a partial folder where the analysis looks
    progress.finish(p, time.monotonic() - t0)
    return interrupted


def _stop_cleanly(runner: PointRunner) -> None:
    """Ctrl-C during a point: ask it to stop, wait for it (a second Ctrl-C kills it)."""
    try:
        runner.stop()
        deadline = time.monotonic() + STOP_WAIT_S
        while runner.wait(0.5) is None:
            if time.monotonic() > deadline:
                runner.kill()
                break
    except KeyboardInterrupt:
        runner.kill()
    except (ProcessLookupError, IndexError):
        pass


def analysis_python() -> str:
    """The analysis needs pandas and matplotlib: the project's venv when there is one."""
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def make_report(sweep_dir: Path) -> int:
    out = sweep_dir / REPORT_DIR
    cmd = [analysis_python(), "-m", "analysis", "report", str(sweep_dir), "-o", str(out)]
    cmd += ["--title", f"Swarmbench sweep {sweep_dir.name}"]
    print(f"swarmbench: python {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    code = subprocess.run(cmd, cwd=ROOT).returncode
    if code != 0:
        print(f"swarmbench: the report failed (exit {code}); rerun: {' '.join(cmd)}", file=sys.stderr)
    return code
