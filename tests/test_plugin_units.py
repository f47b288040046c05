"""Unit tests of the plugin's pure parts: wait-time specs, the target's metrics, run folders, CPU.

Locust's own objects are not needed here; the plugin's integration is covered by the real runs in
test_local_runs.py and test_compose_e2e.py. These modules import no Locust, so Locust (which
monkey-patches the standard library with gevent on import) never enters the pytest process.
"""

from __future__ import annotations

import urllib.request
from datetime import UTC, datetime

import pytest

from swarmbench.core import folder, target
from swarmbench.plugin import cpu


def test_metrics_parser_reads_route_labels_with_braces(albums_target):
    urllib.request.urlopen(albums_target.url + "/albums/1").close()
    urllib.request.urlopen(albums_target.url + "/albums?limit=2").close()
    snap = target.parse_metrics(albums_target.metrics())
    assert snap.store == "rwmutex"
    assert snap.requests["GET /albums/{id}"] == 1
    assert snap.requests["GET /albums"] == 1
    assert snap.cpu_seconds is not None and snap.cpu_seconds >= 0
    assert snap.cpus is not None and snap.cpus >= 1


def test_scrape_of_a_host_without_our_metrics_is_none(albums_target):
    assert target.scrape(albums_target.url + "/healthz/nope") is None  # 404: not the bundled target
    assert target.scrape("http://127.0.0.1:9") is None  # nothing listening


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
    s = cpu.CpuSeries()
    for wall, used in [(3.0, 0.3), (6.0, 2.7), (9.0, 3.0)]:  # 10 %, 80 %, 10 % per interval
        s.add(wall, used)
    assert s.mean_percent() == pytest.approx(33.3, abs=0.1)
    assert s.max_percent() == pytest.approx(80.0)
    assert cpu.summarize({"a": s}).max_percent == pytest.approx(80.0)


def test_cpu_series_max_is_never_below_the_mean():
    s = cpu.CpuSeries()
    s.add(3.0, 1.5)
    s.add(3.4, 2.0)  # a short last interval is merged, not dropped
    assert s.max_percent() >= s.mean_percent()
