"""Read the bundled albums target's /metrics (Prometheus text format).

The target counts what it actually served; comparing that with what Locust recorded is how a run
proves its numbers (and the target's CPU seconds show whether the server was the limit). Any other
host simply has no such endpoint, and the run records `target: null`.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from swarmbench.core.manifest import TargetCounters

METRICS_TIMEOUT_S = 3.0
"""Short: the snapshot is taken at test start and end, and must not delay either noticeably."""

ALBUM_ROUTES = ("GET /albums", "GET /albums/{id}", "POST /albums")
"""Routes the load test drives; /healthz and /metrics (ours) are excluded from comparisons."""

# Label values may contain braces (route="GET /albums/{id}"): take everything up to the last "}".
_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+-?\d+)?$"
)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class TargetSnapshot:
    """One scrape of the target's counters."""

    store: str | None = None
    cpu_seconds: float | None = None
    cpus: float | None = None
    cpu_limit: float | None = None  # its cgroup's CPU limit (target/cgroup.go), None: an older target
    cpu_limit_source: str | None = None
    requests: dict[str, int] = field(default_factory=dict)  # by route, all status codes


def parse_metrics(text: str) -> TargetSnapshot:
    snap = TargetSnapshot()
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or line.startswith("#"):
            continue
        labels = dict(_LABEL.findall(m["labels"] or ""))
        value = float(m["value"])
        match m["name"]:
            case "albums_http_requests_total":
                route = labels.get("route", "")
                snap.requests[route] = snap.requests.get(route, 0) + int(value)
            case "process_cpu_seconds_total":
                snap.cpu_seconds = value
            case "albums_store_info":
                snap.store = labels.get("strategy")
            case "albums_config_cpus":
                snap.cpus = value
            case "albums_cpu_limit_cpus":
                snap.cpu_limit, snap.cpu_limit_source = value, labels.get("source")
    return snap


def scrape(host: str) -> TargetSnapshot | None:
    """Scrape HOST/metrics; None when the host is not the bundled target (or is down)."""
    url = host.rstrip("/") + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=METRICS_TIMEOUT_S) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    snap = parse_metrics(text)
    return snap if snap.store is not None else None


def delta(before: TargetSnapshot, after: TargetSnapshot) -> TargetCounters:
    """What the target did between two scrapes, as recorded in run.json."""
    routes = sorted(set(before.requests) | set(after.requests))
    requests = {r: after.requests.get(r, 0) - before.requests.get(r, 0) for r in routes}
    cpu = None
    if before.cpu_seconds is not None and after.cpu_seconds is not None:
        cpu = round(after.cpu_seconds - before.cpu_seconds, 3)
    return TargetCounters(
        store=after.store,
        cpus=after.cpus,
        cpu_limit=after.cpu_limit,
        cpu_limit_source=after.cpu_limit_source,
        cpu_seconds=cpu,
        requests={r: n for r, n in requests.items() if n},
        album_requests=sum(requests.get(r, 0) for r in ALBUM_ROUTES),
    )
