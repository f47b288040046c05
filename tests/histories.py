"""Synthetic run folders in Locust's own CSV format whose every rate is known: per-second traffic
split over workers that report every few seconds, as Locust's master records it. Read back through
the real reader by test_analysis_timeseries.py and test_analysis_knee.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HISTORY_HEADER = (
    "Timestamp,User Count,Type,Name,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%,"
    "Total Request Count,Total Failure Count,Total Median Response Time,Total Average Response Time,"
    "Total Min Response Time,Total Max Response Time,Total Average Content Size"
)
STATS_HEADER = (
    "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,"
    "Max Response Time,Average Content Size,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,"
    "99.99%,100%"
)
T0 = 1_800_000_000


def write_run(
    folder: Path,
    users: list[int],
    made: list[int],
    p95: list[float],
    workers: int = 2,
    interval: int = 3,
    max_ms: float = 5000.0,
) -> Path:
    """A run folder whose per-second traffic MADE[t] (split evenly over WORKERS, reported every
    INTERVAL s at staggered phases, flushed at the end) and users are known exactly."""
    folder.mkdir(parents=True)
    n = len(users)
    share = np.array(made, dtype=float)[:, None] / workers * np.ones(workers)
    pending, total, rows = np.zeros(workers), 0.0, []
    for t in range(n):
        pending += share[t]
        for w in range(workers):
            if (t - w) % interval == interval - 1 or t == n - 1:
                total += pending[w]
                pending[w] = 0
        pct = "N/A" if t < 2 else f"{p95[t] / 2:g},0,0,0,0,{p95[t]:g},0,{p95[t] * 1.2:g},0,0,{p95[t] * 1.5:g}"
        cells = "N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A" if pct == "N/A" else pct
        for typ, name in (("GET", "GET /x"), ("", "Aggregated")):
            rows.append(f"{T0 + t},{users[t]},{typ},{name},0,0,{cells},{total:.0f},0,1,1.0,1,{max_ms:g},10")
    (folder / "locust_stats_history.csv").write_text(HISTORY_HEADER + "\n" + "\n".join(rows) + "\n")
    final = f"{total:.0f},0,1,1.0,1,{max_ms:g},10,{total / n:.2f},0,1,1,1,1,1,1,1,1,1,1,{max_ms:g}"
    stats = f"{STATS_HEADER}\nGET,GET /x,{final}\n,Aggregated,{final}\n"
    (folder / "locust_stats.csv").write_text(stats)
    return folder


def step_users(levels: list[int], seconds: int, tail: int = 2) -> list[int]:
    """Users second by second: none, then each of LEVELS for SECONDS, then none for TAIL."""
    return [0] + [u for u in levels for _ in range(seconds)] + [0] * tail
