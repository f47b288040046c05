"""`/metrics` on the master (plugin/metrics.py): a real distributed Locust run (a master and two
forked workers) against the real Go target, scraped while it goes and once its users stopped; the
summary's exact Aggregated p95 is the run's locust_latency_hdr.csv figure. Bad ports stop the run
with one line before anything exists."""

from __future__ import annotations

import contextlib
import csv
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from harness import ROOT, Target, free_port, locust_cmd, run_locust
from hypothesis import given
from hypothesis import strategies as st
from integrity import post
from runs import only_run, stats
from webui import UiStack

from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exposition import BUCKET_BOUNDS_S, Family, parse_port

SAMPLE = re.compile(r"^(?P<name>[a-z_0-9]+)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a scrape (name, labels, value); a line that is neither a sample nor a HELP or
    TYPE comment fails the test."""
    out = []
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        out.append((m["name"], dict(LABEL.findall(m["labels"] or "")), float(m["value"])))
    return out


def value(samples, metric: str, **labels: str) -> float:
    [found] = [v for n, lab, v in samples if n == metric and all(lab.get(k) == x for k, x in labels.items())]
    return found


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


@pytest.fixture(scope="module")
def scraped_run(albums_binary, tmp_path_factory):
    """A 10 s run with --processes 2, scraped every second while it goes; (scrapes, stdout, run dir)."""
    results = tmp_path_factory.mktemp("metrics")
    target = Target(albums_binary, ALBUMS_DELAY="20ms")
    port, metrics_port = str(free_port()), free_port()
    cmd = locust_cmd(
        "--processes", "2", "--master-bind-port", port, "--master-port", port, "--headless",
        "-H", target.url, "-u", "8", "-r", "8", "-t", "10s", "--wait-time", "constant 0.05",
        "--results-dir", str(results / "runs"), "--metrics-port", str(metrics_port), "AlbumsFastHttpUser",
    )  # fmt: skip
    scrapes: list[str] = []
    log = results / "locust.log"  # a file: a full pipe would block Locust while the test scrapes
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                scrapes.append(scrape(metrics_port))
            time.sleep(1)
        proc.wait(timeout=60)
        out = log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        target.stop()
    assert proc.returncode == 0, out[-3000:]
    return scrapes, out, only_run(results / "runs")


def test_the_master_serves_exact_merged_figures_while_the_run_goes(scraped_run):
    scrapes, _out, run_dir = scraped_run
    parsed = [parse(s) for s in scrapes]
    with_latency = [p for p in parsed if any(n == "swarmbench_response_time_seconds" for n, _, _ in p)]
    assert len(with_latency) >= 3, "the summary never showed during the run"
    counts = [value(p, "swarmbench_response_time_seconds_count", name=AGGREGATED) for p in with_latency]
    assert counts == sorted(counts) and counts[-1] > counts[0] > 0, counts
    samples = with_latency[-1]
    q = {
        x: value(samples, "swarmbench_response_time_seconds", name=AGGREGATED, quantile=x)
        for x in ("0.5", "0.95", "0.99")
    }
    assert 0.020 <= q["0.5"] <= q["0.95"] <= q["0.99"] < 1.0, q
    assert max(value(p, "swarmbench_workers") for p in parsed) == 2
    assert any(value(p, "swarmbench_run_state", state="running") == 1 for p in parsed)
    assert all(sum(v for n, _, v in p if n == "swarmbench_run_state") == 1 for p in parsed)
    # A sealed window appeared during the run, with its own exact figures.
    windowed = [p for p in parsed if any(n == "swarmbench_window_response_time_seconds" for n, _, _ in p)]
    assert windowed, "no sealed window was ever served"
    assert (
        value(windowed[-1], "swarmbench_window_response_time_seconds", name=AGGREGATED, quantile="0.95")
        >= 0.020
    )


def test_the_classic_histogram_adds_up_to_the_summary(scraped_run):
    scrapes, _out, _run_dir = scraped_run
    samples = parse(scrapes[-1])
    names = {lab["name"] for n, lab, _ in samples if n == "swarmbench_response_time_histogram_seconds_count"}
    assert names and AGGREGATED not in names
    total = sum(v for n, _, v in samples if n == "swarmbench_response_time_histogram_seconds_count")
    assert total == value(samples, "swarmbench_response_time_seconds_count", name=AGGREGATED)
    for name in names:
        series = [(lab["le"], v) for n, lab, v in samples if n.endswith("_bucket") and lab["name"] == name]
        assert len(series) == len(BUCKET_BOUNDS_S) + 1 and series[-1][0] == "+Inf"
        cumulative = [v for _, v in series]
        assert cumulative == sorted(cumulative), f"{name}: buckets are not cumulative"
        assert cumulative[-1] == value(samples, "swarmbench_response_time_histogram_seconds_count", name=name)
    requests = sum(v for n, _, v in samples if n == "swarmbench_requests_total")
    assert requests >= total > 0


def test_a_web_ui_run_serves_its_final_figures_which_are_its_files(albums_binary, tmp_path):
    """A web-UI master (one worker) scraped while a test goes, then after Stop: the run's folder is
    written and /metrics shows that run's final figures, the files' (Aggregated p95 and count)."""
    target = Target(albums_binary, ALBUMS_DELAY="20ms")
    metrics_port = free_port()
    stack = UiStack(tmp_path, target.url, "--metrics-port", str(metrics_port))
    try:
        stack.start()
        time.sleep(5)
        during = parse(scrape(metrics_port))
        post(stack.base + "/stop")
        time.sleep(1)
        after = parse(scrape(metrics_port))
    finally:
        stack.close()
        target.stop()
    assert value(during, "swarmbench_response_time_seconds_count", name=AGGREGATED) > 0
    run_dir = only_run(stack.results)
    with open(run_dir / folder.LATENCY_HDR_CSV, newline="") as f:
        hdr = {(r["name"], r["kind"]): r for r in csv.DictReader(f)}
    row = hdr[(AGGREGATED, "service")]
    p95 = value(after, "swarmbench_response_time_seconds", name=AGGREGATED, quantile="0.95")
    assert round(p95 * 1000, 6) == float(row["p95_ms"])
    assert value(after, "swarmbench_response_time_seconds_count", name=AGGREGATED) == int(row["count"])
    assert int(row["count"]) == int(stats(run_dir)[("", AGGREGATED)]["Request Count"])
    assert value(after, "swarmbench_run_state", state="stopped") == 1


def test_a_malformed_port_stops_the_run_in_one_line(tmp_path):
    res = run_locust(
        "--headless", "-H", "http://127.0.0.1:9", "-u", "1", "-t", "1s", "--results-dir", str(tmp_path),
        "AlbumsFastHttpUser", env={"SWARMBENCH_METRICS_PORT": "90x"}, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    errors = [line for line in res.stderr.splitlines() if "error:" in line]
    assert errors == [
        "swarmbench: error: --metrics-port/SWARMBENCH_METRICS_PORT: '90x' is not a TCP port (1-65535)"
    ]
    assert "Traceback" not in res.stderr and not list(tmp_path.iterdir())


def test_a_port_in_use_stops_the_run_before_a_folder_exists(tmp_path):
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run_locust(
            "--headless", "-H", "http://127.0.0.1:9", "-u", "1", "-t", "1s", "--results-dir", str(tmp_path),
            "--metrics-port", str(port), "AlbumsFastHttpUser", timeout=60,
        )  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    errors = [line for line in res.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"port {port} cannot be used" in errors[0], res.stderr[-2000:]
    assert "Traceback" not in res.stderr and not list(tmp_path.iterdir())


def test_no_port_no_endpoint(tmp_path: Path):
    """Without the option nothing listens: a run that does not ask for metrics is as before."""
    assert parse_port("") is None and parse_port(" 9646 ") == 9646
    for bad in ("0", "65536", "-1", "9646.0", "port"):
        with pytest.raises(ValueError, match="not a TCP port"):
            parse_port(bad)


@given(
    st.lists(
        st.tuples(
            st.text(max_size=12),
            st.one_of(st.floats(), st.integers(-(10**6), 10**6), st.booleans()),
        ),
        max_size=20,
    )
)
def test_one_label_a_line_at_once_writes_what_a_sample_at_a_time_writes(pairs):
    """Family.add_each (each worker's CPU and lag, 2,000 lines a scrape at 1,000 workers) is a
    faster path to the same lines as Family.add: escaping, NaN, the infinities, ints and bools."""
    one, each = Family("x_total", "gauge", "h"), Family("x_total", "gauge", "h")
    for value, x in pairs:
        one.add((("worker", value),), x)
    each.add_each("worker", pairs)
    assert each.text() == one.text()


HOLDER = '''
import os, time
from pathlib import Path
from gevent import monkey
from locust import User, constant, task

blocking_sleep = monkey.get_original("time", "sleep")


class Holder(User):
    """Holds the process's gevent loop for HOLD_S once, as a CPU-bound task or a blocking call does."""
    wait_time = constant(0.2)
    held = False

    @task
    def hold(self):
        if Holder.held:
            return
        Holder.held = True
        marks = Path(os.environ["HOLD_DIR"])
        (marks / "start").write_text(repr(time.time()))
        blocking_sleep(float(os.environ["HOLD_S"]))
        (marks / "end").write_text(repr(time.time()))
'''


def test_a_scrape_is_answered_while_the_loop_is_held(tmp_path):
    """/metrics is served from a thread of its own (plugin/metrics.py Endpoint): a scrape that
    comes while the process's gevent loop is held (3 s here) gets its answer before the hold ends,
    where a server in the loop answered only after it. The answer is the last body the loop
    rendered, a whole one."""
    (tmp_path / "holder.py").write_text(HOLDER)
    port = free_port()
    cmd = locust_cmd(
        "-f", f"locustfiles/swarmbench_plugin.py,{tmp_path / 'holder.py'}", "--headless", "-u", "1",
        "-r", "1", "-t", "6s", "--results-dir", str(tmp_path / "runs"), "--metrics-port", str(port),
        "--skip-host-check",  # its task sends no request: no target (locust.conf's host need not be up)
    )  # fmt: skip
    env = {**os.environ, "HOLD_DIR": str(tmp_path), "HOLD_S": "3"}
    log = tmp_path / "locust.log"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "start").exists():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.02)
        body = scrape(port)
        answered = time.time()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    held_until = float((tmp_path / "end").read_text())
    assert answered < held_until, f"answered {answered - held_until:.2f} s after the hold ended"
    # A whole document (parse() fails on a cut line), as rendered before the hold: 0 or 1 user.
    assert value(parse(body), "swarmbench_users") in (0, 1) and body.endswith("\n"), body[-2000:]
