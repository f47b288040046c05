"""Stop drills: end a real compose stack mid-run, each way a user can, and check what was saved.

A run ended early must still leave a complete record: run.json (status `interrupted`, or `complete`
when it had already ended; `started_from`), the run page report.html, Locust's locust_report.html
(core's RUN_FILES) and the CSVs, with the CSV total == run.json's
totals == what the target served. Losing it was a race (workers and master stopping in some order),
so one pass proves nothing: `tests/stop_paths.py` runs each path many times, the tests a few.

Paths (PATHS), all through a real `docker compose up` attached to a pseudo-terminal, as a user runs it:

    ui-ctrlc        web UI, a test started with POST /swarm, then SIGINT to compose (Ctrl-C)
    ui-down         the same, ended by `docker compose down` from another terminal
    headless-ctrlc  `docker compose -f docker-compose.yml -f compose/headless.yml up`, then Ctrl-C
    headless-down   the same, ended by `docker compose down`

Everything talks to 127.0.0.1 and the stack's own containers; every step is bounded in time and the
stack always comes down.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from integrity import SPAWNED, logged

from swarmbench.core import folder
from swarmbench.runner.compose import COMPOSE_FILES, compose_cmd, prepare_results
from swarmbench.runner.points import free_port, wait_http_or_raise

PATHS = ("ui-ctrlc", "ui-down", "headless-ctrlc", "headless-down")
START_TIMEOUT_S = 240.0
"""Containers up, workers connected, users spawned (a cold image start included)."""
END_TIMEOUT_S = 150.0
"""From the stop to `docker compose up` returning: above every stop_grace_period summed."""


@dataclass
class Drill:
    """One try of one path. `problems` empty = the record was complete and exact."""

    path: str
    workdir: Path
    workers: int = 2
    users: int = 10
    run_s: float = 8.0
    user_class: str = "AlbumsFastHttpUser"
    extra_env: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    manifest: dict | None = None
    run_dir: Path | None = None
    seconds: float = 0.0

    @property
    def ui(self) -> bool:
        return self.path.startswith("ui-")

    @property
    def files(self) -> tuple[str, ...]:
        return COMPOSE_FILES[:1] if self.ui else COMPOSE_FILES

    @property
    def log(self) -> Path:
        return self.workdir / "compose-up.log"


def clean_env(workdir: Path, **extra: str) -> dict[str, str]:
    """A stack of its own: project name, results folder; nothing inherited from LOCUST_*/SWARMBENCH_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "SWARMBENCH_", "COMPOSE_"))}
    results = workdir / "results"
    env.update(COMPOSE_PROJECT_NAME=f"sbstop-{uuid.uuid4().hex[:8]}", SWARMBENCH_RESULTS=str(results))
    env.update(extra)
    prepare_results(env, results)
    return env


def _compose(d: Drill, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        compose_cmd(*args, files=d.files), env=env, capture_output=True, text=True, timeout=timeout
    )


@contextlib.contextmanager
def attached_up(d: Drill, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """`docker compose up --scale worker=N` with a pseudo-terminal as its terminal (what a user sees,
    copied to d.log); the stack is always taken down afterwards."""
    primary, secondary = os.openpty()
    proc = subprocess.Popen(
        compose_cmd("up", "--scale", f"worker={d.workers}", files=d.files),
        env=env, stdin=secondary, stdout=secondary, stderr=secondary, start_new_session=True,
    )  # fmt: skip
    os.close(secondary)
    reader = threading.Thread(target=_copy, args=(primary, d.log), daemon=True)
    try:
        reader.start()
        yield proc
    finally:
        if proc.poll() is None:  # a drill that failed half-way
            proc.kill()
        proc.wait()
        # Every container's whole log (compose stops showing them at Ctrl-C), for a failed try.
        (d.workdir / "stack.log").write_text(_compose(d, env, "logs", "--no-color", "--timestamps").stdout)
        _compose(d, env, "down", "--remove-orphans", "--timeout", "2")
        reader.join(timeout=5)
        with contextlib.suppress(OSError):
            os.close(primary)


def _copy(fd: int, log: Path) -> None:
    with log.open("wb") as out:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal's other end closed: compose exited
                return
            if not chunk:
                return
            out.write(chunk)
            out.flush()


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def start_ui_test(d: Drill, base: str) -> None:
    """Wait until the UI lists every worker, then Start a test through its HTTP API."""
    deadline = time.monotonic() + START_TIMEOUT_S
    wait_http_or_raise(base + "/", timeout=START_TIMEOUT_S)
    while _get(base + "/stats/requests").get("worker_count") != d.workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the web UI never listed {d.workers} workers")
        time.sleep(0.5)
    form = {"user_count": d.users, "spawn_rate": d.users, "user_classes": d.user_class}
    with urllib.request.urlopen(base + "/swarm", data=urllib.parse.urlencode(form).encode(), timeout=10) as r:
        if not json.loads(r.read()).get("success"):
            raise RuntimeError("POST /swarm did not start a test")


def wait_for_log(d: Drill, text: str | tuple[str, ...]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (d.log.exists() and logged(text, d.log.read_text(errors="replace"))):
        if time.monotonic() > deadline:
            raise TimeoutError(f"compose's output never showed {text!r}")
        time.sleep(0.3)


def run_drill(d: Drill) -> Drill:
    """Start the stack, start a test, end it the path's way, then check the folder."""
    d.workdir.mkdir(parents=True, exist_ok=True)
    web = free_port()
    settings = {"LOCUST_WEB_PORT": str(web), "SWARMBENCH_METRICS_PORT": str(free_port())}
    if not d.ui:
        settings |= {"WORKERS": str(d.workers), "LOCUST_USERS": str(d.users), "LOCUST_RUN_TIME": "10m",
                     "LOCUST_SPAWN_RATE": str(d.users), "LOCUST_USER_CLASSES": d.user_class}  # fmt: skip
    env = clean_env(d.workdir, **settings, **d.extra_env)
    started = time.monotonic()
    try:
        with attached_up(d, env) as proc:
            if d.ui:
                start_ui_test(d, f"http://127.0.0.1:{web}")
            wait_for_log(d, SPAWNED)
            time.sleep(d.run_s)
            stopped = time.monotonic()
            if d.path.endswith("-ctrlc"):
                os.kill(compose_process(proc.pid), signal.SIGINT)  # Ctrl-C, as compose gets it
            else:
                _compose(d, env, "down", timeout=END_TIMEOUT_S)  # a user's plain `docker compose down`
            if not wait_stopped(proc, env["COMPOSE_PROJECT_NAME"], stopped + END_TIMEOUT_S):
                d.problems.append(f"the stack was still running {END_TIMEOUT_S:.0f} s after the stop")
            d.seconds = round(time.monotonic() - stopped, 1)
    except (TimeoutError, RuntimeError, OSError) as e:
        d.problems.append(f"could not run the drill: {e}")
    d.seconds = d.seconds or round(time.monotonic() - started, 1)
    if not d.problems:
        check_record(d)
    return d


def compose_process(pid: int) -> int:
    """The compose program itself: the last of PID's chain of children (`docker` runs the compose
    plugin, here possibly through a shim). A terminal's Ctrl-C reaches them all, but the docker CLI
    waits for its plugin and leaves the signal to it; a shim in between may not (it dies and takes the
    plugin's connection to the CLI with it), so the drill signals compose alone."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    while children.get(pid):
        pid = max(children[pid])
    return pid


def running(project: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={project}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return out.stdout.split()


def wait_stopped(proc: subprocess.Popen, project: str, deadline: float) -> bool:
    """Until `up` returned and none of the project's containers runs. Both: a `docker compose` that
    is a wrapper (a plugin shim) can return on SIGINT while the real compose is still stopping the
    stack, as a terminal's Ctrl-C reaches every process of the group."""
    while proc.poll() is None or running(project):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def stats_total(run_dir: Path) -> int | None:
    with open(run_dir / folder.STATS_CSV, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("Name") == "Aggregated":
                return int(row["Request Count"])
    return None


def check_record(d: Drill) -> None:
    """The saved folder: one, complete, interrupted (or complete), exact."""
    results = d.workdir / "results"
    folders = [p for p in results.iterdir() if p.is_dir()] if results.exists() else []
    if len(folders) != 1:
        d.problems.append(f"expected one run folder, found {len(folders)}")
        return
    d.run_dir = folders[0]
    missing = [n for n in folder.RUN_FILES if not (d.run_dir / n).is_file()]
    if missing:
        d.problems.append("missing " + ", ".join(missing))
        return
    m = d.manifest = json.loads((d.run_dir / folder.MANIFEST).read_text())
    expected_from = "ui" if d.ui else "headless"
    if m.get("status") not in ("interrupted", "complete") or m.get("started_from") != expected_from:
        d.problems.append(f"status {m.get('status')!r}, started_from {m.get('started_from')!r}")
    csv_total, totals = stats_total(d.run_dir), (m.get("totals") or {}).get("requests")
    served = (m.get("target") or {}).get("album_requests")
    if not csv_total or not (csv_total == totals == served):
        d.problems.append(f"counts differ: CSV {csv_total}, run.json {totals}, target {served}")
    if m.get("workers_connected") != d.workers or not d.run_dir.name.split("-")[0].endswith(f"_w{d.workers}"):
        d.problems.append(f"folder {d.run_dir.name} / workers_connected {m.get('workers_connected')}")


def summary(d: Drill) -> str:
    if d.problems:
        return f"{d.path}: FAILED after {d.seconds} s: " + "; ".join(d.problems)
    m = d.manifest or {}
    return (
        f"{d.path}: ok in {d.seconds} s: {m.get('status')}, {m['totals']['requests']} requests "
        f"(CSV = run.json = target), {d.run_dir.name if d.run_dir else '?'}"
    )
