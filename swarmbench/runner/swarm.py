"""`python -m swarmbench headless --swarm`: the same headless run as a Docker Swarm stack.

Deploy compose/swarm.yml (+ the target, + the headers secret) to the swarm this engine manages,
with WORKERS worker replicas on any node and the master on the node that holds results/; follow
the master's log; return its exit code; remove the stack whatever happens (Ctrl-C included); then
record in run.json that swarm ran it and on which nodes. A task that cannot start (an image a node
lacks, a placement no node satisfies) ends the run with one line naming it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from swarmbench.core import exits
from swarmbench.core.exits import InputError, UsageError
from swarmbench.core.folder import write_json_atomic
from swarmbench.core.manifest import Node, Nodes, RunManifest
from swarmbench.runner.compose import COMPOSE_FILES, check_docker, compose_cmd, stack_env
from swarmbench.runner.settings import Headless, checkout, display, timespan_seconds
from swarmbench.runner.terminal import Console, run_folders

STACK_FILE = "compose/swarm.yml"
TARGET_FILE = "compose/swarm-target.yml"
"""The bundled target; left out in staging mode."""
HEADERS_FILE = "compose/swarm-headers.yml"
"""SWARMBENCH_HEADERS_FILE as a swarm secret (only when it is set)."""
DEFAULT_STACK = "swarmbench"
"""The stack's name (SWARMBENCH_STACK): services are <stack>_master, <stack>_worker, <stack>_target."""
ENGINE = "swarm"
"""run.json's `engine` for a run made here."""
POLL_S = 1.0
"""How often the tasks' states are read while the run goes on."""
START_GRACE_S = 15.0
"""A task still pending with a scheduler error after this long cannot start (no node fits it)."""
STOP_WAIT_S = 40.0
"""After Ctrl-C, how long the master may take to write its results (its stop_grace_period + 10 s)."""
REMOVE_WAIT_S = 60.0
"""How long `docker stack rm` may take to remove the containers and the network before we go on."""
LOG_DRAIN_S = 3.0
"""After the master ended, how long its last log lines may take to arrive."""
MAX_RUN_GRACE_S = 300.0
"""The master may take this long beyond its run time (image start, worker wait) before it is stopped."""
TERMINAL = frozenset({"complete", "failed", "shutdown", "rejected", "orphaned", "remove"})
"""Swarm task states after which the task's container will not run (again)."""

_STACK = re.compile(r"^[a-z0-9][a-z0-9_-]{0,40}$")
_CONSTRAINT = re.compile(r"^[A-Za-z0-9_.-]+ *(==|!=) *[A-Za-z0-9_.-]+$")
_REGISTRY = re.compile(r"^[A-Za-z0-9.-]+(:\d{1,5})?(/[a-z0-9._-]+)*$")
CONSTRAINTS = ("SWARMBENCH_MASTER_CONSTRAINT", "SWARMBENCH_WORKER_CONSTRAINT", "SWARMBENCH_TARGET_CONSTRAINT")
"""Placement constraints the stack file reads, e.g. node.labels.swarmbench==master."""
COMPOSE_ONLY = ("SWARMBENCH_MOUNT", "SWARMBENCH_NETWORK")
"""Host paths and local networks do not span nodes: refused in swarm mode."""


class SwarmError(Exception):
    """The stack could not run; its message is the one line the user sees."""


@dataclass(frozen=True)
class Task:
    """One swarm task (a container the orchestrator meant to run), from `docker inspect`."""

    id: str
    service: str  # master | worker | target
    node: str  # node id ("" while unscheduled)
    state: str
    desired: str
    error: str
    exit_code: int | None
    started: bool  # it got a container

    @classmethod
    def from_inspect(cls, d: dict, services: Mapping[str, str]) -> Task:
        """D: `docker inspect` of a task; SERVICES: short service id -> name within the stack."""
        status = d.get("Status") or {}
        container = status.get("ContainerStatus") or {}
        return cls(
            id=d["ID"],
            service=services.get(d.get("ServiceID", "")[:12], "?"),
            node=d.get("NodeID") or "",
            state=status.get("State", ""),
            desired=d.get("DesiredState", ""),
            error=status.get("Err") or "",
            exit_code=container.get("ExitCode") if container.get("ContainerID") else None,
            started=bool(container.get("ContainerID")),
        )


def docker(*args: str, check: bool = True, env: Mapping[str, str] | None = None) -> str:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, env=env)
    if check and out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise SwarmError(f"`docker {' '.join(args[:3])}` failed: {why}")
    return out.stdout


# --- before: settings, the swarm, images -------------------------------------------------------


def swarm_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The stack's environment: the validated settings plus what swarm needs spelled out."""
    env = dict(environ)
    for name in COMPOSE_ONLY:
        if env.get(name):
            raise UsageError(f"{name} is for docker compose on one machine; swarm runs the image's own files")
    stack = env.get("SWARMBENCH_STACK") or DEFAULT_STACK
    if not _STACK.match(stack):
        raise UsageError(f"SWARMBENCH_STACK={stack!r} is not a stack name (lowercase letters, digits, _ -)")
    env["SWARMBENCH_STACK"] = stack
    for name in CONSTRAINTS:
        if env.get(name) and not _CONSTRAINT.match(env[name]):
            raise UsageError(f"{name}={env[name]!r} is not a placement constraint like node.role==manager")
    registry = env.get("SWARMBENCH_REGISTRY", "").strip()
    if registry and not _REGISTRY.match(registry):
        raise UsageError(f"SWARMBENCH_REGISTRY={registry!r} is not a registry address like host:5000")
    env["SWARMBENCH_IMAGE_PREFIX"] = f"{registry}/" if registry else ""
    for name, value in env.items():
        if name.startswith("LOCUST_") and "\n" in value:
            raise UsageError(f"{name} must be one line")
    return env


def check_swarm(stack: str) -> None:
    """This engine is a manager of an active swarm, and the stack name is free."""
    check_docker()
    state = docker("info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}").split()
    if not state or state[0] != "active":
        raise UsageError(
            "this Docker engine is not part of a swarm: `docker swarm init` (one machine) or join one "
            "(docs/swarm-kubernetes.md)"
        )
    if state[1:] != ["true"]:
        raise UsageError("this Docker engine is a swarm worker: run `make swarm` on a manager node")
    if stack in docker("stack", "ls", "--format", "{{.Name}}").split():
        raise UsageError(
            f"a stack named {stack!r} is already deployed: `docker stack rm {stack}` or set SWARMBENCH_STACK"
        )


def stack_files(settings: Headless) -> list[str]:
    files = [STACK_FILE]
    if not settings.staging:
        files.append(TARGET_FILE)
    if settings.headers_file:
        files.append(HEADERS_FILE)
    return files


def build_images(env: dict[str, str], staging: bool, console: Console | None = None) -> None:
    """Build the images with compose (swarm ignores `build`); with SWARMBENCH_REGISTRY, tag and push
    them there so every node can pull them. CONSOLE: a run's terminal, whose log takes the output
    (else it is printed)."""
    services = ["master"] if staging else ["master", "target"]
    files = COMPOSE_FILES[:1]
    build = compose_cmd("build", "--quiet", *services, files=files)
    if console is None:
        if subprocess.run(build, env=env).returncode != 0:
            raise SwarmError("building the images failed (see above)")
    else:
        console.phase("building the images")
        if console.run(build, env) != 0:
            raise SwarmError(f"building the images failed (its output: {display(console.log_path)})")
    prefix = env["SWARMBENCH_IMAGE_PREFIX"]
    if not prefix:
        return
    out = subprocess.run(
        compose_cmd("config", "--images", *services, files=files), env=env, capture_output=True, text=True
    )
    for image in sorted(set(out.stdout.split())):
        docker("tag", image, prefix + image)
        if console is None:
            print(f"swarmbench: pushing {prefix}{image}", flush=True)
        else:
            console.phase(f"pushing {prefix}{image}")
        docker("push", "--quiet", prefix + image)


def write_env_file(env: Mapping[str, str]) -> str:
    """The LOCUST_* settings that are set, for the stack's env_file: passed only when set, so
    locust.conf decides the rest (as compose's `- LOCUST_USERS` entries do)."""
    fd, path = tempfile.mkstemp(prefix="swarmbench-env-", suffix=".env")
    with os.fdopen(fd, "w") as f:
        for name, value in sorted(env.items()):
            if name.startswith("LOCUST_") and value:
                f.write(f"{name}={value}\n")
    return path


# --- during: deploy, follow, stop --------------------------------------------------------------


def tasks(stack: str) -> list[Task]:
    """Every task of the stack, old ones included (a replaced worker, the master that ended)."""
    services = {}
    for line in docker("stack", "services", "--format", "{{.ID}} {{.Name}}", stack, check=False).splitlines():
        sid, _, name = line.partition(" ")
        services[sid[:12]] = name.removeprefix(f"{stack}_")
    ids = docker("stack", "ps", "-q", "--no-trunc", stack, check=False).split()
    if not ids:
        return []
    found = json.loads(docker("inspect", "--type", "task", *ids, check=False) or "[]")
    return [Task.from_inspect(d, services) for d in found]


def cannot_start(all_tasks: list[Task], pending_since: dict[str, float], now: float) -> str | None:
    """The first task that will never run: rejected by its node, or unschedulable for too long."""
    for t in all_tasks:
        if t.state == "rejected":
            return f"{t.service} task cannot start: {t.error or 'rejected'}"
        if t.state == "pending" and t.error:
            since = pending_since.setdefault(t.id, now)
            if now - since >= START_GRACE_S:
                return f"{t.service} task cannot be placed on any node: {t.error}"
    return None


def follow(stack: str, deadline_s: float) -> int:
    """Wait for the master's task to end; its exit code. SwarmError when a task cannot start."""
    pending_since: dict[str, float] = {}
    start = time.monotonic()
    while True:
        now = time.monotonic()
        current = tasks(stack)
        masters = [t for t in current if t.service == "master"]
        if masters and masters[0].state in TERMINAL:
            m = masters[0]
            if m.exit_code is None:
                raise SwarmError(f"master task cannot start: {m.error or m.state}")
            return m.exit_code
        problem = cannot_start(current, pending_since, now)
        if problem:
            raise SwarmError(problem)
        if now - start > deadline_s:
            raise SwarmError(f"the master did not finish within {deadline_s:.0f} s; stopped it")
        time.sleep(POLL_S)


def stop_master(stack: str) -> None:
    """SIGTERM the master (Locust's clean shutdown writes what it has) and wait for it to end."""
    docker("service", "scale", "--detach", f"{stack}_master=0", check=False)
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if all(t.state in TERMINAL for t in tasks(stack) if t.service == "master"):
            return
        time.sleep(POLL_S)


def remove_stack(stack: str) -> None:
    """`docker stack rm`, then wait until its containers and network are really gone."""
    docker("stack", "rm", stack, check=False)
    deadline = time.monotonic() + REMOVE_WAIT_S
    label = f"label=com.docker.stack.namespace={stack}"
    while time.monotonic() < deadline:
        left = docker("ps", "-aq", "--filter", label, check=False).split()
        nets = docker("network", "ls", "-q", "--filter", label, check=False).split()
        if not left and not nets:
            return
        time.sleep(POLL_S)
    print(
        f"swarmbench: warning: stack {stack} still has containers after {REMOVE_WAIT_S:.0f} s",
        file=sys.stderr,
    )


# --- after: run.json -------------------------------------------------------------------------------


def placement(all_tasks: list[Task]) -> Nodes:
    """Where each part ran: run.json's `nodes` (node id, hostname, role; replicas per worker node)."""
    started = [t for t in all_tasks if t.started]
    ids = sorted({t.node for t in started if t.node})
    info: dict[str, Node] = {}
    if ids:
        # docker's own JSON of each node, read through the schema's record (one shape for both)
        fmt = '{"id": {{json .ID}}, "hostname": {{json .Description.Hostname}}, "role": {{json .Spec.Role}}}'
        for line in docker("node", "inspect", "--format", fmt, *ids, check=False).splitlines():
            node = Node.from_json(json.loads(line), "docker node inspect")
            info[node.id or ""] = node
    out = Nodes()
    master = [t.node for t in started if t.service == "master"]
    target = [t.node for t in started if t.service == "target"]
    out.master = info.get(master[0], Node(id=master[0])) if master else None
    out.target = info.get(target[0], Node(id=target[0])) if target else None
    counts: dict[str, int] = {}
    for t in started:
        if t.service == "worker" and t.exit_code in (None, 0):
            counts[t.node] = counts.get(t.node, 0) + 1
    out.workers = [replace(info.get(n, Node(id=n)), replicas=c) for n, c in sorted(counts.items())]
    return out


def record(manifest_path: Path, nodes: Nodes) -> None:
    """Add engine and nodes to a run.json the master wrote, keeping its owner."""
    m = RunManifest.read(manifest_path)
    m.engine, m.nodes = ENGINE, nodes
    st = manifest_path.stat()
    write_json_atomic(manifest_path, m.to_json())
    with contextlib.suppress(PermissionError):
        os.chown(manifest_path, st.st_uid, st.st_gid)


# --- the run ---------------------------------------------------------------------------------------


def run_swarm(settings: Headless, verbose: bool = False) -> int:
    """One headless run on the swarm; returns Locust's exit code (the master's). The terminal is
    compose's (runner/terminal.py): a progress line, the master's log in the run folder (and shown
    when VERBOSE), the summary last."""
    env = swarm_env(settings.environ)
    stack = env["SWARMBENCH_STACK"]
    check_swarm(stack)
    env, results = stack_env(settings, env)
    console = Console(results, verbose)
    with console:
        try:
            build_images(env, settings.staging, console)
        except SwarmError as e:
            raise UsageError(str(e)) from None
        env["SWARMBENCH_ENV_FILE"] = write_env_file(env)
        try:
            code, seen = _deploy_and_follow(stack, env, stack_files(settings), settings, console)
        finally:
            os.unlink(env["SWARMBENCH_ENV_FILE"])
    nodes = placement(seen)
    for manifest in sorted(run_folders(results) - console.before):
        try:
            record(manifest, nodes)
        except InputError as e:  # left as the master wrote it; say so, never stop here
            print(f"swarmbench: warning: {e}: engine and nodes not recorded", file=sys.stderr)
    code = console.salvage(code)  # a master that died left no record: the runner writes it
    console.finish(code)
    return code


def _deploy_and_follow(
    stack: str, env: dict[str, str], files: list[str], settings: Headless, console: Console
) -> tuple[int, list[Task]]:
    deploy = ["stack", "deploy", "--resolve-image", "never"]
    root = checkout()  # the stack files are the checkout's
    for f in files:
        deploy += ["-c", str(root / f)]
    seen: list[Task] = []
    logs = None
    try:
        console.phase(f"deploying stack {stack} ({settings.workers} workers)")
        docker(*deploy, stack, env=env)
        # Its own session: Ctrl-C stops the run, not the log, so the master's last lines still come.
        follow_logs = ["docker", "service", "logs", "--follow", "--raw", f"{stack}_master"]
        logs = console.start(follow_logs, os.environ, start_new_session=True)
        code = follow(stack, timespan_seconds("LOCUST_RUN_TIME", settings.run_time) + MAX_RUN_GRACE_S)
    except SwarmError as e:
        console.say(f"swarmbench: error: {e}; removing the stack", err=True)
        stop_master(stack)  # whatever it saved so far is written cleanly
        code = exits.CONFIG_ERROR
    except KeyboardInterrupt:
        console.say("swarmbench: interrupted; stopping the run", err=True)
        stop_master(stack)
        code = exits.INTERRUPTED_SIGINT
    finally:
        seen = tasks(stack)
        if logs is not None:
            _drain(logs)
        console.phase(f"removing stack {stack}")
        remove_stack(stack)
    return code, seen


def _drain(logs: subprocess.Popen) -> None:
    try:
        logs.wait(timeout=LOG_DRAIN_S)
    except subprocess.TimeoutExpired:
        logs.terminate()
        logs.wait()
