"""The runner's settings, validated before anything starts, and where it finds the checkout and puts
results.

Where the runner finds the checkout and puts results.

Validate the headless settings before anything starts.

Locust would reject most of these too, but only after images are built and the target is up; a
typo should cost a second, not a minute, and produce one line naming the setting."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from swarmbench.core import cmdline
from swarmbench.core.checks import CheckSyntaxError, parse_checks
from swarmbench.core.exits import UsageError
from swarmbench.core.exposition import parse_port
from swarmbench.core.headers import HeaderSyntaxError, load_headers
from swarmbench.core.launch import DEFAULT_RUN_TIME, DEFAULT_WORKERS
from swarmbench.core.loadspec import parse_arrival_rate, parse_duration

# --- the checkout and results/ --------------------------------------------------------------------

CHECKOUT_MARKERS = ("docker-compose.yml", "compose")
"""What makes a folder a Swarmbench checkout: the compose file and the overrides beside it (what the
runs start), looked for in the working directory and every folder above it. Never the installed
package's own folder: after a plain `pip install .` that is site-packages."""


def find_checkout(start: Path | None = None) -> Path | None:
    """The checkout holding START (default: the working directory), or None outside one."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CHECKOUT_MARKERS[0]).is_file() and (folder / CHECKOUT_MARKERS[1]).is_dir():
            return folder
    return None


def checkout(command: str = "this command", start: Path | None = None) -> Path:
    """find_checkout(START), or a UsageError (one line) saying that COMMAND needs one: its compose
    files, locustfiles/ and target/ are the checkout's, not the installed package's."""
    found = find_checkout(start)
    if found is None:
        here = (start or Path.cwd()).resolve()
        raise UsageError(
            f"{command} needs a Swarmbench checkout (a folder with {CHECKOUT_MARKERS[0]} and "
            f"{CHECKOUT_MARKERS[1]}/): none in {here} or any folder above it"
        )
    return found


RESULTS = "results"
"""The checkout's folder for run folders; SWARMBENCH_RESULTS (also read by compose) overrides it."""


def record_runs(folders: list[Path], store: str) -> bool:
    """Add FOLDERS (finished runs) to the history STORE (`swarmbench history add`, in a process of
    its own); False, with a warning line, when they could not be (the runs and the exit code stand:
    the store was opened before the runs, so this is rare, and says why)."""
    if not folders:
        return True
    res = subprocess.run(
        [*cmdline.PROGRAM, *cmdline.history_add(folders, store)],
        cwd=find_checkout(),
        capture_output=True,
        text=True,
    )
    sys.stderr.write(res.stdout)
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or ["failed"])[-1]
        print(f"swarmbench: warning: not recorded in the history: {why}", file=sys.stderr)
        return False
    return True


def results_dir(env: Mapping[str, str]) -> Path:
    """SWARMBENCH_RESULTS, else the checkout's results/ (UsageError outside a checkout)."""
    given = env.get("SWARMBENCH_RESULTS")
    if given:
        return Path(given).resolve()
    return checkout("results/ (SWARMBENCH_RESULTS unset)") / RESULTS


def display(path: Path) -> Path:
    """PATH relative to the checkout when it is inside it (shorter messages)."""
    root = find_checkout()
    return path.relative_to(root) if root is not None and path.is_relative_to(root) else path


# --- the settings ---------------------------------------------------------------------------------

DEFAULT_USER_CLASS = "AlbumsHttpUser"
"""Headless default for the bundled scenario: one client per run, so runs compare cleanly (the web
UI's class picker offers both)."""

_CLASS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NETWORK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def flag(env: Mapping[str, str], name: str) -> bool:
    """A make-style on/off variable (LOCAL=1): anything but unset, empty, 0, false or no is on."""
    return env.get(name, "") not in ("", "0", "false", "no")


def positive_int(name: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{name}={value!r} is not a whole number") from None
    if n < 1:
        raise UsageError(f"{name}={value!r} must be at least 1")
    return n


def positive_float(name: str, value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise UsageError(f"{name}={value!r} is not a number") from None
    if not x > 0 or x == float("inf"):
        raise UsageError(f"{name}={value!r} must be a positive number")
    return x


def timespan_seconds(name: str, value: str) -> int:
    """Locust's --run-time syntax (90, 90s, 1m30s, 2h; core/loadspec.py) in whole seconds."""
    try:
        if "." in value or "ms" in value:  # Locust's own parser takes whole h/m/s only
            raise ValueError(value)
        seconds = parse_duration(value)
    except ValueError:
        raise UsageError(f"{name}={value!r} is not a duration like 30s, 5m or 1h30m") from None
    if seconds < 1:
        raise UsageError(f"{name}={value!r} must be at least 1s")
    return round(seconds)


def check_arrival(env: Mapping[str, str]) -> None:
    """The open-model settings (LOCUST_ARRIVAL_RATE, LOCUST_ARRIVAL_MAX_WAIT; core/loadspec.py), before
    images build or a target starts: UsageError naming the setting."""
    spec, wait = env.get("LOCUST_ARRIVAL_RATE", "").strip(), env.get("LOCUST_ARRIVAL_MAX_WAIT", "").strip()
    try:
        if spec:
            parse_arrival_rate(spec)
    except ValueError as e:
        raise UsageError(f"LOCUST_ARRIVAL_RATE: {e}") from None
    try:
        if wait:
            parse_duration(wait)
    except ValueError as e:
        raise UsageError(f"LOCUST_ARRIVAL_MAX_WAIT={wait!r}: {e}") from None


def user_classes(name: str, value: str) -> list[str]:
    names = [n for n in re.split(r"[\s,]+", value.strip()) if n]
    for n in names:
        if not _CLASS.match(n):
            raise UsageError(f"{name}={value!r}: {n!r} is not a Python class name")
    return names


def host(name: str, value: str) -> str:
    if not re.match(r"^https?://[^\s/]+", value) or re.search(r"\s", value):
        raise UsageError(f"{name}={value!r} is not an http:// or https:// URL")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a port that is not a number from 0 to 65535)
    except ValueError:
        raise UsageError(f"{name}={value!r} has an invalid port") from None
    if not parts.hostname:
        raise UsageError(f"{name}={value!r} has no host name")
    if parts.username is not None or parts.password is not None:
        # run.json records the host: a password in the URL would end up in results/.
        raise UsageError(f"{name} must not contain credentials; put them in SWARMBENCH_HEADERS_FILE")
    return value


HOST_GATEWAY_NAME = "host.docker.internal"
"""The name docker-compose.yml maps to the Docker host (extra_hosts: host-gateway), as Docker
Desktop does on macOS and Windows: the one URL that reaches your own machine from the containers."""

_LOOPBACK_NAMES = ("localhost", "ip6-localhost", "ip6-loopback", "0.0.0.0", "::", "::1")


def is_loopback(hostname: str) -> bool:
    """localhost, *.localhost, 127.0.0.0/8, ::1 (and the "any" addresses, which mean this machine)."""
    h = hostname.lower().rstrip(".")
    return (
        h in _LOOPBACK_NAMES or h.endswith(".localhost") or re.fullmatch(r"127(\.\d{1,3}){3}", h) is not None
    )


def container_host(name: str, value: str) -> str:
    """A host the containers can reach: inside a container, localhost is the container itself."""
    parts = urlsplit(value)
    if parts.hostname and is_loopback(parts.hostname):
        port = f":{parts.port}" if parts.port else ""
        better = parts._replace(netloc=f"{HOST_GATEWAY_NAME}{port}").geturl()
        raise UsageError(
            f"{name}={value!r} names this machine's loopback, but Locust runs in containers, where "
            f"{parts.hostname} is the container itself: use {better} (the service must listen on "
            "0.0.0.0 or the Docker bridge address, not only on 127.0.0.1)"
        )
    return value


def checks(name: str, value: str) -> list[str]:
    """The threshold expressions in VALUE, each validated by the plugin's own grammar."""
    try:
        return [c.expr for c in parse_checks(value)]
    except CheckSyntaxError as e:
        raise UsageError(f"{name}: {e}") from None


TRUE_WORDS = ("1", "true", "yes", "on")
"""What Locust's configuration reads as true in a flag's environment variable (configargparse)."""


def live_settings(env: Mapping[str, str]) -> None:
    """LOCUST_ABORT_ON_FAIL needs thresholds, LOCUST_ABORT_GRACE is a duration, SWARMBENCH_METRICS_PORT a
    port: checked before an image is built or a container started (the plugin checks them again)."""
    if (
        env.get("LOCUST_ABORT_ON_FAIL", "").strip().lower() in TRUE_WORDS
        and not env.get("LOCUST_CHECKS", "").strip()
    ):
        raise UsageError("LOCUST_ABORT_ON_FAIL needs thresholds to check: set LOCUST_CHECKS")
    if env.get("LOCUST_ABORT_GRACE"):
        try:
            parse_duration(env["LOCUST_ABORT_GRACE"])
        except ValueError as e:
            raise UsageError(f"LOCUST_ABORT_GRACE: {e}") from None
    try:
        parse_port(env.get("SWARMBENCH_METRICS_PORT", ""))
    except ValueError as e:
        raise UsageError(f"SWARMBENCH_METRICS_PORT: {e}") from None


def existing_file(name: str, value: str) -> str:
    path = Path(value)
    if not path.is_file():
        raise UsageError(f"{name}={value!r} is not a file")
    try:
        path.open("rb").close()
    except OSError as e:
        raise UsageError(f"{name}={value!r} cannot be read: {e.strerror or e}") from None
    return str(path.resolve())


def header_lines(path: str | None, env: Mapping[str, str]) -> None:
    """The secret headers the containers will read, checked here first: a value that cannot be sent
    fails now with its source, line and header name (never the value), not after an image build."""
    try:
        load_headers(path, env)
    except HeaderSyntaxError as e:
        raise UsageError(str(e)) from None


def network(name: str, value: str) -> str:
    if not _NETWORK.match(value):
        raise UsageError(f"{name}={value!r} is not a Docker network name")
    return value


@dataclass(frozen=True)
class Headless:
    workers: int
    run_time: str
    environ: dict[str, str]  # what compose gets: the caller's environment plus resolved defaults
    staging: bool = False  # test LOCUST_HOST; the bundled target is not started
    headers_file: str | None = None  # SWARMBENCH_HEADERS_FILE, mounted read-only into the containers
    network: str | None = None  # SWARMBENCH_NETWORK, an existing network the containers also join


def headless_from_env(env: Mapping[str, str], staging: bool = False, ui: bool = False) -> Headless:
    """The settings of one headless run from the environment (make passes its variables there).

    STAGING: the run tests LOCUST_HOST instead of the bundled target, so the host is required.
    UI: the same settings for the web UI (`python -m swarmbench up`): no default user class.
    """
    out = dict(env)
    if staging and not env.get("LOCUST_HOST", "").strip():
        raise UsageError(
            "staging mode tests an external host and starts no target: set LOCUST_HOST, "
            "e.g. LOCUST_HOST=https://staging.example.com make staging"
        )
    workers = positive_int("WORKERS", env.get("WORKERS") or str(DEFAULT_WORKERS))
    run_time = env.get("LOCUST_RUN_TIME") or DEFAULT_RUN_TIME
    timespan_seconds("LOCUST_RUN_TIME", run_time)
    if env.get("LOCUST_USERS"):
        positive_int("LOCUST_USERS", env["LOCUST_USERS"])
    if env.get("LOCUST_SPAWN_RATE"):
        positive_float("LOCUST_SPAWN_RATE", env["LOCUST_SPAWN_RATE"])
    if env.get("LOCUST_HOST"):
        container_host("LOCUST_HOST", host("LOCUST_HOST", env["LOCUST_HOST"]))
    if env.get("LOCUST_CHECKS"):
        checks("LOCUST_CHECKS", env["LOCUST_CHECKS"])
    live_settings(env)
    check_arrival(env)
    headers = net = None
    if env.get("SWARMBENCH_HEADERS_FILE"):
        headers = existing_file("SWARMBENCH_HEADERS_FILE", env["SWARMBENCH_HEADERS_FILE"])
    header_lines(headers, env)
    if env.get("SWARMBENCH_NETWORK"):
        net = network("SWARMBENCH_NETWORK", env["SWARMBENCH_NETWORK"])
    if env.get("LOCUST_USER_CLASSES"):
        user_classes("LOCUST_USER_CLASSES", env["LOCUST_USER_CLASSES"])
    elif "LOCUST_USER_CLASSES" not in env and not env.get("LOCUST_LOCUSTFILE") and not ui:
        out["LOCUST_USER_CLASSES"] = DEFAULT_USER_CLASS  # the UI has its class picker instead
    out["WORKERS"] = str(workers)
    out["LOCUST_RUN_TIME"] = run_time
    if headers:
        out["SWARMBENCH_HEADERS_FILE"] = headers  # absolute: compose resolves paths from the repo root
    return Headless(
        workers=workers, run_time=run_time, environ=out, staging=staging, headers_file=headers, network=net
    )


def up_from_env(env: Mapping[str, str]) -> Headless:
    """The settings of `python -m swarmbench up` (the web UI): validated like a headless run's."""
    return headless_from_env(env, ui=True)
