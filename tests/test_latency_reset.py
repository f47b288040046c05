"""--reset-stats: Locust drops its stats when the ramp-up ends; the exact histograms drop theirs at
the same instant, so the run's files still hold exactly what locust_stats.csv counts (and the
thresholds stay exact). A real distributed run: a master and two forked workers against the real
target; the target itself counts the ramp-up's requests too, which shows the reset happened.
"""

from __future__ import annotations

import pytest
from harness import Target, free_port, run_locust
from runs import manifest, only_run, stats

from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED
from swarmbench.latency.windows import Windows


@pytest.fixture(scope="module")
def reset_run(albums_binary, tmp_path_factory):
    """8 users at 2 a second: a 4 s ramp-up, then stats reset, then 6 s more."""
    results = tmp_path_factory.mktemp("reset")
    target = Target(albums_binary)
    port = str(free_port())
    try:
        res = run_locust(
            "--processes", "2", "--master-bind-port", port, "--master-port", port, "--headless",
            "-H", target.url, "-u", "8", "-r", "2", "-t", "10s", "--wait-time", "constant 0.05",
            "--reset-stats", "--results-dir", str(results), "--check", "p95<5000", "AlbumsFastHttpUser",
            timeout=120,
        )  # fmt: skip
    finally:
        target.stop()
    return res, only_run(results)


def test_histograms_hold_exactly_what_locust_counts_after_the_reset(reset_run):
    res, run_dir = reset_run
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "Resetting stats" in res.stderr and "windows start over" in res.stderr, res.stderr[-2000:]
    man = manifest(run_dir)
    locust = stats(run_dir)
    counted = int(locust[("", AGGREGATED)]["Request Count"])
    assert man["reset_stats"] is True
    assert man["latency"]["exact"] is True and man["latency"]["requests"] == counted, man["latency"]
    # The ramp-up's requests reached the target but are in neither Locust's stats nor the files.
    assert man["target"]["album_requests"] > counted, (man["target"], counted)
    windows = Windows.read_csv(run_dir / folder.LATENCY_WINDOWS_CSV)
    totals = {(r["type"], r["name"]): r for r in windows.totals().rows() if r["kind"] == "service"}
    for key, row in locust.items():
        assert totals[key]["count"] == int(row["Request Count"]), key
    assert man["checks"][0]["exact"] is True, man["checks"]
