"""Unit tests of the plugin's pure parts: wait-time specs, the target's metrics, run folders, CPU.

Locust's own objects are not needed here; the plugin's integration is covered by the real runs in
test_local_runs.py and test_compose_e2e.py. These modules import no Locust, so Locust (which
monkey-patches the standard library with gevent on import) never enters the pytest process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from harness import ROOT

from swarmbench.core import folder, target
from swarmbench.plugin import generator

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

METRICS = (ROOT / "tests" / "fixtures" / "metrics" / "albums_rwmutex.prom").read_text()
"""What the real target served on /metrics after a few real requests (see the fixture's README)."""


def test_metrics_parser_reads_route_labels_with_braces():
    snap = target.parse_metrics(METRICS)
    assert snap.store == "rwmutex"
    # every route, summed over its status codes (GET /albums: 3 x 200 + 1 x 400)
    assert snap.requests == {
        "GET /albums": 4,
        "GET /albums/{id}": 2,
        "POST /albums": 1,
        "GET /healthz": 1,
        "GET /metrics": 1,
    }
    assert snap.cpu_seconds == 0.010303
    assert snap.cpus == 2


@pytest.fixture
def other_hosts() -> Iterator[str]:
    """A real HTTP server on loopback that is not the bundled target: /metrics serves the target's
    text, /exporter/metrics another program's Prometheus text, anything else 404."""
    pages = {"/metrics": METRICS, "/exporter/metrics": "# TYPE up gauge\nup 1\nprocess_cpu_seconds_total 4\n"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_scrape_of_a_host_without_our_metrics_is_none(other_hosts):
    assert target.scrape(other_hosts + "/nope") is None  # 404: not the bundled target
    assert target.scrape(other_hosts + "/exporter") is None  # Prometheus text, but not ours
    assert target.scrape("http://127.0.0.1:9") is None  # nothing listening
    snap = target.scrape(other_hosts)  # the control: the same server with the target's text is read
    assert snap is not None and snap.store == "rwmutex" and snap.requests["POST /albums"] == 1


def test_delta_counts_only_what_happened_between_scrapes():
    before = target.parse_metrics(
        'albums_http_requests_total{route="GET /albums",code="200"} 5\nprocess_cpu_seconds_total 1.5\n'
        'albums_store_info{strategy="mutex"} 1\n'
    )
    after = target.parse_metrics(
        'albums_http_requests_total{route="GET /albums",code="200"} 9\n'
        'albums_http_requests_total{route="POST /albums",code="201"} 2\n'
        'albums_http_requests_total{route="GET /metrics",code="200"} 1\n'
        "process_cpu_seconds_total 2.25\n"
        'albums_store_info{strategy="mutex"} 1\n'
    )
    d = target.delta(before, after)
    assert d.requests == {"GET /albums": 4, "GET /metrics": 1, "POST /albums": 2}
    assert d.album_requests == 6  # /metrics is not an album route
    assert d.cpu_seconds == 0.75 and d.store == "mutex"


@pytest.mark.parametrize(
    ("workers", "want"),
    [(None, "20261121T194500Z_AlbumsHttpUser_local"), (4, "20261121T194500Z_AlbumsHttpUser_w4")],
)
def test_run_ids_say_time_class_and_workers(workers, want):
    assert folder.make_run_id(datetime(2026, 11, 21, 19, 45, tzinfo=UTC), ["AlbumsHttpUser"], workers) == want


def test_run_ids_are_filesystem_safe():
    rid = folder.make_run_id(datetime(2026, 1, 1, tzinfo=UTC), ["A/B", "C D"], 2)
    assert "/" not in rid and " " not in rid and rid.endswith("_w2")


def test_generated_run_ids_never_collide_and_explicit_ones_never_overwrite(tmp_path):
    first = folder.create_run_dir(str(tmp_path), "r", explicit=False)
    second = folder.create_run_dir(str(tmp_path), "r", explicit=False)
    assert (first.name, second.name) == ("r", "r-2")
    with pytest.raises(FileExistsError):
        folder.create_run_dir(str(tmp_path), "r", explicit=True)


def test_cpu_series_mean_and_busiest_interval():
    s = generator.CpuSeries()
    for wall, used in [(3.0, 0.3), (6.0, 2.7), (9.0, 3.0)]:  # 10 %, 80 %, 10 % per interval
        s.add(wall, used)
    assert s.mean_percent() == pytest.approx(33.3, abs=0.1)
    assert s.max_percent() == pytest.approx(80.0)
    assert generator.summarize({"a": s}).max_percent == pytest.approx(80.0)


def test_cpu_series_max_is_never_below_the_mean():
    s = generator.CpuSeries()
    s.add(3.0, 1.5)
    s.add(3.4, 2.0)  # a short last interval is merged, not dropped
    assert s.max_percent() >= s.mean_percent()
