"""Hardening (issue 10): a service on the user's own machine is reachable from the containers
through host.docker.internal (marked `docker`).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hardening import HARDENING
from make_runs import compose_env, run_on_stack

# --- a service on the user's own machine -----------------------------------------------------------


def docker_bridge_address() -> str:
    """The default bridge's gateway: the host as containers see it, what host-gateway maps to.
    Older engines leave Gateway out of the IPAM config: it is then the subnet's first address."""
    out = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    config = json.loads(out.stdout)[0]
    return config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


class CountingServer:
    """A tiny HTTP service "on the user's machine": 200 to every GET, counted; stops with the test."""

    LIFETIME_S = 240.0
    """Upper bound even if the test hangs: the server shuts itself down."""

    def __init__(self, address: str) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.httpd = ThreadingHTTPServer((address, 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.timer = threading.Timer(self.LIFETIME_S, self.httpd.shutdown)

    def __enter__(self) -> CountingServer:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.docker
def test_a_service_on_the_host_is_reachable_as_host_docker_internal(docker_compose, tmp_path):
    # Bound to the bridge gateway, not 0.0.0.0: reachable by the containers, not by the network.
    with CountingServer(docker_bridge_address()) as server:
        env = compose_env(
            tmp_path,
            LOCUST_HOST=f"http://host.docker.internal:{server.port}",
            SWARMBENCH_MOUNT=str(HARDENING),
            LOCUST_LOCUSTFILE="/mnt/locust/ping_locustfile.py",
            LOCUST_USER_CLASSES="PingUser",
            LOCUST_USERS="2",
            LOCUST_SPAWN_RATE="2",
            LOCUST_RUN_TIME="5s",
        )
        res = run_on_stack("headless", "--staging", env=env)
        served = server.requests
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    (run_dir,) = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    assert {p.name for p in run_dir.iterdir()} >= {
        "locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv", "locust_exceptions.csv",
        "report.html", "run.json",
    }  # fmt: skip
    man = json.loads((run_dir / "run.json").read_text())
    assert man["host"] == env["LOCUST_HOST"] and man["totals"]["failures"] == 0
    # Every request Locust counted reached our server (the pre-flight check adds one more).
    assert man["totals"]["requests"] > 20 and served >= man["totals"]["requests"]
