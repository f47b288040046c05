"""bench/bench_master_scale.py's exactness claim, end to end, so it cannot rot: 5 simulated workers x
2 request names on Locust's wire protocol against a real Swarmbench master; the run folder equals
what the simulator sent (counts, histograms bucket for bucket, percentiles, every window), and the
check itself is shown to catch a truth one report short (the script does that before saying
exact=yes). No time or CPU is asserted: not `quiet`."""

from __future__ import annotations

import subprocess
import sys

from harness import ROOT

SCRIPT = ROOT / "bench" / "bench_master_scale.py"


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_simulated_workers_are_merged_exactly_by_a_real_master():
    done = run("--workers", "5", "--names", "2", "--warmup", "3", "--seconds", "3", "--masters", "swarmbench")
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    fields = dict(item.split("=", 1) for item in last.split())
    assert fields["workers"] == "5" and fields["names"] == "2", last
    assert fields["exact"] == "yes", done.stdout
    assert fields["missing"] == "0", done.stdout
    assert "not exact" not in done.stdout
    assert "workers that quit when told 5/5" in done.stdout, done.stdout


def test_bad_input_is_one_line_naming_it():
    for args, named in (
        (["--workers", "0"], "--workers"),
        (["--names", "x"], "--names"),
        (["--masters", "nginx"], "--masters"),
        (["--seconds", "-1"], "--seconds"),
    ):
        done = run(*args, timeout=30)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and named in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
