"""BASELINE=history with BUDGET (runner/ab.py gate_until_decided): the candidate run is repeated into a
folder of repeats and gated after each run, at a whole-gate level of 5 % / K (K: the runs the
budget buys), until the gate is decisive or K runs are done. The runs here are run folders written
from a recorded run with known figures (history_runs.write_folder), one per call of the runner's run
function, as a real run leaves one; the store, the gate and its files are real. Bad BUDGET: one
line, exit 2, nothing runs."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from harness import run_module
from history_runs import at_mean, history, noisy, scaled, stored, write_folder

from swarmbench.core import exits
from swarmbench.core.exits import UsageError
from swarmbench.runner import ab
from swarmbench.runner.settings import Headless

RUN_S = 1.0
"""How long a candidate run takes here: BUDGET=12s buys ~11 (the test reads K from the line that
says it), of which the looks' own time (a gate in a process of its own, seconds here) leaves a few."""


def candidate_runs(store: str, past: list, factor: float, noise: float, seed: int):
    """The runner's run function: each call writes the next candidate run (every p95 times FACTOR,
    every figure with relative NOISE) into the results folder it is given."""
    rng = np.random.default_rng(seed)
    same = at_mean(store, past[-1])
    calls = []

    def run(chosen: Headless) -> int:
        time.sleep(RUN_S)  # the budget buys BUDGET // RUN_S runs
        i = len(calls) + 1
        factors = noisy(same, rng, noise)
        for s in same.stats:
            factors[(s.type, s.name, "p95_ms")] *= factor
        write_folder(
            scaled(same, 100 + i, factors, run_id=f"cand-{i}"), Path(chosen.environ["SWARMBENCH_RESULTS"])
        )
        calls.append(chosen.environ["SWARMBENCH_RESULTS"])
        return exits.OK

    return run, calls


def planned(err: str) -> int:
    """K, as the sequence printed it."""
    found = re.search(r"at most (\d+) runs in BUDGET=12s", err)
    assert found, err
    return int(found.group(1))


def gate(tmp_path: Path, run, budget: str = "12s") -> tuple[int, Path]:
    results = tmp_path / "results"
    chosen = Headless(1, "5s", {"SWARMBENCH_RESULTS": str(results), "BUDGET": budget})
    store = str(tmp_path / "h.sqlite")
    return ab.run_with_baseline(run, chosen, ab.HISTORY, None, store), results


def test_a_slower_candidate_is_gated_after_each_run_until_decisive(tmp_path, capsys):
    past = history(12, 0.03, seed=2)
    store = stored(tmp_path / "h.sqlite", past)
    run, calls = candidate_runs(store, past, 1.25, 0.03, seed=3)
    code, results = gate(tmp_path, run)
    err = capsys.readouterr().err
    assert code == exits.THRESHOLDS_BROKEN, err
    (folder,) = [p for p in results.iterdir() if p.name.startswith(ab.GATE_FOLDER) and p.is_dir()
                 and not p.name.endswith(ab.HISTORY_SUFFIX)]  # fmt: skip
    assert set(calls) == {str(folder)}  # every run went into the one folder of repeats
    looks = sorted((results / f"{folder.name}{ab.HISTORY_SUFFIX}").glob("look-*"))
    k = planned(err)
    assert len(looks) == len(calls) >= 1 and f"gate look {len(calls)}/{k} " in err, err
    final = json.loads((results / f"{folder.name}{ab.HISTORY_SUFFIX}" / "compare.json").read_text())
    # Each look at 5 % / K for the whole gate.
    assert final["options"]["confidence"] == pytest.approx(1 - 0.05 / k)
    assert final["candidate"] == [f"cand-{i}" for i in range(1, len(calls) + 1)]
    assert final["verdicts"]["regressed"] > 0, final["verdicts"]
    for look in looks[:-1]:  # it stopped at the first look that failed the gate
        assert json.loads((look / "compare.json").read_text())["verdicts"]["regressed"] == 0


def test_an_unchanged_candidate_passes(tmp_path, capsys):
    past = history(12, 0.02, seed=4)
    store = stored(tmp_path / "h.sqlite", past)
    run, calls = candidate_runs(store, past, 1.0, 0.0, seed=5)
    code, results = gate(tmp_path, run)
    err = capsys.readouterr().err
    assert code == exits.OK, err
    # Its error-rate rows (no failures on either side) stay inconclusive: it runs until the budget
    # is spent (the looks' time counts: fewer looks than K, each still at 5 % / K).
    k, n = planned(err), len(calls)
    assert 2 <= n <= k and f"gate look {n}/{k} ({n} run(s)" in err and "regressed" not in err, err
    final = json.loads(next((tmp_path / "results").glob(f"*{ab.HISTORY_SUFFIX}/compare.json")).read_text())
    assert final["verdicts"]["regressed"] == 0 and len(final["candidate"]) == n


@pytest.mark.parametrize(
    ("baseline", "budget", "expected"),
    [
        (ab.HISTORY, "5q", "BUDGET='5q' is not a duration"),
        (Path("/tmp"), "1m", "BUDGET='1m' buys runs for BASELINE=history and make ab"),
    ],
)
def test_a_bad_budget_is_refused_before_anything_runs(tmp_path, baseline, budget, expected):
    ran = []
    chosen = Headless(1, "5s", {"SWARMBENCH_RESULTS": str(tmp_path), "BUDGET": budget})
    with pytest.raises(UsageError, match=expected.replace("(", r"\(")):
        ab.run_with_baseline(lambda h: ran.append(h) or 0, chosen, baseline, None, str(tmp_path / "h.sqlite"))
    assert ran == [] and list(tmp_path.iterdir()) == []


def test_headless_with_a_bad_budget_is_one_line(tmp_path):
    env = {
        "BASELINE": "history",
        "BUDGET": "xx",
        "SWARMBENCH_RESULTS": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    res = run_module("swarmbench", "headless", env=env, timeout=60)
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "BUDGET='xx' is not a duration" in lines[0], lines
