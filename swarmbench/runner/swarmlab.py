"""`python -m swarmbench swarm-lab up|down`: a real two-node Docker Swarm on this one Linux machine.

A second Docker engine runs in its own network namespace, joined to this engine's swarm over a
veth pair (10.77.0.1 here, 10.77.0.2 there) as a worker node, with the Locust image copied to it
the way docs/swarm-kubernetes.md copies images to a real host (`docker save | docker load`).
Then `SWARMBENCH_WORKER_CONSTRAINT=node.role==worker make swarm` runs every worker on the second
node and the master and target here, over swarm's overlay network. Root only; Linux only.

Everything the lab creates is recorded in STATE_DIR/state.json as it is created, and `down`
removes exactly that (a half-made lab included): never a namespace, engine or swarm it did not
create. `up` on a lab that is up only refreshes the images; `down` with no lab does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from swarmbench.core.atomic import write_atomic
from swarmbench.core.exits import UsageError
from swarmbench.runner.swarm import build_images, docker

NETNS = "swarmbench-lab"
"""The second node's network namespace."""
VETH_HOST, VETH_NODE = "sblab0", "sblab1"
"""The veth pair: this side keeps VETH_HOST, VETH_NODE moves into NETNS."""
HOST_ADDR, NODE_ADDR = "10.77.0.1", "10.77.0.2"
"""The manager's and the second node's addresses (a /24 that exists only on this veth pair)."""
PREFIX = 24
STATE_DIR = Path("/var/run/swarmbench-lab")
"""state.json (what was created) and the second engine's log."""
DATA_ROOT = Path("/var/lib/swarmbench-lab")
"""The second engine's images and containers."""
EXEC_ROOT = Path("/var/run/swarmbench-lab-docker")
SOCKET = "/var/run/swarmbench-lab.sock"
"""The second engine's API: `docker -H unix:///var/run/swarmbench-lab.sock ...`."""
ENGINE_START_S = 60.0
"""How long the second engine may take to answer after it is started."""
JOIN_WAIT_S = 60.0
"""How long the joined node may take to show as Ready to the manager."""
STOP_WAIT_S = 20.0
"""How long the second engine may take to exit on SIGTERM before it is killed."""
LAB_IMAGES_SERVICES = ("master",)
"""The worker node runs workers only: the Locust image is all it needs."""


@dataclass
class State:
    """What `up` created so far; `down` undoes exactly this."""

    netns: bool = False
    veth: bool = False
    dockerd_pid: int | None = None
    swarm_node_id: str | None = None  # the manager's node id, when the lab made the swarm
    joined: bool = False
    complete: bool = False
    images: dict[str, str] = field(default_factory=dict)  # image -> id copied to the node

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        path = STATE_DIR / "state.json"
        write_atomic(path, json.dumps(asdict(self)))

    @classmethod
    def load(cls) -> State | None:
        try:
            return cls(**json.loads((STATE_DIR / "state.json").read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as e:
            raise UsageError(
                f"swarm-lab: {STATE_DIR}/state.json is unreadable ({e}); remove the lab by hand"
            ) from None


def sh(*cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    if check and out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise UsageError(f"swarm-lab: `{' '.join(cmd[:4])}` failed: {why}")
    return out


def lab_docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("docker", "-H", f"unix://{SOCKET}", *args, check=check)


def swarm_info() -> tuple[str, str]:
    """(local node state, node id) of this engine."""
    out = docker("info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}}").split()
    return (out[0] if out else "", out[1] if len(out) > 1 else "")


# --- checks ------------------------------------------------------------------------------------------


def require_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("swarm-lab needs root (it creates a network namespace and a second Docker engine)")
    for tool in ("ip", "nsenter", "dockerd", "docker"):
        if shutil.which(tool) is None:
            raise UsageError(f"swarm-lab needs `{tool}` (Linux with iproute2, util-linux and Docker)")


def taken() -> list[str]:
    """The lab's names that something else already uses."""
    names = []
    if NETNS in sh("ip", "netns", "list", check=False).stdout.split():
        names.append(f"network namespace {NETNS}")
    if sh("ip", "link", "show", VETH_HOST, check=False).returncode == 0:
        names.append(f"network interface {VETH_HOST}")
    names += [str(p) for p in (Path(SOCKET), DATA_ROOT, EXEC_ROOT) if p.exists()]
    return names


# --- up ------------------------------------------------------------------------------------------------


def up(env: dict[str, str]) -> int:
    require_root()
    state = State.load()
    if state and not state.complete:
        print("swarm-lab: removing a lab that did not finish starting", flush=True)
        down()
        state = None
    if state is None:
        if taken():
            raise UsageError(
                f"swarm-lab: {', '.join(taken())} already exists and is not this lab's; remove it first"
            )
        if swarm_info()[0] != "inactive":
            raise UsageError(
                "swarm-lab: this engine is already in a swarm the lab did not create; leave it first"
            )
        state = State()
        state.save()
        create(state)
    copy_images(state, env)
    state.complete = True
    state.save()
    print(
        f"swarm-lab: up: manager {HOST_ADDR} (this engine), worker node {NODE_ADDR} (namespace {NETNS}). "
        "Run: SWARMBENCH_WORKER_CONSTRAINT=node.role==worker make swarm; remove: make swarm-lab-down",
        flush=True,
    )
    return 0


def create(state: State) -> None:
    """Namespace, veth, the second engine, the swarm, the join; recorded step by step."""
    sh("ip", "netns", "add", NETNS)
    state.netns = True
    state.save()
    sh("ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NODE)
    state.veth = True
    state.save()
    sh("ip", "link", "set", VETH_NODE, "netns", NETNS)
    sh("ip", "addr", "add", f"{HOST_ADDR}/{PREFIX}", "dev", VETH_HOST)
    sh("ip", "link", "set", VETH_HOST, "up")
    sh("ip", "-n", NETNS, "addr", "add", f"{NODE_ADDR}/{PREFIX}", "dev", VETH_NODE)
    sh("ip", "-n", NETNS, "link", "set", VETH_NODE, "up")
    sh("ip", "-n", NETNS, "link", "set", "lo", "up")
    sh("ip", "-n", NETNS, "route", "add", "default", "via", HOST_ADDR)
    state.dockerd_pid = start_engine()
    state.save()
    sh("docker", "swarm", "init", "--advertise-addr", HOST_ADDR, "--listen-addr", f"{HOST_ADDR}:2377")
    state.swarm_node_id = swarm_info()[1]
    state.save()
    token = sh("docker", "swarm", "join-token", "-q", "worker").stdout.strip()
    lab_docker("swarm", "join", "--advertise-addr", NODE_ADDR, "--token", token, f"{HOST_ADDR}:2377")
    state.joined = True
    state.save()
    wait_ready()


def start_engine() -> int:
    """dockerd inside the namespace. nsenter --net only: `ip netns exec` also remounts /sys, and
    dockerd then dies with "Devices cgroup isn't mounted"."""
    for d in (DATA_ROOT, EXEC_ROOT, STATE_DIR):
        d.mkdir(parents=True, exist_ok=True)
    log = open(STATE_DIR / "dockerd.log", "ab")  # noqa: SIM115 (the engine keeps writing to it)
    proc = subprocess.Popen(
        ["nsenter", f"--net=/var/run/netns/{NETNS}", "dockerd", "--data-root", str(DATA_ROOT),
         "--exec-root", str(EXEC_ROOT), "-H", f"unix://{SOCKET}", "--pidfile", str(EXEC_ROOT / "docker.pid"),
         "--containerd-namespace", NETNS, "--containerd-plugins-namespace", f"{NETNS}-plugins"],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + ENGINE_START_S
    while lab_docker("info", check=False).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise UsageError(
                f"swarm-lab: the second Docker engine did not start (see {STATE_DIR}/dockerd.log)"
            )
        time.sleep(0.5)
    return proc.pid


def wait_ready() -> None:
    deadline = time.monotonic() + JOIN_WAIT_S
    while True:
        nodes = docker("node", "ls", "--format", "{{.Status}} {{.ManagerStatus}}").splitlines()
        if sum(1 for n in nodes if n.startswith("Ready")) >= 2:
            return
        if time.monotonic() > deadline:
            raise UsageError("swarm-lab: the second node joined but never became Ready")
        time.sleep(1)


def copy_images(state: State, env: dict[str, str]) -> None:
    """Build the Locust image here and copy it to the node, as for a real host without a registry:
    `docker save IMAGE | docker -H NODE load`. Skipped when the node already has this very image."""
    env = {**env, "SWARMBENCH_IMAGE_PREFIX": ""}
    build_images(env, staging=True)  # staging: the Locust image only (the target stays here)
    from swarmbench.runner.compose import COMPOSE_FILES, compose_cmd

    out = sh(*compose_cmd("config", "--images", *LAB_IMAGES_SERVICES, files=COMPOSE_FILES[:1]), env=env)
    for image in sorted(set(out.stdout.split())):
        image_id = docker("image", "inspect", "--format", "{{.Id}}", image).strip()
        if state.images.get(image) == image_id:
            continue
        print(f"swarm-lab: copying {image} to the second node", flush=True)
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", f"unix://{SOCKET}", "load", "-q"], stdin=save.stdout,
                              capture_output=True, text=True)  # fmt: skip
        save.wait()
        if save.returncode != 0 or load.returncode != 0:
            raise UsageError(f"swarm-lab: copying {image} failed: {load.stderr.strip()[-200:]}")
        state.images[image] = image_id
        state.save()


# --- down ------------------------------------------------------------------------------------------------


def down() -> int:
    require_root()
    state = State.load()
    if state is None:
        print("swarm-lab: no lab to remove", flush=True)
        return 0
    if state.joined:
        lab_docker("swarm", "leave", "--force", check=False)
    if state.swarm_node_id and swarm_info() == ("active", state.swarm_node_id):
        sh("docker", "swarm", "leave", "--force", check=False)  # the swarm the lab made, and only it
    if state.dockerd_pid:
        stop_engine(state.dockerd_pid)
    if state.veth:
        sh("ip", "link", "del", VETH_HOST, check=False)
    if state.netns:
        sh("ip", "netns", "del", NETNS, check=False)
    unmount_under(DATA_ROOT)
    unmount_under(EXEC_ROOT)
    for d in (DATA_ROOT, EXEC_ROOT, STATE_DIR):
        shutil.rmtree(d, ignore_errors=True)
    Path(SOCKET).unlink(missing_ok=True)
    print("swarm-lab: removed (namespace, veth, second engine and its data, the lab's swarm)", flush=True)
    return 0


def stop_engine(pid: int) -> None:
    """SIGTERM the lab's dockerd (only if that pid still is it), then SIGKILL after STOP_WAIT_S."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return
    if SOCKET.encode() not in b" ".join(cmdline):
        return  # the pid was reused by another process: not ours to stop
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)


def unmount_under(root: Path) -> None:
    """Mounts the engine left under ROOT (an engine killed mid-way), deepest first."""
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for m in sorted((m for m in mounts if m.startswith(f"{root}/")), key=len, reverse=True):
        sh("umount", "-l", m, check=False)
