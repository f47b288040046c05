"""Helpers of the run page's tests (test_run_page.py, test_run_page_browser.py): its tables read back
from the HTML (as written, or as a real Chromium rendered it), the numbers the folder's files hold,
and headless Chromium itself."""

from __future__ import annotations

import csv
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

from harness import missing

from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED

COLUMNS = ("requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms")
"""The answer table's number columns, in order (after name and type)."""
HDR = {"p50 ms": "p50_ms", "p95 ms": "p95_ms", "p99 ms": "p99_ms", "max ms": "max_ms"}
"""The page's latency columns -> locust_latency_hdr.csv's."""
LOCUST = {"p50 ms": folder.P50, "p95 ms": folder.P95, "p99 ms": folder.P99, "max ms": folder.MAX_RT}
"""The same -> locust_stats.csv's (a run without HDR files)."""


class _Tables(HTMLParser):
    """Every <table id=...>'s rows as lists of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._table = dict(attrs).get("id") or f"table{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def shown(page: str, table: str = "numbers") -> dict[tuple[str, str], dict[str, float]]:
    """The answer table of PAGE: (type, name) -> {column: the number shown}; "-" reads as None."""
    rows = tables(page)[table]
    head = rows[0]
    assert head[:2] == ["name", "type"] and tuple(head[2:]) == COLUMNS, head
    out = {}
    for row in rows[1:]:
        out[(row[1], row[0])] = {
            c: None if v == "-" else float(v.replace(",", "")) for c, v in zip(COLUMNS, row[2:], strict=True)
        }
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def in_files(run_dir: Path, kind: str = "service") -> dict[tuple[str, str], dict[str, float]]:
    """What the page must show, from the files: counts and req/s from locust_stats.csv, latency from
    locust_latency_hdr.csv (KIND) where the run has it, else Locust's own columns; to the
    microsecond (the HDR files' resolution; Locust's max has sub-microsecond noise)."""
    hdr_path = run_dir / folder.LATENCY_HDR_CSV
    hdr = (
        {(r["type"], r["name"]): r for r in _rows(hdr_path) if r["kind"] == kind} if hdr_path.exists() else {}
    )
    out = {}
    for r in _rows(run_dir / folder.STATS_CSV):
        key = (r[folder.TYPE], r[folder.NAME])
        if hdr and key not in hdr:
            continue
        row = {
            "requests": float(r[folder.REQUEST_COUNT]),
            "failures": float(r[folder.FAILURE_COUNT]),
            "req/s": round(float(r[folder.RPS]), 1),
        }
        for col in HDR:
            text = hdr[key][HDR[col]] if hdr else r[LOCUST[col]]
            row[col] = None if text in ("", "N/A") else round(float(text), 3)
        out[key] = row
    return out


def assert_page_matches_files(page: str, run_dir: Path) -> None:
    """Every row and number of the page's answer table is the files' (and no row is missing)."""
    got, want = shown(page), in_files(run_dir)
    assert got == want, f"page {got} != files {want}"
    assert ("", AGGREGATED) in got


# --- headless Chromium ----------------------------------------------------------------------------

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
)  # fmt: skip
"""Chromium without a display, a sandbox (root in CI), a GPU or any network traffic of its own."""


def chromium() -> str:
    """The browser (Debian's `chromium`): a failure in CI when missing (.ci/run installs it), else a skip."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        missing("chromium is not installed (apt-get install -y chromium)")
    return found


def browse(page: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Chromium on PAGE (file://) with ARGS (--dump-dom, --screenshot=...), a fresh profile each time."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
