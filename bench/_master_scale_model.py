"""bench/bench_master_scale.py's seeded model: report templates whose truth is known.

A template is one simulated worker's 3 s of requests over K request names: name weights 1/rank
(Zipf), per name a lognormal latency around its own median with a 1 % long tail, FAIL_RATE failures,
at a random phase so the 3 s straddle OFFSETS one-second windows, as a real worker's report does.
From the same samples: Locust's own RequestStats gives the stats entries, stats_total and errors a
worker sends; the plugin's own Recorder gives the exact-latency window entries; and each sample's
microseconds are kept as the truth. At send time the simulator only fills in times and windows.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from locust.runners import WORKER_REPORT_INTERVAL
from locust.stats import RequestStats

from swarmbench.latency.histogram import clamped, to_us
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import WINDOW_S, Shipment

POOL = 64
"""Report templates per run (each K names' stats and windows): enough distinct payloads that no
cache of repeated strings could help a master, few enough to make in a second or two."""

FAIL_RATE = 0.005
"""Share of requests that fail: the reports carry Locust's errors and the windows' failure counts."""

RESPONSE_BYTES = 1800
"""Content length of a simulated response (Locust's total_content_length)."""

OFFSETS = 4
"""Windows a report touches: 3 s of requests at a random phase straddle 4 one-second windows."""


@dataclass
class Template:
    """One worker's 3 s of requests over K names: what a report carries, and its truth."""

    stats: list[tuple[dict[str, Any], list[int], list[int]]]  # (Locust's entry, requests, fails per window)
    total: tuple[dict[str, Any], list[int], list[int]]
    errors: dict[str, dict[str, Any]]
    windows: Shipment  # the Recorder's, its windows numbered 0..3 (offsets)
    truth: dict[tuple[int, int], Counter[int]]  # (name index, window offset) -> {µs: count}
    requests: list[int]  # per name
    failures: list[int]


def request_names(k: int) -> list[tuple[str, str]]:
    """K (method, name) pairs: mostly GETs, every fourth a POST."""
    return [("POST" if i % 4 == 3 else "GET", f"/api/v1/resource{i}/[id]") for i in range(k)]


def make_templates(names: int, rps: float, seed: int, count: int = POOL) -> list[Template]:
    """COUNT templates of 3 s each, seeded: name weights 1/rank (Zipf), per name a lognormal
    latency around its own median with a 1 % tail, windows split at a random phase."""
    rng = random.Random(seed)
    pairs = request_names(names)
    weights = [1 / (i + 1) for i in range(names)]
    medians = [rng.uniform(5, 200) for _ in range(names)]
    per_report = max(1, round(rps * WORKER_REPORT_INTERVAL))
    out = []
    for _ in range(count):
        phase = rng.random()
        stats = RequestStats()
        recorder = Recorder()
        truth: dict[tuple[int, int], Counter[int]] = {}
        per_window: dict[tuple[int, int], list[int]] = {}
        for k in rng.choices(range(names), weights, k=per_report):
            method, name = pairs[k]
            ms = medians[k] * rng.lognormvariate(0, 0.5) + (
                rng.expovariate(0.01) if rng.random() < 0.01 else 0
            )
            at = phase + rng.random() * WORKER_REPORT_INTERVAL
            failed = rng.random() < FAIL_RATE
            j = int(at // WINDOW_S)
            recorder.record_closed(at, method, name, ms, failed)
            stats.log_request(method, name, ms, RESPONSE_BYTES)
            if failed:
                stats.log_error(method, name, "HTTPError('500 Server Error')")
            truth.setdefault((k, j), Counter())[clamped(to_us(ms))] += 1
            counts = per_window.setdefault((k, j), [0, 0])
            counts[0] += 1
            counts[1] += failed
        windows, _timeline = recorder.take()
        serialized = {(e["method"], e["name"]): e for e in stats.serialize_stats()}
        index = {pair: k for k, pair in enumerate(pairs)}
        rows = []
        for pair, entry in serialized.items():
            k = index[pair]
            rows.append((entry, *per_name_seconds(per_window, k)))
        total_req = [sum(per_window.get((k, j), [0, 0])[0] for k in range(names)) for j in range(OFFSETS)]
        total_fail = [sum(per_window.get((k, j), [0, 0])[1] for k in range(names)) for j in range(OFFSETS)]
        requests = [sum(per_window.get((k, j), [0, 0])[0] for j in range(OFFSETS)) for k in range(names)]
        failures = [sum(per_window.get((k, j), [0, 0])[1] for j in range(OFFSETS)) for k in range(names)]
        out.append(
            Template(
                stats=rows,
                total=(stats.total.serialize(), total_req, total_fail),
                errors=stats.serialize_errors(),
                windows=windows,
                truth=truth,
                requests=requests,
                failures=failures,
            )
        )
    return out


def per_name_seconds(per_window: dict[tuple[int, int], list[int]], k: int) -> tuple[list[int], list[int]]:
    return (
        [per_window.get((k, j), [0, 0])[0] for j in range(OFFSETS)],
        [per_window.get((k, j), [0, 0])[1] for j in range(OFFSETS)],
    )


def stamped(
    entry: dict[str, Any], req: list[int], fail: list[int], seconds: list[int], since: float, now: float
) -> dict[str, Any]:
    """A template's Locust entry with this report's times: its requests per epoch second."""
    per_sec: dict[int, int] = {}
    fail_sec: dict[int, int] = {}
    for second, n, f in zip(seconds, req, fail, strict=True):
        if n:
            per_sec[second] = per_sec.get(second, 0) + n
        if f:
            fail_sec[second] = fail_sec.get(second, 0) + f
    return {
        **entry,
        "start_time": since,
        "last_request_timestamp": now,
        "num_reqs_per_sec": per_sec,
        "num_fail_per_sec": fail_sec,
    }


def empty_total(since: float) -> dict[str, Any]:
    """stats_total of a worker with no request since its last report (before the test starts)."""
    entry = RequestStats().total.serialize()
    entry["start_time"] = since
    return entry
