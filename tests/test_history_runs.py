"""The gate on real runs: a history of identical short runs of the real target (Locust on 127.0.0.1,
each run against a fresh target on one port: one host, as the history compares runs), recorded with
`swarmbench history add`; then `swarmbench compare --history` calls a run of a target 20 % slower
(ALBUMS_DELAY 50 ms -> 60 ms) `regressed` on p95 (exit 3), and an unchanged run not.

As short as the statistics allow: 6 past runs (the gate needs 5; at 6 the prediction interval is
±2.78 run-to-run SDs) of 8 s, FastHttpUser (`make ab`'s client: half the run-to-run noise of
HttpUser, runner/ab.py AB_USER_CLASS), 8 users paced at 20 ms. Verdicts on real latency: `quiet`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import Target, free_port, run_locust, swarmbench

from swarmbench.core.checks import AGGREGATED, REGRESSED

pytestmark = pytest.mark.quiet

LOAD = ["-t", "8s", "-u", "8", "-r", "8", "--wait-time", "constant 0.02", "AlbumsFastHttpUser"]
PAST_RUNS = 6
DELAY, SLOWER = "50ms", "60ms"  # the service's own cost 20 % higher


def run(binary: Path, port: int, folder: Path, run_id: str, delay: str) -> Path:
    target = Target(binary, port=port, ALBUMS_DELAY=delay)
    try:
        res = run_locust(
            "--headless", "-H", target.url, *LOAD, "--results-dir", str(folder), "--run-id", run_id
        )
    finally:
        target.stop()
    assert res.returncode == 0, res.stderr[-2000:]
    return folder / run_id


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
        "slower": run(albums_binary, port, root / "pr", "pr-slower", SLOWER),
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
    assert p95["relative"] > 0.10 and p95["ci"][0] > p95["band"], p95
    assert result["baseline"] == [f"main-{i}" for i in range(PAST_RUNS)]
    assert f"learned from the last {PAST_RUNS} of {PAST_RUNS} comparable runs of main" in text


def test_an_unchanged_run_is_not(recorded: dict) -> None:
    code, result, text = gate(recorded, "same", "--metrics", "p50,p95")
    assert code == 0 and result["verdicts"][REGRESSED] == 0, text
