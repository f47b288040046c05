"""The monitoring profile without Docker: Debian's `prometheus` binary scrapes a real distributed
Locust run's /metrics (a master and two forked workers against the real Go target), and every
PromQL query of the provisioned Grafana dashboard (compose/grafana/dashboards/swarmbench.json)
returns data. compose/prometheus.yml is the configuration, its target pointed at this run."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import yaml
from harness import ROOT, Target, free_port, locust_cmd, missing, wait_http

DASHBOARD = ROOT / "compose" / "grafana" / "dashboards" / "swarmbench.json"
DATASOURCE = ROOT / "compose" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROMETHEUS_YML = ROOT / "compose" / "prometheus.yml"


def queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def ask(base: str, expr: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        answer = json.loads(r.read())
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_the_dashboard_names_the_provisioned_data_source_and_the_metrics_it_serves():
    uid = yaml.safe_load(DATASOURCE.read_text())["datasources"][0]["uid"]
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == uid
        assert all(t["datasource"]["uid"] == uid for t in panel["targets"])
    assert len(queries()) >= 8 and all("swarmbench_" in q for q in queries())


def test_prometheus_gets_data_for_every_dashboard_query_from_a_real_run(albums_binary, tmp_path):
    binary = shutil.which("prometheus")
    if binary is None:
        missing("Debian's prometheus is not installed (apt-get install -y prometheus)")
    metrics_port, prom_port, master_port = free_port(), free_port(), str(free_port())
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    config["global"]["scrape_interval"] = "1s"  # the compose file's 5 s, faster for a short test
    config["scrape_configs"][0]["static_configs"] = [{"targets": [f"127.0.0.1:{metrics_port}"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    target = Target(albums_binary, ALBUMS_DELAY="5ms")
    log = (tmp_path / "locust.log").open("w")
    run = subprocess.Popen(
        locust_cmd(
            "--processes", "2", "--master-bind-port", master_port, "--master-port", master_port, "--headless",
            "-H", target.url, "-u", "6", "-r", "6", "-t", "40s", "--wait-time", "constant 0.05",
            "--results-dir", str(tmp_path / "results"), "--metrics-port", str(metrics_port),
            "AlbumsFastHttpUser",
        ),
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    prom = subprocess.Popen(
        [binary, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"),
    )  # fmt: skip
    base = f"http://127.0.0.1:{prom_port}"
    try:
        wait_http(base + "/-/ready", timeout=60)
        empty: list[str] = queries()
        deadline = time.monotonic() + 35
        while empty and time.monotonic() < deadline and run.poll() is None:
            time.sleep(2)
            empty = [q for q in empty if not ask(base, q)]
        assert run.poll() is None, "the run ended before every query had data"
        assert not empty, f"no data for: {empty}"
        # Prometheus read the exact summary as the master served it.
        [p95] = ask(base, 'swarmbench_response_time_seconds{name="Aggregated",quantile="0.95"}')
        assert 0.005 <= float(p95["value"][1]) < 1.0
    finally:
        for proc in (prom, run):
            proc.terminate()
        for proc in (prom, run):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        target.stop()
        log.close()
