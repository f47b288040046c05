"""Helpers of the web-UI tests: a web-UI master and its worker as real processes, its JSON, and the
UI rendered by a real browser (headless Chromium, Debian's `chromium`) read back from its DOM.

Chromium is a real part the tests start: where it is missing they skip, in CI they fail
(harness.missing; .ci/run installs it).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

from harness import free_port, missing, wait_http
from integrity import post, spawn

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)
"""A browser that talks to nothing but the page it is given (no updates, sync or prefetching)."""


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


class UiStack:
    """A web-UI master and one worker (real processes) on free loopback ports."""

    def __init__(self, tmp_path: Path, host: str, *extra: str) -> None:
        port, self.web = str(free_port()), free_port()
        self.base = f"http://127.0.0.1:{self.web}"
        self.results = tmp_path / "results"
        self.master = spawn(
            ["--master", "--master-bind-port", port, "--web-host", "127.0.0.1", "--web-port", str(self.web),
             "--class-picker", "-H", host, "--wait-time", "constant 0.1", "--stop-timeout", "1",
             "--results-dir", str(self.results), *extra], tmp_path / "master.log",
        )  # fmt: skip
        self.worker = spawn(["--worker", "--master-port", port, *extra], tmp_path / "worker.log")
        wait_http(self.base + "/", timeout=60)
        deadline = time.monotonic() + 60
        while get_json(self.base + "/stats/requests").get("worker_count") != 1:
            assert time.monotonic() < deadline, "the worker never connected"
            time.sleep(0.3)

    def start(self, users: int = 4) -> None:
        form = {"user_count": users, "spawn_rate": users, "user_classes": "AlbumsFastHttpUser"}
        assert post(self.base + "/swarm", form)["success"] is True

    def close(self) -> None:
        self.master.send_signal(signal.SIGTERM)
        try:
            self.master.wait(timeout=60)
        finally:
            for p in (self.master, self.worker):
                if p.poll() is None:
                    p.kill()
                p.wait()


# --- a real browser ---------------------------------------------------------------------------------


def chromium() -> str:
    """Debian's chromium (or Chrome) on PATH; else a skip here, a failure in CI."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        missing("chromium is not installed (apt-get install -y chromium)")
    return found


def render(url: str, scratch: Path, budget_ms: int = 5000) -> str:
    """URL's DOM after BUDGET_MS of the page's (virtual) time: its scripts ran, its fetches answered.
    A fresh profile every time, so nothing of an earlier page is reused."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=scratch)
    cmd = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}"]
    res = subprocess.run([*cmd, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "</html>" in res.stdout, res.stderr[-2000:]
    return res.stdout


class Rendered(HTMLParser):
    """What a person reads off the rendered Exact latency tab: the table's rows (cell texts, in the
    columns' order) and the chart's windows (each hover band's data-* numbers)."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.header: list[str] = []
        self.rows: list[list[str]] = []
        self.windows: list[dict[str, str]] = []
        self._tables = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._tables += 1
        elif tag == "tr" and self._tables == 1:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "rect" and "swarmbench-window" in a.get("class", "").split():
            self.windows.append({k.removeprefix("data-"): v for k, v in a.items() if k.startswith("data-")})

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self.header:
                self.rows.append(self._row)
            else:
                self.header = self._row
            self._row = None

    def table(self) -> dict[str, dict[str, str]]:
        """Rows keyed by their Name cell, each {column title: text}."""
        return {row[0]: dict(zip(self.header, row, strict=True)) for row in self.rows}
