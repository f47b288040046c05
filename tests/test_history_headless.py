"""`swarmbench headless --record` and `BASELINE=history` through the real compose stack (marked
`docker`): a run on main is recorded as it finishes; a later run of a slower target is gated against
main's runs in the history (exit 3, the gate's folder beside the run) and only then recorded itself,
so it was never its own baseline.

One real run of main is the history's seed; five more are that run's record with 3 % noise on every
figure (history_runs.scaled), so the gate has the runs it needs without five more stacks (each
costs ~15 s here). The gated run is real, and so are the store, the gate and the recording.

The slower target is 5x main's (100 ms against 20 ms), not 2x. The gate judges a p95 only when 20
of the run's requests lie beyond it (trend.TAIL_MIN), so the slow run needs 400 requests; with 10
users paced at 50 ms for 6 s it fell short beside CI's other Docker tests (`inconclusive`). Both
runs have the same load (the same fingerprint, so comparable): 20 users waiting 50-150 ms for 10 s,
so the slow run makes ~100 requests/s (~1,000 in all) and main ~170/s. Heavier loads made main's own
latency the generator's: 40 users at 50 ms (~570/s on its one worker) gave a p95 of 180 ms for a
20 ms target beside CI's other tests, and 100 users all waiting 0.5 s fired in bursts of 100 (p95
~150 ms even alone). One busy moment had also put a 10-user seed's p95 at 49.8 ms.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
from history_runs import noisy, scaled
from make_runs import compose_env, run_on_stack

from swarmbench.compare.trend import GATE_METHOD
from swarmbench.core.checks import AGGREGATED, REGRESSED
from swarmbench.history import open_store, read_run

LOAD = {"LOCUST_USERS": "20", "LOCUST_SPAWN_RATE": "20", "LOCUST_WAIT_TIME": "between 0.05 0.15",
        "LOCUST_RUN_TIME": "10s"}  # fmt: skip
"""Both runs' (the same load, so the same fingerprint: comparable); the module docstring says why."""


def test_a_slower_run_is_gated_against_mains_history_then_recorded(docker_compose, tmp_path: Path) -> None:
    store = str(tmp_path / "history.sqlite")
    main = compose_env(tmp_path, SWARMBENCH_HISTORY=store, LOCUST_RUN_ID="main-0", LOCUST_GIT_BRANCH="main",
                       **LOAD, ALBUMS_DELAY="20ms")  # fmt: skip
    res = run_on_stack("headless", "--record", env=main)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "added: " in res.stderr and not (tmp_path / "results" / "main-0-vs-history").exists()

    seed = read_run(tmp_path / "results" / "main-0")
    assert seed.branch == "main"
    rng, start = np.random.default_rng(0), datetime.fromisoformat(seed.started_at.replace("Z", "+00:00"))
    copies = [scaled(seed, -k, noisy(seed, rng, 0.03), f"main-{k}", start) for k in range(1, 6)]  # before it
    with open_store(store) as opened:
        assert opened.add_runs(copies) == [True] * 5

    pr = compose_env(tmp_path, SWARMBENCH_HISTORY=store, LOCUST_RUN_ID="pr-1", LOCUST_GIT_BRANCH="pr-1",
                     **LOAD, ALBUMS_DELAY="100ms", BASELINE="history")  # fmt: skip
    res = run_on_stack("headless", "--record", env=pr)
    assert res.returncode == 3, (res.stdout + res.stderr)[-3000:]
    gated = tmp_path / "results" / "pr-1-vs-history"
    result = json.loads((gated / "compare.json").read_text())
    assert result["method"] == GATE_METHOD and "pr-1" not in result["baseline"]
    assert sorted(result["baseline"]) == [f"main-{k}" for k in range(6)]
    for metric in ("p50", "p95"):
        row = next(r for r in result["results"] if (r["name"], r["metric"]) == (AGGREGATED, metric))
        assert row["verdict"] == REGRESSED, json.dumps(row)
    with open_store(store) as opened:
        (recorded,) = opened.runs(run_id="pr-1")
        assert recorded.branch == "pr-1" and opened.count() == 7
