"""Open-model load (--arrival-rate) in real Locust runs against the real target: the rate held across
two workers, drops and queueing on a slow target, a locustfile of one's own, a bad rate, a re-split
when a worker goes missing. The pure parts: test_open_model_units.py.
"""

from __future__ import annotations

import csv
import subprocess
import textwrap
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from harness import ROOT, Target, free_port, locust_cmd, run_locust, run_module
from pages import tables
from runs import manifest, method_counts, only_run, stats, target_album_requests, total

from swarmbench.analysis import openmodel as open_analysis
from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.figures import show_count, show_ms
from swarmbench.latency.histogram import CSV_COLUMNS
from swarmbench.page.run import worker_name

# Arrival rates held and dropped: run alone (make test-py). A bad rate's one line is not timed.
QUIET = pytest.mark.quiet

PROBE = "tests/fixtures/open_model/report_probe.py"
PROBE_PREFIX = "probe: arrival counts from "  # the probe's PREFIX (the probe imports Locust)

# --- real runs ----------------------------------------------------------------------------------------


def open_model(run_dir: Path) -> dict:
    m = manifest(run_dir)
    assert isinstance(m.get("open_model"), dict), f"run.json has no open_model: {sorted(m)}"
    return m["open_model"]


def hdr_rows(run_dir: Path) -> dict[tuple[str, str], dict[str, str]]:
    with open(run_dir / folder.LATENCY_HDR_CSV, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
        return {(r["name"], r["kind"]): r for r in reader}


@QUIET
def test_rate_held_across_two_workers(albums_target, tmp_path):
    """100 iterations/s split over two worker processes for ~16 s: achieved within 1 %, every
    iteration one request the target served, the journey's 3:1 kept, both latencies recorded."""
    port = str(free_port())
    res = run_locust(
        "--processes", "2", "--master-bind-port", port, "--master-port", port, "--headless",
        "-H", albums_target.url, "-t", "17s", "-u", "40", "-r", "40", "--arrival-rate", "100",
        "--results-dir", str(tmp_path), "AlbumsFastHttpUser",
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run(tmp_path)
    om = open_model(run_dir)
    assert om["window_s"] > 14, om
    assert om["offered_rate"] == pytest.approx(100, rel=1e-6)
    assert om["achieved_rate"] == pytest.approx(100, rel=0.01), om
    assert om["dropped_ratio"] < 0.01, om
    workers = om["per_worker"]
    assert len(workers) == 2, workers
    for w in workers.values():  # 20 users each: half the rate each
        assert w["scheduled"] == pytest.approx(om["iterations_scheduled"] / 2, rel=0.02), workers
    rows = stats(run_dir)
    requests = total(rows)
    assert total(rows, "Failure Count") == 0
    # one request per iteration (an iteration handed out at the very stop may never run)
    assert om["iterations_started"] - 2 <= requests <= om["iterations_started"]
    assert requests == target_album_requests(albums_target.metrics())
    by_method = method_counts(rows)
    assert by_method["GET"] / by_method["POST"] == pytest.approx(3, rel=0.05), by_method
    hdr = hdr_rows(run_dir)
    assert int(hdr[(AGGREGATED, "service")]["count"]) == requests
    assert int(hdr[(AGGREGATED, "intended")]["count"]) == requests
    assert float(hdr[(AGGREGATED, "intended")]["p50_ms"]) >= float(hdr[(AGGREGATED, "service")]["p50_ms"])
    # The generator's own share: every iteration's first request (here its only one) counted once,
    # by the worker that ran it; never later than the request's whole time from the intended start.
    lag = om["latency_ms"]["start_lag"]
    assert lag["count"] == int(hdr[(AGGREGATED, "intended")]["count"]), lag
    assert lag["count"] == sum(w["start_lag"]["count"] for w in workers.values()), workers
    assert 0 < lag["p50"] <= lag["p99"] <= float(hdr[(AGGREGATED, "intended")]["p99_ms"]), lag
    assert max(w["start_lag"]["p99"] for w in workers.values()) >= lag["p99"] - 1e-9
    shown_lag = tables((run_dir / folder.REPORT_HTML).read_text())["start-lag"]  # the page says the same
    expected = [("every generator", lag)] + [(worker_name(wid), w["start_lag"]) for wid, w in workers.items()]
    assert shown_lag[1:] == [
        [who, show_count(f["count"]), show_ms(f["p50"]), show_ms(f["p99"]), show_ms(f["max"])]
        for who, f in expected
    ], shown_lag
    with open(run_dir / folder.ARRIVAL_CSV, newline="") as f:
        per_second = list(csv.DictReader(f))
    assert sum(int(r["started"]) for r in per_second) == om["iterations_started"]
    full = [int(r["scheduled"]) for r in per_second[1:-1]]  # whole seconds of the schedule
    assert full and all(n == pytest.approx(100, abs=2) for n in full), full


@QUIET
@pytest.mark.parametrize("max_wait", ["0", "1s"])
def test_slow_target_drops_and_shows_what_a_closed_loop_hides(albums_binary, tmp_path, max_wait):
    """5 users, 100 ms per request: at most ~50 iterations/s of the 100 offered can start. Dropped
    at once (max wait 0), the started ones run on time; allowed to wait 1 s for a user, they
    queue, and the intended-start p99 is far above Locust's service-time p99."""
    target = Target(albums_binary, ALBUMS_DELAY="100ms")
    try:
        res = run_locust(
            "--headless", "-H", target.url, "-t", "7s", "-u", "5", "-r", "5", "--arrival-rate", "100",
            "--arrival-max-wait", max_wait, "--results-dir", str(tmp_path), "AlbumsHttpUser",
        )  # fmt: skip
    finally:
        target.stop()
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run(tmp_path)
    om = open_model(run_dir)
    assert om["achieved_rate"] <= 52, om  # 5 users / 0.1 s
    assert om["dropped_iterations"] >= 0.3 * om["iterations_scheduled"], om
    assert om["pool_exhaustion_events"] >= 1
    assert om["iterations_started"] + om["dropped_iterations"] == om["iterations_scheduled"]
    hdr = hdr_rows(run_dir)
    service = float(hdr[(AGGREGATED, "service")]["p99_ms"])
    intended = float(hdr[(AGGREGATED, "intended")]["p99_ms"])
    assert service >= 100
    lag = om["latency_ms"]["start_lag"]["p99"]  # the wait for a free user is the generator's share
    if max_wait == "0":
        assert om["queued_iterations"] == 0
        assert intended < service + 300, (intended, service)  # on time (give or take a busy CPU) or never
        assert lag < 300, lag
    else:
        assert om["queued_iterations"] > 0
        assert intended > 900 and intended > 3 * service, (intended, service)
        assert lag > 800 and lag <= intended, (lag, intended)
    run = open_analysis.load(run_dir)  # the analysis: curves, gap, verdict
    assert run.verdict.capacity_reached and run.verdict.by != "target CPU", run.verdict
    assert len(open_analysis.figure(run).axes) == 2
    if max_wait != "0":
        assert run.gap_p99_ms().max() > 500  # the queue for a free user, second by second
        report = run_module("analysis", "report", run_dir, "-o", tmp_path / "report")
        assert report.returncode == 0, report.stderr[-2000:]
        page = (tmp_path / "report" / "report.html").read_text()
        assert f"Open model — {run_dir.name}" in page and "capacity reached" in page
        assert f"first requests went out p99 {show_ms(lag)} ms late" in page  # run.json's figure
        assert (tmp_path / "report" / f"open_model_{run_dir.name}.png").is_file()


OWN_LOCUSTFILE = """
from locust import HttpUser, TaskSet, constant, task
from swarmbench.plugin import install

install()


class Browse(TaskSet):
    wait_time = constant(5)  # its own wait: the open model must replace this one too

    @task
    def two_requests(self):
        self.client.get("/healthz", name="health")
        self.client.get("/albums?limit=1", name="first page")


class Visitor(HttpUser):
    wait_time = constant(5)  # closed loop: 10 users could start at most 2 iterations/s
    tasks = [Browse]

    def on_start(self):
        self.client.get("/albums?limit=1", name="login")


class Admin(Visitor):  # inherits the wrapped on_start: must not wait for two iterations
    pass
"""


@QUIET
def test_a_locustfile_of_ones_own(albums_target, tmp_path):
    locustfile = tmp_path / "mine.py"
    locustfile.write_text(textwrap.dedent(OWN_LOCUSTFILE))
    res = run_locust(
        "-f", str(locustfile), "--headless", "-H", albums_target.url, "-t", "6s", "-u", "10", "-r", "10",
        "--arrival-rate", "40", "--results-dir", str(tmp_path / "results"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run(tmp_path / "results")
    om = open_model(run_dir)
    assert om["achieved_rate"] == pytest.approx(40, rel=0.03), om  # 20x the closed loop's cap
    hdr = hdr_rows(run_dir)
    started = om["iterations_started"]
    assert started - 2 <= int(hdr[("first page", "intended")]["count"]) <= started
    assert int(hdr[("login", "service")]["count"]) == 10
    assert ("login", "intended") not in hdr  # on_start is no iteration
    # an iteration's start lag is its first request's alone (health's: not first page's, nor login's)
    assert om["latency_ms"]["start_lag"]["count"] == int(hdr[("health", "intended")]["count"])
    # the second request of an iteration waited for the first: later from the intended start
    assert float(hdr[("first page", "intended")]["p50_ms"]) >= float(hdr[("health", "intended")]["p50_ms"])


HOLDING_LOCUSTFILE = """
import time

from locust import FastHttpUser, events, task


@events.test_stopping.add_listener  # before the plugin's: the hold comes before it hears of the stop
def hold(**_kw):
    end = time.perf_counter() + 0.5  # the loop held (time.sleep would yield: gevent patches it), as
    while time.perf_counter() < end:  # Locust's own stop() holds it (inspect.stack) before this event
        pass


from swarmbench.plugin import install

install()


class Visitor(FastHttpUser):
    @task
    def health(self):
        self.client.get("/healthz", name="health")
"""


@QUIET
def test_a_stop_that_holds_the_loop_drops_nothing(albums_target, tmp_path):
    """A slot that came due while the stopping Locust held the event loop found its users free,
    asleep on their timers: it is no drop, and the schedule ends where the loop last ran (the
    achieved rate is not diluted by the hold). 10 users at 100/s claim 100 ms ahead: the 0.5 s
    hold would leave ~40 slots unclaimed, each counted as dropped, with a pool exhaustion event."""
    locustfile = tmp_path / "holding.py"
    locustfile.write_text(HOLDING_LOCUSTFILE)
    res = run_locust(
        "-f", str(locustfile), "--headless", "-H", albums_target.url, "-t", "5s", "-u", "10", "-r", "10",
        "--arrival-rate", "100", "--results-dir", str(tmp_path / "results"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    om = open_model(only_run(tmp_path / "results"))
    assert (om["dropped_iterations"], om["pool_exhaustion_events"]) == (0, 0), om
    assert om["achieved_rate"] == pytest.approx(100, rel=0.01), om


def test_a_bad_arrival_rate_stops_before_a_folder_exists(albums_target, tmp_path):
    res = run_locust(
        "--headless", "-H", albums_target.url, "-t", "2s", "--arrival-rate", "100; 200@later",
        "--results-dir", str(tmp_path),
    )  # fmt: skip
    assert res.returncode == 2
    errors = [line for line in res.stderr.splitlines() if "error" in line.lower()]
    assert errors == [
        "swarmbench: error: --arrival-rate/LOCUST_ARRIVAL_RATE: invalid arrival rate '100; 200@later': "
        "stage 2 '200@later': 'later' is not a duration like 30s, 500ms, 2m or 1h; expected "
        "'RATE[@DURATION]; ...' such as '100', '50; 100@30s' or '100@10s; 400@1m'"
    ], res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert not any(tmp_path.iterdir())


@QUIET
def test_rate_re_split_when_a_worker_goes_missing(albums_target, tmp_path):
    """Two workers share 100/s; one is killed once both shipped counts: the survivor schedules its half
    until run.json records the worker missing, then the whole rate; the lost iterations are counted."""
    port = str(free_port())
    common = ["-f", f"locustfiles/albums.py,{PROBE}", "--arrival-rate", "100", "AlbumsFastHttpUser"]
    quiet = {"cwd": ROOT, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    workers = [
        subprocess.Popen(locust_cmd("--worker", "--master-port", port, *common), **quiet) for _ in range(2)
    ]
    master = subprocess.Popen(
        locust_cmd(
            "--master", "--master-bind-port", port, "--expect-workers", "2", "--headless",
            "-H", albums_target.url, "-t", "20s", "-u", "20", "-r", "20",
            "--results-dir", str(tmp_path), *common,
        ),
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    reports: Counter[str] = Counter()
    killed_at = None
    guard = threading.Timer(120, master.kill)  # a master that never ends ends the reading too
    guard.start()
    try:
        for line in master.stderr or ():  # to the end: the master exits after its run
            lines.append(line)
            if PROBE_PREFIX in line and killed_at is None:
                reports[line.split(PROBE_PREFIX, 1)[1]] += 1
                if len(reports) == 2 and min(reports.values()) >= 2:  # both shipped counts twice
                    killed_at = time.time()
                    workers[1].kill()
    finally:
        guard.cancel()
        for p in (master, *workers):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
    stderr = "".join(lines)
    assert killed_at is not None and "went missing" in stderr, stderr[-2000:]
    run_dir = only_run(tmp_path)
    om = open_model(run_dir)
    assert len(om["per_worker"]) == 2
    (missing,) = [e for e in manifest(run_dir)["events"] if e["kind"] == "worker_missing"]
    noticed_at = datetime.fromisoformat(missing["at"]).timestamp()
    with open(run_dir / folder.ARRIVAL_CSV, newline="") as f:
        seconds = [(float(r["timestamp"]), int(r["scheduled"])) for r in csv.DictReader(f)][:-1]  # whole
    both = [n for t, n in seconds[1:] if t + 1.5 <= killed_at]
    assert both and all(n == pytest.approx(100, abs=2) for n in both), (both, seconds)  # two halves
    alone = [n for t, n in seconds if t >= killed_at and t + 1 <= noticed_at]
    assert alone and min(alone) == pytest.approx(50, abs=2), (alone, seconds)  # the survivor's half
    after = [n for t, n in seconds if t >= noticed_at + 2]
    assert len(after) >= 3 and all(n == pytest.approx(100, abs=2) for n in after), (after, seconds)
    assert om["unscheduled_iterations"] >= max(100, sum(100 - n for n in alone)), om
