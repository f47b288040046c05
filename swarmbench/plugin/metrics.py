"""`/metrics` on the master: the run as Prometheus scrapes it, on a port of its own
(--metrics-port / SWARMBENCH_METRICS_PORT), from the master or a standalone process, headless or
web UI.

What it serves is what the master already holds (docs/live.md lists every name):

    swarmbench_response_time_seconds        summary: the exact merged p50/p90/p95/p99 of the run
                                            so far per (type, name) and Aggregated (the web UI's
                                            tab, the live status, the final locust_latency_hdr.csv
                                            come from the same histograms), _count and _sum
    swarmbench_window_response_time_seconds the same of the last sealed 1 s window (exact: no
                                            piece of it can still come)
    swarmbench_response_time_histogram_seconds
                                            a classic histogram, 10 log-spaced buckets a decade
                                            from 0.1 ms to 100 s, counted from the HDR buckets:
                                            histogram_quantile() and sums over names and time
    swarmbench_requests_total / _failures_total per (type, name), Locust's counts
    swarmbench_users, _workers, _workers_expected, _run_state, _generator_cpu_percent,
    swarmbench_generator_lag_p99_seconds, swarmbench_arrival_dropped_total (open model)

Scraping changes nothing the run measures. Every COUNT_EVERY_S the master's loop counts the samples
the workers sent since (the histograms the live status reads, plugin/latency.py live_totals), keeps
them with Locust's sums of response times of that instant (so a summary's _count and _sum always
agree) and renders the whole answer from them, between two reports, never during a merge; again
when a run's folder is written. An OS thread of its own (Endpoint) answers each scrape with the
latest rendering, at most COUNT_EVERY_S old, without waiting for the loop. bench/bench_scrape.py
measures what scraping costs and how fast a scrape is answered.
"""

from __future__ import annotations

import _socket  # the C module: gevent patches `socket`, never this
import contextlib
import csv
import logging
import math
from collections.abc import Callable
from typing import Any

import gevent
from gevent import monkey
from locust.env import Environment
from locust.runners import (
    STATE_CLEANUP,
    STATE_INIT,
    STATE_MISSING,
    STATE_RUNNING,
    STATE_SPAWNING,
    STATE_STOPPED,
    STATE_STOPPING,
    MasterRunner,
    Runner,
    WorkerRunner,
)

from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exposition import (
    BUCKET_BOUNDS_S,
    BUCKET_LABELS,
    CONTENT_TYPE,
    Family,
    document,
    parse_port,
)
from swarmbench.latency.histogram import LatencyBook, bucket_index
from swarmbench.latency.scan import scan
from swarmbench.latency.windows import WINDOW_COLUMNS, Windows
from swarmbench.plugin.options import die

logger = logging.getLogger("swarmbench")

PREFIX = "swarmbench_"

COUNT_EVERY_S = 2.0
"""While /metrics is served, how often the master counts the samples the workers sent since the last
count (latency/windows.py Windows.totals: each sample is counted once, whenever that is) and keeps
the result for the scrapes, as the live status does (every 2 s). A scrape that counted them itself
waited for them: at 1,000 workers x 200 requests/s, ~400,000 samples (40-130 ms). Counting more
often costs more (each count adds every name's new counts into its run histogram: at 0.5 s, ~7 % of
a core more at 1,000 workers), and Prometheus scrapes every 5-15 s."""

QUANTILES = (0.5, 0.9, 0.95, 0.99)
"""The summary's quantiles: the percentiles people set SLOs on (p99.9 needs more samples than a
window holds; the run's is in locust_latency_hdr.csv)."""

WINDOW_QUANTILE_COLUMNS = {0.5: "p50_ms", 0.9: "p90_ms", 0.95: "p95_ms", 0.99: "p99_ms"}
"""A sealed window's row (latency/windows.py WINDOW_COLUMNS) column of each quantile."""

STATES = (
    STATE_INIT,
    STATE_SPAWNING,
    STATE_RUNNING,
    STATE_STOPPING,
    STATE_STOPPED,
    STATE_CLEANUP,
    STATE_MISSING,
)
"""Locust's runner states: swarmbench_run_state has one series each, 1 for the current one."""

SERVICE = "service"

REQUEST_LIMIT = 8192
"""Bytes of a request's head the endpoint reads at most (a scrape's is ~200)."""

CLIENT_TIMEOUT_S = 5.0
"""How long the endpoint waits for a client to send its request or take the answer."""

start_thread = monkey.get_original("_thread", "start_new_thread")
"""An OS thread (gevent's patched one would be a greenlet in the master's loop)."""

thread_sleep = monkey.get_original("time", "sleep")
"""A sleep of that thread alone (gevent's would wait on a loop of its own there)."""


class Endpoint:
    """/metrics served from an OS thread of its own, from a body the master's loop renders.

    In the loop, a scrape waited for every message handled before it, several times over (accept,
    read, write): at 1,000 workers its answer took 26-48 ms at the median and 99-298 ms at worst,
    with the master on a core of its own (bench_scrape.py --pin), though nothing held the loop 40 ms.
    Here the answer waits only for Python's GIL, which the loop hands over at least every 5 ms
    (sys.getswitchinterval()); the body is a bytes object swapped whole, so a scrape reads a
    complete one. Blocking calls on the C socket module's own sockets: gevent patches `socket`,
    and a gevent socket in another thread would start a second loop there."""

    def __init__(self, host: str, port: int) -> None:
        family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self.body = b""

    def start(self) -> None:
        start_thread(self._serve, ())

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(_socket.SHUT_RDWR)  # wakes the thread's accept() (close alone does not)
        self.sock.close()  # its next accept() fails on the closed socket, and it ends

    def _serve(self) -> None:
        while True:
            try:
                fd, _addr = self.sock._accept()
            except OSError:
                if self.sock.fileno() == -1:
                    return  # stop()
                thread_sleep(0.05)  # the client gave up first (ECONNABORTED), or descriptors ran out
                continue
            start_thread(self._answer, (_socket.socket(fileno=fd),))

    def _answer(self, conn: Any) -> None:
        try:
            conn.settimeout(CLIENT_TIMEOUT_S)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < REQUEST_LIMIT:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            conn.sendall(answer(head.split(b"\r\n", 1)[0], self.body))
        except OSError:
            pass  # the client went away: nothing to tell it
        finally:
            conn.close()


def answer(request_line: bytes, body: bytes) -> bytes:
    """The whole HTTP/1.1 response to REQUEST_LINE (`GET /metrics HTTP/1.1`): the body for GET or
    HEAD of /metrics, 404 elsewhere, 405 for another method; the connection closed after it."""
    parts = request_line.decode("latin-1").split()
    method, path = (parts[0], parts[1].split("?", 1)[0]) if len(parts) >= 2 else ("", "")
    if method not in ("GET", "HEAD"):
        status, ctype, body = "405 Method Not Allowed", "text/plain", b"only GET /metrics\n"
    elif path not in ("/metrics", "/metrics/"):
        status, ctype, body = "404 Not Found", "text/plain", b"not found: the metrics are at /metrics\n"
    else:
        status, ctype = "200 OK", CONTENT_TYPE
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + (b"" if method == "HEAD" else body)


def _seconds(ms: float) -> float:
    return round(ms / 1000, 9)


def _labels(request_type: str, name: str) -> tuple[tuple[str, str], ...]:
    return (("type", request_type), ("name", name))


BOUND_INDICES = tuple(bucket_index(round(bound * 1_000_000)) for bound in BUCKET_BOUNDS_S)
"""Each classic bucket's bound as an HDR counts index: a sample counts under `le` when its HDR bucket
is the bound's or below (within HDR's 0.1 %)."""


def latency_families(book: LatencyBook, sums_ms: Callable[[str, str], float]) -> list[Family]:
    """The run so far: the summary (exact quantiles, count, and _sum from SUMS_MS(type, name), Locust's
    exact sum of response times) and the classic histogram, per (type, name) and, in the summary,
    Aggregated (a quantile cannot be added up over names; the histogram and counters can)."""
    summary = Family(
        PREFIX + "response_time_seconds",
        "summary",
        "Exact response time of the run so far, merged over every generator (HDR, 3 significant digits).",
    )
    histogram = Family(
        PREFIX + "response_time_histogram_seconds",
        "histogram",
        "Response times of the run so far in log-spaced buckets counted from the exact HDR histograms.",
    )
    keyed = sorted((key[0], key[1]) for key in book.hists if key[2] == SERVICE)
    for request_type, name in [*keyed, ("", AGGREGATED)]:
        hist = book.hists[(request_type, name, SERVICE)] if request_type else book.aggregated(SERVICE)
        total = hist.get_total_count()
        if not total:
            continue
        labels = _labels(request_type, name)
        cumulative, values = scan(hist, BOUND_INDICES, [q * 100 for q in QUANTILES])
        for q in QUANTILES:
            summary.add((*labels, ("quantile", f"{q:g}")), _seconds(values[q * 100] / 1000))
        summary.add(labels, total, "_count")
        summary.add(labels, _seconds(sums_ms(request_type, name)), "_sum")
        if request_type:
            pairs = [*zip(BUCKET_LABELS, cumulative, strict=True), ("+Inf", total)]
            histogram.add_series("_bucket", labels, "le", pairs)
            histogram.add(labels, total, "_count")
            histogram.add(labels, _seconds(sums_ms(request_type, name)), "_sum")
    return [summary, histogram]


def sealed_windows(windows: Windows) -> list[int]:
    """The windows sealed so far (exact: no piece of them can still come), oldest first."""
    return sorted(w for w in windows.sealed if w not in windows.piles)


def sealed_rows(windows: Windows, window: int) -> list[dict[str, str]]:
    """A sealed WINDOW's service-time rows (per name and Aggregated), as locust_latency_windows.csv
    will hold them: read back from the lines sealing made (nothing is counted again)."""
    rows = [dict(zip(WINDOW_COLUMNS, line, strict=True)) for line in csv.reader(windows.sealed[window])]
    return [r for r in rows if r["kind"] == SERVICE]


def last_sealed(windows: Windows) -> tuple[int, list[dict[str, str]]] | None:
    """The newest sealed window and its rows; None before the first is sealed."""
    done = sealed_windows(windows)
    return (done[-1], sealed_rows(windows, done[-1])) if done else None


def window_families(sealed: tuple[int, list[dict[str, str]]] | None) -> list[Family]:
    """The last sealed window: its quantiles, count and failures per name and Aggregated, and which
    window it is (seconds from the test start)."""
    summary = Family(
        PREFIX + "window_response_time_seconds",
        "summary",
        "Exact response time of the last sealed 1 s window, merged over every generator.",
    )
    failures = Family(PREFIX + "window_failures", "gauge", "Failed requests in the last sealed window.")
    start = Family(
        PREFIX + "window_start_seconds", "gauge", "The last sealed window's start, from the test start."
    )
    if sealed is not None:
        window, rows = sealed
        start.add((), window)
        for row in rows:
            labels = _labels(row["type"], row["name"])
            for q, column in WINDOW_QUANTILE_COLUMNS.items():
                summary.add((*labels, ("quantile", f"{q:g}")), _seconds(float(row[column])))
            summary.add(labels, int(row["count"]), "_count")
            failures.add(labels, int(row["failures"]))
    return [summary, failures, start]


def stats_families(env: Environment) -> list[Family]:
    """Locust's counts per (type, name): what locust_stats.csv will say (counters: rate() works)."""
    requests = Family(PREFIX + "requests_total", "counter", "Requests per type and name (Locust's counts).")
    failures = Family(PREFIX + "failures_total", "counter", "Failed requests per type and name.")
    for (name, method), entry in sorted(env.stats.entries.items()):
        labels = _labels(method or "", name)
        requests.add(labels, entry.num_requests)
        failures.add(labels, entry.num_failures)
    return [requests, failures]


def run_families(runner: Runner, run: Any, dropped: int | None) -> list[Family]:
    """Users, workers, the runner's state and each generator's health (CPU, event-loop lag)."""
    users = Family(PREFIX + "users", "gauge", "Users running now.")
    users.add((), int(runner.user_count))
    state = Family(PREFIX + "run_state", "gauge", "Locust's runner state: 1 for the current one.")
    for name in STATES:
        state.add((("state", name),), int(runner.state == name))
    families = [users, state]
    info = Family(PREFIX + "run_info", "gauge", "The run being recorded (its folder's name).")
    if run is not None:
        info.add((("run_id", run.manifest.run_id or ""), ("started_from", run.started_from or "")), 1)
    families.append(info)
    if isinstance(runner, MasterRunner):
        workers = Family(PREFIX + "workers", "gauge", "Connected load generators.")
        workers.add((), runner.worker_count)
        expected = Family(PREFIX + "workers_expected", "gauge", "Load generators the run expects.")
        if run is not None and run.health.expected is not None:
            expected.add((), run.health.expected)
        cpu = Family(PREFIX + "generator_cpu_percent", "gauge", "Each worker's CPU use as it reports it.")
        cpu.add_each("worker", ((cid, float(node.cpu_usage)) for cid, node in sorted(runner.clients.items())))
        families += [workers, expected, cpu]
    lag = Family(
        PREFIX + "generator_lag_p99_seconds", "gauge", "Each generator's event-loop lag p99, run so far."
    )
    if run is not None:
        p99s = ((worker, whole.get("p99_ms")) for worker, whole in sorted(run.lag.whole.items()))
        lag.add_each("worker", ((worker, _seconds(ms)) for worker, ms in p99s if isinstance(ms, int | float)))
    families.append(lag)
    drops = Family(
        PREFIX + "arrival_dropped_total", "counter", "Open model: iterations that found no idle user."
    )
    if dropped is not None:
        drops.add((), dropped)
    families.append(drops)
    return families


Counted = tuple[LatencyBook, dict[tuple[str, str], float]]
"""A count: the run-so-far histograms and Locust's sum of response times (ms) per (type, name) and
("", Aggregated), of the same instant."""


class Metrics:
    """The endpoint of this process (master or standalone): bound at init (a port in use stops the
    run before anything exists), served until the process ends."""

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin  # the Swarmbench object: its env, run, latency, open model
        self.server: Endpoint | None = None
        self.port: int | None = None
        self._cached: tuple[Any, str] | None = None  # (what the latency part was made of, its text)
        self._counted: Counted | None = None  # the latest count (_keep_counted)
        self.counter: gevent.Greenlet | None = None

    def _keep_counted(self) -> None:
        """Every COUNT_EVERY_S, the latest count (the same work a scrape did, in smaller pieces and
        off the answer's path), and the body the scrapes get rendered from it."""
        while True:
            gevent.sleep(COUNT_EVERY_S)
            self.plugin.latency.count_in_steps()  # the bulk a batch at a time; count() the rest
            new, old = self.count(), self._counted
            if new is None or old is None or new[0] is not old[0] or new[1] != old[1]:
                self._counted = new  # else the same figures: the scrapes' cached text stands
            self.refresh()

    def refresh(self) -> None:
        """Render what a scrape gets now (the loop's work; the endpoint's thread only sends it):
        every COUNT_EVERY_S, and when a run's folder is written (its final figures at once)."""
        if self.server is not None:
            self.server.body = self.text().encode()

    def count(self) -> Counted | None:
        """The run so far counted now (a standalone process's own samples filed first; once a run's
        folder is written, until the next starts, that run's final figures, as the web UI's tab
        shows), with Locust's sums of response times of the same instant (nothing yields between)."""
        env, latency = self.plugin.env, self.plugin.latency
        if env is None or env.runner is None or not latency.enabled:
            return None
        book = latency.ui_totals()
        sums = {("", AGGREGATED): float(env.stats.total.total_response_time)}
        for (name, method), entry in env.stats.entries.items():
            sums[(method or "", name)] = float(entry.total_response_time)
        return book, sums

    def on_init(self, environment: Environment, runner: Runner, **_kw: Any) -> None:
        """Validate --metrics-port and bind it (master or standalone; workers serve nothing)."""
        opts = environment.parsed_options
        if opts is None or isinstance(runner, WorkerRunner):
            return
        try:
            self.port = parse_port(str(getattr(opts, "metrics_port", "") or ""))
        except ValueError as e:
            die(f"--metrics-port/SWARMBENCH_METRICS_PORT: {e}")
        if self.port is None:
            return
        host = opts.web_host if opts.web_host not in ("*", None) else ""
        try:
            server = Endpoint(host, self.port)
        except OSError as e:
            die(
                f"--metrics-port/SWARMBENCH_METRICS_PORT: port {self.port} cannot be used ({e.strerror or e})"
            )
        self.server = server
        self.refresh()  # a scrape before the first count gets the figures as they stand
        server.start()
        self.counter = gevent.spawn(self._keep_counted)
        logger.info("Prometheus metrics on http://%s:%d/metrics", host or "0.0.0.0", self.port)

    def text(self) -> str:
        """One scrape's answer."""
        plugin = self.plugin
        env = plugin.env
        if env is None or env.runner is None:
            return ""
        latency = plugin.latency
        parts = [document(stats_families(env))]
        if latency.enabled:
            parts.insert(0, self._latency_text(env))
        om = plugin.open_model
        dropped = om.counts.dropped if om.active else None  # as the generators reported so far
        parts.append(document(run_families(env.runner, plugin.run, dropped)))
        return "".join(parts)

    def _latency_text(self, env: Environment) -> str:
        """The latency families: the run so far from the latest count (counted now when there is
        none: a server not started by on_init), the last sealed window as it stands. Each part is
        made again only when what it is made of changed."""
        latency = self.plugin.latency
        # While a run goes, the latest count; a finished web-UI run's final figures (its folder's)
        # at once, not after the next count.
        counted = self._counted if self.counter is not None and latency.windows else None
        counted = counted or self.count()
        if counted is None:
            return ""
        sealed = last_sealed(latency.windows)
        key = (id(counted), id(latency.windows), sealed[0] if sealed else None)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        book, sums = counted
        text = document(
            [
                *latency_families(book, lambda t, n: sums.get((t, n), math.nan)),
                *window_families(sealed),
            ]
        )
        self._cached = (key, text)
        return text

    def stop(self) -> None:
        if self.counter is not None:
            self.counter.kill(block=False)
            self.counter = None
        if self.server is not None:
            self.server.stop()
            self.server = None
