"""bench_target.py's machinery: the target process (built with `go build`, its RSS sampled), the
HTTP clients that load it, a probe's result. Standard library only; every address is 127.0.0.1."""

from __future__ import annotations

import collections
import contextlib
import http.client
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
CLIENT_CONNS = 8


@dataclass
class Result:
    probe: str
    sent: int = 0
    statuses: collections.Counter = field(default_factory=collections.Counter)
    rss_before: int = 0  # KiB
    rss_after: int = 0
    rss_peak: int = 0
    note: str = ""


class RssSampler(threading.Thread):
    """Reads the target's VmRSS every 20 ms; `window()` measures one probe."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.path = f"/proc/{pid}/status"
        self.peak = 0
        self.stopped = threading.Event()
        self.lock = threading.Lock()

    def rss(self) -> int:
        try:
            with open(self.path) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def run(self) -> None:
        while not self.stopped.wait(0.02):
            r = self.rss()
            with self.lock:
                self.peak = max(self.peak, r)

    @contextlib.contextmanager
    def window(self, result: Result):
        time.sleep(0.1)  # let the previous probe's last responses settle
        result.rss_before = self.rss()
        with self.lock:
            self.peak = result.rss_before
        try:
            yield result
        finally:
            time.sleep(0.1)
            result.rss_after = self.rss()
            with self.lock:
                result.rss_peak = max(self.peak, result.rss_after)


class Target:
    """The albums binary on a free 127.0.0.1 port."""

    def __init__(self, binary: Path, env: dict[str, str], log: Path):
        self.port = free_port()
        clean = {
            k: v for k, v in os.environ.items() if not k.startswith("ALBUMS_") and k not in ("ADDR", "PORT")
        }
        self.env = {"ADDR": HOST, "PORT": str(self.port), **env}
        self.log = open(log, "wb")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(
            [str(binary)], env={**clean, **self.env}, stdout=subprocess.DEVNULL, stderr=self.log
        )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"target exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"target not healthy within 15 s: {self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_bytes()[-600:].decode(errors="replace").strip()

    def metrics(self) -> dict[str, float]:
        """Unlabelled samples of /metrics (empty if it cannot be read)."""
        out: dict[str, float] = {}
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return out
        for line in text.splitlines():
            name, _, value = line.rpartition(" ")
            if line and not line.startswith("#") and "{" not in name:
                with contextlib.suppress(ValueError):
                    out[name] = float(value)
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def build(src: Path, out: Path) -> None:
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=src, check=True)


def extract_ref(ref: str, dest: Path) -> Path | None:
    """target/ as of git REF, in dest; patched to listen on 127.0.0.1 if it listens everywhere."""
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "target"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest, filter="data")
    src = dest / "target"
    main = src / "main.go"
    text = main.read_text()
    if '"ADDR"' not in text:
        old = 'net.Listen("tcp", ":"+cfg.Port)'
        if old not in text:
            print(f"baseline {ref}: cannot tell what address it listens on; skipped", file=sys.stderr)
            return None
        main.write_text(text.replace(old, f'net.Listen("tcp", "{HOST}:"+cfg.Port)'))
    return src


def post_many(port: int, bodies, count: int, stop_after_507: int | None = None):
    """POST bodies(i) for i in range(count) over CLIENT_CONNS keep-alive connections.

    Returns (sent, statuses, first id created). With stop_after_507, stops once that many 507s came.
    """
    lock = threading.Lock()
    statuses: collections.Counter = collections.Counter()
    sent = 0
    first_id: list[int] = []
    refused = [0]  # 507s so far, all connections
    next_i = iter(range(count))
    enough = threading.Event()
    headers = {"Content-Type": "application/json"}

    def worker() -> None:
        nonlocal sent
        local: collections.Counter = collections.Counter()
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        n = 0
        seen_id = False
        while not enough.is_set():
            with lock:
                i = next(next_i, None)
            if i is None:
                break
            try:
                conn.request("POST", "/albums", bodies(i), headers)
                resp = conn.getresponse()
                data = resp.read()
                local[resp.status] += 1
                if resp.status == 201 and not seen_id:
                    seen_id = True
                    with lock:
                        first_id.append(json.loads(data)["id"])
                if resp.status == 507 and stop_after_507:
                    with lock:
                        refused[0] += 1
                        if refused[0] >= stop_after_507:
                            enough.set()
            except (OSError, http.client.HTTPException):
                local["conn error"] += 1
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=30)
            n += 1
        conn.close()
        with lock:
            statuses.update(local)
            sent += n

    threads = [threading.Thread(target=worker) for _ in range(CLIENT_CONNS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sent, +statuses, min(first_id, default=None)


def get_concurrently(port: int, path: str, n: int):
    """n concurrent GETs of path; returns (statuses, largest body in bytes)."""
    statuses: collections.Counter = collections.Counter()
    sizes: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            with lock:
                statuses[resp.status] += 1
                sizes.append(len(body))
        except (OSError, http.client.HTTPException):
            with lock:
                statuses["conn error"] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses, max(sizes, default=0)
