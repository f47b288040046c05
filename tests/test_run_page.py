"""The run page (swarmbench/page/run.py), every run folder's report.html: its numbers are exactly the
files' (every checked-in folder, and generated ones: a Hypothesis property), a damaged folder gives
a page that says what it could not read (never a traceback), and a real run ends with the page and
Locust's own report beside it, which a real Chromium renders with the same numbers."""

from __future__ import annotations

import csv
import re
import shutil
import string
from pathlib import Path

import pytest
from harness import FIXTURES, ROOT, Target, run_locust
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pages import assert_page_matches_files, browse, in_files, shown, tables
from runs import assert_complete_folder, only_run

from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED
from swarmbench.latency.histogram import LatencyBook
from swarmbench.page import run as run_page

CHECKED_IN = sorted(
    p.parent for base in (FIXTURES, ROOT / "results" / "examples") for p in base.rglob("*_stats.csv")
)
"""Every run folder in the repository: real runs of every harness version, with and without run.json
and HDR files."""


@pytest.mark.parametrize("run_dir", CHECKED_IN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_checked_in_folder_gets_a_page_with_its_files_numbers(run_dir):
    page = run_page.render(run_dir)
    assert page.count(run_page.MARK) == 1
    assert_page_matches_files(page, run_dir)
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page), "no network, no JS"


# --- the page never contradicts the files (generated folders) -------------------------------------

NAMES = st.text(
    alphabet=string.ascii_letters + string.digits + " /{}<>&\"'_-", min_size=1, max_size=14
).filter(
    lambda n: n == n.strip() and n != AGGREGATED
)  # a table cell's text is read trimmed, as a browser shows it
LATENCIES = st.lists(st.floats(0.001, 60_000.0, allow_nan=False), min_size=1, max_size=40)


def write_folder(
    run_dir: Path, per_name: dict[str, list[float]], failures: dict[str, int], rps: float
) -> None:
    """A folder as the plugin writes it: the HDR files from the latencies, Locust's stats CSV with the
    same counts (its own percentile columns deliberately different: the page must take the exact ones)."""
    run_dir.mkdir()
    book = LatencyBook()
    for name, values in per_name.items():
        for ms in values:
            book.record("GET", name, "service", ms)
    book.write_csv(run_dir / folder.LATENCY_HDR_CSV)
    folder.write_json_atomic(run_dir / folder.LATENCY_HDR_JSON, book.to_json())
    head = [folder.TYPE, folder.NAME, folder.REQUEST_COUNT, folder.FAILURE_COUNT, folder.RPS,
            folder.P50, folder.P95, folder.P99, folder.MAX_RT]  # fmt: skip
    with open(run_dir / folder.STATS_CSV, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(head)
        for name, values in per_name.items():
            out.writerow(["GET", name, len(values), failures[name], rps * len(values), 1, 2, 3, 4.5])
        total = sum(len(v) for v in per_name.values())
        out.writerow(["", AGGREGATED, total, sum(failures.values()), rps * total, 1, 2, 3, 4.5])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    per_name=st.dictionaries(NAMES, LATENCIES, min_size=1, max_size=4),
    fail_share=st.floats(0, 1),
    rps=st.floats(0.001, 1000.0),
)
def test_the_page_never_contradicts_the_files_it_came_from(tmp_path, per_name, fail_share, rps):
    """ "A figure the product prints must never contradict the numbers it came from": over generated
    folders (names with HTML's special characters, latencies from 1 µs to a minute), every number of
    the page's answer table is the files' own."""
    run_dir = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    failures = {n: int(len(v) * fail_share) for n, v in per_name.items()}
    write_folder(run_dir, per_name, failures, rps)
    page = run_page.render(run_dir)
    assert_page_matches_files(page, run_dir)
    assert set(shown(page)) == {("GET", n) for n in per_name} | {("", AGGREGATED)}


# --- a damaged folder: a page that says what it could not read ------------------------------------

DAMAGE = {
    "deleted": lambda p: p.unlink(),
    "cut in half": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "not text": lambda p: p.write_bytes(b"\xff\xfe\x00garbage\x00,1,2\n"),
}
READ = (
    folder.STATS_CSV, folder.LATENCY_HDR_CSV, folder.LATENCY_HDR_JSON, folder.LATENCY_WINDOWS_CSV,
    folder.HISTORY_CSV, folder.MANIFEST, folder.FAILURES_CSV,
)  # fmt: skip
"""The files the page reads (the others it only lists)."""


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", READ)
def test_a_damaged_file_gives_a_page_that_names_it(tmp_path, name, damage):
    run_dir = shutil.copytree(FIXTURES / "exact" / "repeat-1", tmp_path / "run")
    DAMAGE[damage](run_dir / name)
    page = run_page.render(run_dir)  # never raises
    notes = tables_free_text(page, "missing")
    assert name in notes, f"{name} {damage}: not said on the page"
    assert "Traceback" not in page
    if name != folder.STATS_CSV:  # the answer still stands on what is left
        assert ("", AGGREGATED) in shown(page)


def tables_free_text(page: str, css_class: str) -> str:
    """The text of PAGE's <div class=CSS_CLASS> (the notes of what could not be read)."""
    found = re.search(rf'<div class="{css_class}">(.*?)</div>', page, re.S)
    return found.group(1) if found else ""


def test_a_run_page_is_told_from_locusts_report(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(run_page.render(FIXTURES / "exact" / "repeat-1"))
    locust = tmp_path / "locust.html"
    locust.write_text("<!DOCTYPE html><html><head><title>Test Report for locustfile.py</title>")
    assert run_page.is_run_page(page) and not run_page.is_run_page(locust)
    assert not run_page.is_run_page(tmp_path / "none.html")


# --- a real run, and a real browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def real_run(albums_binary, tmp_path_factory) -> Path:
    """A 4 s standalone run against the real target: the folder the plugin writes at its end."""
    results = tmp_path_factory.mktemp("page") / "results"
    target = Target(albums_binary)
    try:
        res = run_locust(
            "--headless", "-H", target.url, "-u", "6", "-r", "6", "-t", "4s", "--wait-time", "constant 0.05",
            "--results-dir", str(results), "AlbumsFastHttpUser",
        )  # fmt: skip
    finally:
        target.stop()
    assert res.returncode == 0, res.stderr[-3000:]
    return only_run(results)


def test_a_run_ends_with_its_page_and_locusts_report_beside_it(real_run):
    assert_complete_folder(real_run)
    page = (real_run / folder.REPORT_HTML).read_text()
    assert run_page.is_run_page(real_run / folder.REPORT_HTML)
    assert not run_page.is_run_page(real_run / folder.LOCUST_REPORT_HTML)
    assert_page_matches_files(page, real_run)
    assert f'href="{folder.LOCUST_REPORT_HTML}"' in page
    files = {row[0] for row in tables(page)["files"][1:]}
    assert files == {p.name for p in real_run.iterdir()} - {folder.REPORT_HTML}, "every file listed"
    assert page.count("<svg") >= 4, "latency, p95 per name, throughput, distribution"


def test_chromium_renders_the_page_with_the_files_numbers(real_run):
    """The page as a person sees it: headless Chromium loads it and the numbers read off its DOM are
    locust_latency_hdr.csv's and locust_stats.csv's."""
    res = browse(real_run / folder.REPORT_HTML, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    assert shown(res.stdout) == in_files(real_run)
    assert "Status: complete" in res.stdout
