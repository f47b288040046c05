"""The gate on real runs: a history of identical short runs of the real target (Locust on 127.0.0.1,
each run against a fresh target on one port), recorded with `swarmbench history add`; then
`swarmbench compare --history` calls a run of a target 20 % slower (ALBUMS_DELAY 100 ms -> 120 ms),
on another port as another LOCAL=1 invocation's would be, `regressed` on p95 (exit 3), and an
unchanged run not: the bundled target's port is not part of its host (record.host_identity).

As short as the statistics allow: 5 past runs (the fewest the gate takes; the prediction interval is
then ±3.0 run-to-run SDs, ±1.8 % at the 0.6 % measured below: far inside +20 %) of 8 s, FastHttpUser
(`make ab`'s client: half the run-to-run noise of HttpUser, runner/ab.py AB_USER_CLASS), 16 users
paced at 20 ms. The service's own 100 ms dominates each request, so the machine's hiccups stay a
small part of p95: with 50 ms and 6 runs, a busy shared machine (load 4 on 2 cores) once made p95's
run-to-run SD 5.5 % and the +20 % run only `inconclusive`; here it is 0.6 % (measured +19.2 %, CI
[17.7, 20.8] %). Verdicts on real latency: `quiet`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import free_port, run_against, swarmbench

from swarmbench.core.checks import AGGREGATED, REGRESSED

pytestmark = pytest.mark.quiet

LOAD = ["-t", "8s", "-u", "16", "-r", "16", "--wait-time", "constant 0.02", "AlbumsFastHttpUser"]
PAST_RUNS = 5
DELAY, SLOWER = "100ms", "120ms"  # the service's own cost 20 % higher


def run(binary: Path, port: int, folder: Path, run_id: str, delay: str) -> Path:
    return run_against(binary, folder, run_id, LOAD, port, ALBUMS_DELAY=delay)


@pytest.fixture(scope="module")
def recorded(albums_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("history-runs")
    port, store = free_port(), str(root / "history.sqlite")
    past = [run(albums_binary, port, root / "main", f"main-{i}", DELAY) for i in range(PAST_RUNS)]
    added = swarmbench("history", "add", *past, "--branch", "main", "--history", store)
    assert added.returncode == 0 and added.stdout.count("added: ") == PAST_RUNS, added.stderr
    return {
        "store": store,
        "root": root,
        "same": run(albums_binary, port, root / "pr", "pr-same", DELAY),
        "slower": run(albums_binary, free_port(), root / "pr", "pr-slower", SLOWER),  # another port
    }


def gate(recorded: dict, which: str, *options: str) -> tuple[int, dict, str]:
    out = recorded["root"] / f"{which}-vs-history"
    res = swarmbench("compare", "--history", recorded["store"], recorded[which], "-o", out, *options)
    assert res.returncode in (0, 3), res.stdout + res.stderr
    return res.returncode, json.loads((out / "compare.json").read_text()), res.stdout


def test_a_run_of_a_slower_target_is_regressed_on_p95(recorded: dict) -> None:
    code, result, text = gate(recorded, "slower")
    p95 = next(r for r in result["results"] if (r["name"], r["metric"]) == (AGGREGATED, "p95"))
    assert code == 3 and p95["verdict"] == REGRESSED, text
    # The gate's own rule for a change (estimate past the band, CI past 0), and near the 20 % made.
    # Not "the CI's low end past the band": one CI run had it at 0.9 ms for a 5.4 ms band (the
    # estimate +18 %, rightly regressed), a CI half as wide as this machine's noise allows.
    assert p95["relative"] > 0.10 and p95["ci"][0] > 0, p95
    assert result["baseline"] == [f"main-{i}" for i in range(PAST_RUNS)]
    assert f"learned from the last {PAST_RUNS} of {PAST_RUNS} comparable runs of main" in text


def test_an_unchanged_run_is_not(recorded: dict) -> None:
    code, result, text = gate(recorded, "same", "--metrics", "p50,p95")
    assert code == 0 and result["verdicts"][REGRESSED] == 0, text
