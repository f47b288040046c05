"""Staging hosts of the tests' own: a Docker network with containers a test starts and removes
(never an outside address), and `make staging` watched service by service. Shared by
test_staging.py and test_ci_recipes.py."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from harness import ROOT
from make_runs import make

CONTAINER_UID = 1000  # the image's user, which containers run as when the tests run as root


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


class StagingNet:
    """A Docker network with 'staging hosts' on it: containers this test starts and removes."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.name = f"sbh5-net-{tag}"
        self.containers: list[str] = []
        docker("network", "create", self.name)

    def start(self, role: str, *run_args: str, ready: list[str] | None = None) -> str:
        """Start a container; its name is its host name on the network."""
        name = f"sbh5-{role}-{self.tag}"
        docker("run", "-d", "--name", name, "--network", self.name, *run_args)
        self.containers.append(name)
        deadline = time.monotonic() + 30
        while ready and docker("exec", name, *ready, check=False).returncode != 0:
            assert time.monotonic() < deadline, docker("logs", name, check=False).stderr
            time.sleep(0.3)
        return name

    def remove(self) -> None:
        for name in self.containers:
            docker("rm", "-f", name, check=False)
        docker("network", "rm", self.name, check=False)


def staging_network() -> Iterator[StagingNet]:
    """conftest's `staging_net` fixture: a network of its own, removed with its containers after."""
    tag = uuid.uuid4().hex[:8]
    # The images the stand-ins run: the target's, and the Locust image (it has Python) for the
    # auth server. docker-compose.yml names them; build them now (a cache hit after the first).
    build = subprocess.run(
        [
            "docker",
            "compose",
            "--project-directory",
            str(ROOT),
            "-p",
            f"sbh5-build-{tag}",
            "build",
            "target",
            "master",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    net = StagingNet(tag)
    try:
        yield net
    finally:
        net.remove()


def image(service: str) -> str:
    """The image docker-compose.yml gives SERVICE (built by the staging_net fixture)."""
    out = subprocess.run(
        ["docker", "compose", "--project-directory", str(ROOT), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["services"][service]["image"]


def watch_services(project: str, seen: set[str], stop: threading.Event) -> None:
    """Every service of PROJECT that has a container at any moment of the run."""
    label = "label=com.docker.compose.project=" + project
    while not stop.is_set():
        out = docker(
            "ps", "-a", "--filter", label, "--format", '{{.Label "com.docker.compose.service"}}', check=False
        )
        seen.update(out.stdout.split())
        time.sleep(0.3)


def make_staging(env: dict[str, str]) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`make staging`, and the compose services that had a container at any moment of it."""
    seen: set[str] = set()
    stop = threading.Event()
    watcher = threading.Thread(target=watch_services, args=(env["COMPOSE_PROJECT_NAME"], seen, stop))
    watcher.start()
    try:
        return make("staging", env=env), seen
    finally:
        stop.set()
        watcher.join()


def private_file(path: Path, text: str) -> Path:
    """A 0600 file the containers can read: theirs when the tests run as root (they run as 1000)."""
    path.write_text(text)
    path.chmod(0o600)
    if os.getuid() == 0:
        os.chown(path, CONTAINER_UID, CONTAINER_UID)
    return path
