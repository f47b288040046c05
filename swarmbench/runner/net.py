"""Loopback helpers for local processes: a free port, waiting until a service answers.

Used by the sweep's local-process runner, the tests and the benchmarks (the same code decides
"the target is up" everywhere). Everything here talks to 127.0.0.1 only.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request


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
