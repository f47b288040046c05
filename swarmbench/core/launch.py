"""The Locust command line of a master, a worker or a standalone run: built here, and only here.

Used by the image's entrypoint (`swarmbench launch master|worker [--headless]`, which
compose runs with settings from the environment), by the sweep's local-process runner, and by any
later engine, so every launch waits for its workers, reads its locustfiles and ends the same way.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from swarmbench.core.exits import die

PLUGIN_LOCUSTFILE = "locustfiles/swarmbench_plugin.py"
"""Put in front of every locustfile, so any test gets the results folder, run.json and options."""

DEFAULT_LOCUSTFILE = "locustfiles/albums.py"
"""The bundled scenario."""

DEFAULT_RUN_TIME = "30s"
"""Headless run length when LOCUST_RUN_TIME is not set."""

DEFAULT_WORKERS = 1
"""Workers of one run when WORKERS is not set (a sweep's list: runner/points.py SWEEP_WORKERS)."""

DEFAULT_WORKERS_WAIT_S = 60
"""How long a headless master waits for its workers before failing (SWARMBENCH_WORKERS_WAIT): a
worker that cannot start must fail the run, not hang it. Long enough for cold image starts."""

ROLES = ("master", "worker", "standalone")

HOST_POLL_S = 1.0
"""How often a master waiting for its host (SWARMBENCH_HOST_WAIT) tries again."""


def wait_for_host(host: str, seconds: int) -> bool:
    """Swarm has no depends_on: a master may start before the target is up. Try HOST for up to
    SECONDS (any HTTP answer counts); the plugin's pre-flight then gives the real error if not."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(host, timeout=HOST_POLL_S * 3):
                return True
        except urllib.error.HTTPError:
            return True
        except (OSError, ValueError):
            if time.monotonic() >= deadline:
                return False
            time.sleep(HOST_POLL_S)


def locustfiles(user_files: str | None) -> str:
    """The plugin, then the user's locustfile(s) (comma-separated), as Locust's -f takes them."""
    files = [f.strip() for f in (user_files or DEFAULT_LOCUSTFILE).split(",") if f.strip()]
    return ",".join([PLUGIN_LOCUSTFILE, *(f for f in files if f != PLUGIN_LOCUSTFILE)])


@dataclass(frozen=True)
class Launch:
    """One Locust process. Fields left None are not passed (Locust's own chain decides)."""

    role: str  # one of ROLES
    locustfile: str | None = None  # user locustfile(s); the plugin is always put in front
    headless: bool = False
    workers: int = 1  # a headless master's --expect-workers
    workers_wait_s: int = DEFAULT_WORKERS_WAIT_S
    run_time: str | None = None
    host: str | None = None
    master_host: str = "master"  # where a worker finds its master (compose's service name)
    master_port: int | None = None
    bind_host: str | None = None  # a master's --master-bind-host
    results_dir: str | None = None
    run_id: str | None = None

    def argv(self) -> list[str]:
        """Locust's arguments (without the program name)."""
        args = ["-f", locustfiles(self.locustfile)]
        if self.role == "master":
            args.append("--master")
            if self.bind_host:
                args.append(f"--master-bind-host={self.bind_host}")
            if self.master_port:
                args.append(f"--master-bind-port={self.master_port}")
            if self.headless:
                args += [
                    "--headless",
                    f"--expect-workers={self.workers}",
                    f"--expect-workers-max-wait={self.workers_wait_s}",
                    f"--run-time={self.run_time or DEFAULT_RUN_TIME}",
                ]
            else:
                args.append("--class-picker")  # the web UI offers every user class
        elif self.role == "worker":
            args += ["--worker", f"--master-host={self.master_host}"]
            if self.master_port:
                args.append(f"--master-port={self.master_port}")
        elif self.headless:
            args += ["--headless", f"--run-time={self.run_time or DEFAULT_RUN_TIME}"]
        if self.role != "worker":  # workers take these from their master
            args += [f"--{k.replace('_', '-')}={v}" for k, v in self._optional().items() if v]
        return args

    def _optional(self) -> dict[str, str | None]:
        return {"host": self.host, "results_dir": self.results_dir, "run_id": self.run_id}


def from_env(role: str, headless: bool, env: Mapping[str, str]) -> Launch:
    """A container's launch: the role from its command, the rest from compose's environment."""
    if role not in ROLES:
        die(f"unknown role {role!r}: expected one of {', '.join(ROLES)}")

    def whole(name: str, default: int, least: int) -> int:
        value = env.get(name) or str(default)
        if not value.isdigit() or int(value) < least:
            die(f"{name}={value!r} must be a whole number >= {least}")
        return int(value)

    return Launch(
        role=role,
        locustfile=env.get("LOCUST_LOCUSTFILE"),
        headless=headless,
        workers=whole("WORKERS", DEFAULT_WORKERS, 1),
        workers_wait_s=whole("SWARMBENCH_WORKERS_WAIT", DEFAULT_WORKERS_WAIT_S, 1),
        run_time=env.get("LOCUST_RUN_TIME") or None,
        master_host=env.get("SWARMBENCH_MASTER_HOST") or "master",
    )


def main(argv: list[str] | None = None) -> None:
    """`swarmbench launch ROLE [--headless] [LOCUST ARGS...]` (the image's entrypoint): exec Locust.

    Anything that is not a role is handed to Locust unchanged (`docker compose run master --help`
    style calls keep working)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ROLES:
        os.execvp("locust", ["locust", *args])
    role, rest = args[0], args[1:]
    headless = "--headless" in rest
    rest = [a for a in rest if a != "--headless"]
    launch = from_env(role, headless, os.environ)
    wait_s = os.environ.get("SWARMBENCH_HOST_WAIT", "")
    if role == "master" and headless and wait_s.isdigit() and os.environ.get("LOCUST_HOST"):
        wait_for_host(os.environ["LOCUST_HOST"], int(wait_s))
    os.execvp("locust", ["locust", *launch.argv(), *rest])
