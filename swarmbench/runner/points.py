"""How one sweep point runs: `python -m swarmbench headless` (compose), or local processes (the Go
target, a Locust master and N workers on 127.0.0.1). Both write the same run folder; `classify`
then decides from its run.json whether the point made a measurement.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from swarmbench.core import exits
from swarmbench.core.errors import InputError, UsageError
from swarmbench.core.folder import MANIFEST
from swarmbench.core.gitinfo import git_commit
from swarmbench.core.launch import DEFAULT_WORKERS_WAIT_S, Launch
from swarmbench.core.manifest import RunManifest
from swarmbench.core.status import RUN_END
from swarmbench.core.sweepstate import SweepPoint as Point
from swarmbench.runner.net import free_port, wait_http
from swarmbench.runner.paths import ROOT
from swarmbench.runner.plan import SweepSettings

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
    only, which then stops the point's processes in order (_signal_group)."""
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)  # each child leads its own session: this reaches its children


class ComposeRunner(PointRunner):
    """Each point is `python -m swarmbench headless` (the compose stack up, run, down)."""

    headless_args: tuple[str, ...] = ()

    def setup(self) -> None:
        from swarmbench.runner.compose import check_docker

        check_docker()

    def start(self, p: Point, env: dict[str, str], log) -> None:
        env["SWARMBENCH_RESULTS"] = str(self.sweep_dir)
        cmd = [sys.executable, "-m", "swarmbench", "headless", *self.headless_args]
        self.procs = [_spawn(cmd, env, log)]

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

    headless_args = ("--swarm",)

    def setup(self) -> None:
        from swarmbench.runner.swarm import check_swarm, swarm_env

        check_swarm(swarm_env(self.env)["SWARMBENCH_STACK"])


ENGINES = ("compose", "swarm")
"""ENGINE for `make sweep`: where each point's stack runs (LOCAL=1 runs local processes instead)."""


def point_runner(s: SweepSettings, sweep_dir: Path, env: dict[str, str]) -> PointRunner:
    """The runner LOCAL and ENGINE ask for."""
    engine = env.get("ENGINE") or "compose"
    if engine not in ENGINES:
        raise UsageError(f"ENGINE={engine!r} is not one of {', '.join(ENGINES)}")
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
            ["go", "build", "-o", str(self.binary), "."], cwd=ROOT / "target", capture_output=True, text=True
        )
        if out.returncode != 0:
            raise UsageError(f"go build of target/ failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")

    def cleanup(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def start(self, p: Point, env: dict[str, str], log) -> None:
        mport = free_port()
        self.procs, self._target = [], None
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
        loc_env.setdefault("LOCUST_GIT_COMMIT", git_commit(ROOT) or "")
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
        # Workers quit with the master; give them a moment, then make sure nothing is left.
        for proc in self.procs[self.procs.index(master) + 1 :]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
        self._stop_target()
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
