"""The sweep's progress line: `[3/8] w2 AlbumsFastHttpUser rep 1 · ETA 2m10s` on stderr."""

from __future__ import annotations

import sys
import threading
import time

from swarmbench.core.sweepstate import SweepPoint as Point

POINT_OVERHEAD_S = 20.0
"""First ETA guess of a point's cost beyond its run time (stack start, spawn, stop, teardown);
replaced by the measured mean once a point has finished."""


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    m, s = divmod(seconds, 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """`[3/8] w2 AlbumsFastHttpUser rep 1 · ETA 2m10s` on stderr, with a per-second countdown on a
    terminal (one line per point otherwise, e.g. in CI logs)."""

    def __init__(self, total: int, run_s: float) -> None:
        self.total, self.run_s = total, run_s
        self.durations: list[float] = []
        self.tty = sys.stderr.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def per_point(self) -> float:
        if self.durations:
            return sum(self.durations) / len(self.durations)
        return self.run_s + POINT_OVERHEAD_S

    def start(self, index: int, point: Point, remaining_after: int) -> None:
        t0 = time.monotonic()

        def line() -> str:
            left = max(0.0, self.per_point() - (time.monotonic() - t0)) + remaining_after * self.per_point()
            return f"[{index}/{self.total}] {point.label} · ETA {fmt_duration(left)}"

        if not self.tty:
            print(f"swarmbench: {line()}", file=sys.stderr, flush=True)
            return
        self._stop.clear()

        def tick() -> None:
            while not self._stop.wait(1.0):
                print(f"\r\x1b[K{line()}", end="", file=sys.stderr, flush=True)

        print(f"\r\x1b[K{line()}", end="", file=sys.stderr, flush=True)
        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()

    def finish(self, point: Point, elapsed: float) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self._thread = None
        self.durations.append(elapsed)
        end = "\r\x1b[K" if self.tty else ""
        note = f" ({point.reason})" if point.reason and point.status != "done" else ""
        verdict = f", {point.verdict}" if point.verdict else ""
        print(
            f"{end}swarmbench: {point.id}: {point.status}{verdict} in {fmt_duration(elapsed)}{note}",
            file=sys.stderr,
            flush=True,
        )
