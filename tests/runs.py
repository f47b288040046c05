"""Run folders in tests: where the analysis tests find them, and reading one through the column names
analysis/ defines (one place)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from harness import ROOT

from swarmbench.analysis import columns as C
from swarmbench.core.folder import LATENCY_HDR_CSV, RUN_FILES

EXAMPLES = ROOT / "results" / "examples"


def result_sets(*fixtures: Path) -> list[Path]:
    """The folders of runs the analysis is tried on: SWARMBENCH_TEST_RESULTS=dir1:dir2 when set, else
    FIXTURES, and results/examples once the harness has produced it."""
    if os.environ.get("SWARMBENCH_TEST_RESULTS"):
        return [Path(p) for p in os.environ["SWARMBENCH_TEST_RESULTS"].split(os.pathsep)]
    return [*fixtures] + ([EXAMPLES] if any(EXAMPLES.rglob("*_stats.csv")) else [])


def only_run(results: Path) -> Path:
    runs = [p.parent for p in results.rglob(C.MANIFEST)]
    assert len(runs) == 1, f"expected one run folder under {results}, got {runs}"
    return runs[0]


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / C.MANIFEST).read_text())


def assert_complete_folder(run_dir: Path) -> dict:
    """Every file a saved run folder holds (core's RUN_FILES) is there; its run.json."""
    for name in RUN_FILES:
        assert (run_dir / name).is_file(), f"{name} missing from {run_dir}"
    return manifest(run_dir)


def stats(run_dir: Path) -> dict[tuple[str, str], dict[str, str]]:
    """*_stats.csv rows keyed by (Type, Name)."""
    with open(run_dir / C.STATS_CSV, newline="") as f:
        return {(r[C.TYPE], r[C.NAME]): r for r in csv.DictReader(f)}


def count(rows: dict, key: tuple[str, str], column: str = C.REQUEST_COUNT) -> int:
    return int(rows[key][column]) if key in rows else 0


def method_counts(rows: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for (typ, name), r in rows.items():
        if name != C.AGGREGATED:
            out[typ] = out.get(typ, 0) + int(r[C.REQUEST_COUNT])
    return out


def total(rows: dict, column: str = C.REQUEST_COUNT) -> int:
    return count(rows, ("", C.AGGREGATED), column)


_ALBUM_ROUTE = re.compile(
    r'^albums_http_requests_total\{route="(GET|POST) /albums[^"]*",code="\d+"\} (\d+)$', re.M
)


def target_album_requests(metrics_text: str) -> int:
    """Requests the target served on the album routes, read straight from its /metrics text."""
    return sum(int(n) for _, n in _ALBUM_ROUTE.findall(metrics_text))


def assert_exact_journey(run_dir: Path, printed: str, metrics_text: str, more_than: int) -> int:
    """The run's request count (> MORE_THAN): no failures, equal to the total Locust PRINTED and to
    what the target served (its /metrics text), GET:POST 3:1 within 5 %. Returns the count."""
    rows = stats(run_dir)
    n = total(rows)
    assert n > more_than, f"too few requests to judge anything: {n}"
    assert total(rows, C.FAILURE_COUNT) == 0, (run_dir / C.FAILURES_CSV).read_text()
    assert n == printed_total(printed), "the CSV's final count differs from Locust's printed total"
    assert n == target_album_requests(metrics_text), "Locust's count differs from what the target served"
    by_method = method_counts(rows)
    ratio = by_method["GET"] / by_method["POST"]
    assert 3 * 0.95 <= ratio <= 3 * 1.05, f"GET:POST = {by_method}, ratio {ratio:.3f} not 3 +-5%"
    return n


def printed_total(stdout: str) -> int:
    """The request count of the last 'Aggregated' line Locust printed (its final summary)."""
    # The request table's row reads "Aggregated  <reqs>  <fails>(<pct>%) | ..."; the percentile
    # table that follows has an Aggregated row too, without the "(...%)".
    lines = [ln for ln in stdout.splitlines() if re.search(r"\sAggregated\s+\d+\s+\d+\(", ln)]
    assert lines, "Locust printed no Aggregated line"
    return int(lines[-1].split("Aggregated", 1)[1].split()[0])


def reap(procs: Iterable[subprocess.Popen], signum: int | None = None, timeout: float = 60) -> None:
    """End a test's processes: signal the live ones (SIGNUM, if given), wait for each, kill one that
    does not end within TIMEOUT seconds (a test never leaves a Locust process behind)."""
    procs = list(procs)
    if signum is not None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# --- the terminal's summary (core/answer.py summary_text) ---------------------------------------------

_GAP = re.compile(r"\s{2,}")


def assert_summary_last(stdout: str, run_dir: Path, code: int = 0, status: str = "complete") -> list[str]:
    """STDOUT ends with RUN_DIR's summary, and its numbers are the folder's files exactly: requests and
    failures locust_stats.csv's, p50/p95/p99/max locust_latency_hdr.csv's (service time). Returns the
    summary's lines."""
    block = stdout.rstrip("\n").split("\n\n")[-1].splitlines()
    assert block[0] == f"Run {run_dir.name}: {status} (exit code {code})", block
    shown = run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir  # as the runner says it
    assert block[-1] == f"Run page: {shown / C.REPORT_HTML}", block
    head = next(i for i, line in enumerate(block) if line.startswith("name "))
    assert _GAP.split(block[head]) == ["name", "requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms",
                                       "max ms"]  # fmt: skip
    rows = stats(run_dir)
    with open(run_dir / LATENCY_HDR_CSV, newline="") as f:
        exact = {r["name"]: r for r in csv.DictReader(f) if r["kind"] == "service"}
    shown = [_GAP.split(line.strip()) for line in block[head + 1 : head + 1 + len(rows)]]
    assert [s[0] for s in shown] == sorted(r[C.NAME] for r in rows.values() if r[C.NAME] != C.AGGREGATED) + [
        C.AGGREGATED
    ], shown
    for name, requests, failures, _rps, *latencies in shown:
        [row] = [r for r in rows.values() if r[C.NAME] == name]
        assert (int(requests.replace(",", "")), int(failures.replace(",", ""))) == (
            int(row[C.REQUEST_COUNT]),
            int(row[C.FAILURE_COUNT]),
        )  # the one display rule (core/figures.py show_count): thousands separated
        file = [float(exact[name][c]) for c in ("p50_ms", "p95_ms", "p99_ms", "max_ms")]
        assert [float(v) for v in latencies] == file, (name, latencies, file)
    return block
