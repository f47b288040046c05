"""The step-load knee (analysis.knee): declared only where the server saturates, at the step where
throughput stops growing; a proportional run (even with one spiky step) has no knee."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from histories import step_users, write_run

from swarmbench.analysis import columns as C
from swarmbench.analysis.knee import knee_from_steps, step_load_knee, steps
from swarmbench.analysis.runs import load_run
from swarmbench.analysis.timeseries import grids, rate

pytestmark = [
    pytest.mark.background,
    pytest.mark.filterwarnings("ignore::swarmbench.analysis.locust_csv.AnalysisWarning"),
]

USERS = list(range(10, 131, 10))
THINK_S = 0.05
CAPACITY = 1800.0  # requests/s the synthetic server can serve


def closed_loop(users: int, service_ms: float = 3.0) -> tuple[float, float]:
    """(requests/s, p95 ms) of USERS paced by THINK_S against a server of CAPACITY: below it each user
    runs at 1 / (think + service); above it the rate is the capacity and the rest waits (Little)."""
    free = users / (THINK_S + service_ms / 1000)
    if free <= CAPACITY:
        return free, service_ms
    return CAPACITY, (users / CAPACITY - THINK_S) * 1000 * 2


def table(rows) -> pd.DataFrame:
    return pd.DataFrame([{C.USERS: u, C.RPS_OUT: r, C.P50_MS: p / 2, C.P95_MS: p} for u, r, p in rows])


def test_a_saturating_server_has_its_knee_where_throughput_stops_growing():
    k = knee_from_steps(table([(u, *closed_loop(u)) for u in USERS]))
    # 18.9 requests/s per user: the capacity is reached between 90 (1,698) and 100 users (1,800).
    assert k.users == 100 and k.rps == pytest.approx(CAPACITY)
    assert "Knee at 100 users" in k.sentence() and k.noisy == []
    assert list(k.steps["state"].iloc[-3:]) == ["saturating", "saturated", "saturated"]


def test_a_proportional_run_with_one_spiky_step_has_no_knee():
    """The issue's `make knee`: ~18.4 requests/s per user throughout, p95 15 ms at 90 users only."""
    rows = [(u, 18.4 * u * (0.97 if u == 90 else 1.0), 15.0 if u == 90 else 3.0) for u in USERS]
    k = knee_from_steps(table(rows), verdict="load-bound")
    assert k.index is None and k.noisy == [90]
    text = k.sentence()
    assert text.startswith("No knee up to 130 users") and "18.4 requests/s (low load: 18.4)" in text
    assert "in proportion to the users" in text
    assert "could not reach the server's limit" in text and "more users" in text and "think time" in text
    assert "load-bound" not in knee_from_steps(table(rows), verdict="none").sentence()
    # The verdict looks at the whole run; the top step alone shows the pacing: 18.4 of the 20 allowed.
    paced = knee_from_steps(table(rows), verdict="generator-bound", wait_time="constant 0.05").sentence()
    assert "92% of the 20 its wait time (constant 0.05) allows" in paced and "more users" in paced


def test_saturation_on_the_top_step_alone_is_not_confirmed():
    rows = [(u, 18.4 * u, 3.0) for u in USERS[:-1]] + [(130, 18.4 * 100, 40.0)]
    k = knee_from_steps(table(rows))
    assert k.index is None and k.confirm_pending and "extend the steps" in k.sentence()


def test_retrograde_throughput_puts_the_knee_at_the_peak():
    rps = [200, 400, 600, 800, 950, 900, 700, 500]
    p95 = [3, 3, 3, 4, 9, 30, 80, 200]
    k = knee_from_steps(table(zip(range(10, 81, 10), rps, p95, strict=True)))
    assert k.users == 50 and k.rps == 950


def test_latency_alone_is_not_a_knee():
    rows = [(u, 18.4 * u, 3.0 if u < 70 else 40.0) for u in USERS]  # slower, but every user still served
    assert knee_from_steps(table(rows)).index is None


def test_a_step_history_of_a_saturating_server_gives_the_knee_from_request_counts(tmp_path):
    """Through the real reader: 2 workers reporting every 3 s, 20 s steps; each step's throughput is
    the count difference within the step (checked here against the counts themselves)."""
    users = step_users(USERS, 20)
    made = [2 * round(closed_loop(u)[0] / 2) if u else 0 for u in users]  # even: 2 workers, whole counts
    p95 = [closed_loop(u)[1] if u else 0.0 for u in users]
    run = load_run(write_run(tmp_path / "run", users, made, p95))
    k = step_load_knee(run)
    assert k is not None and k.users == 100
    agg = grids(run.history)[C.AGGREGATED]
    for row in steps(run).itertuples():
        by_counts = rate(agg, row.t_s - row.window_s, row.t_s)
        assert row.rps == pytest.approx(by_counts, rel=0.02)
        assert row.rps == pytest.approx(2 * round(closed_loop(row.users)[0] / 2), rel=1e-9)  # its own only


def test_the_report_shows_the_knee_its_steps_and_the_sentence(tmp_path):
    from swarmbench.analysis.report import build_report, render_charts
    from swarmbench.analysis.summary import summarize

    users = step_users(USERS, 20)
    made = [2 * round(closed_loop(u)[0] / 2) if u else 0 for u in users]
    run = load_run(write_run(tmp_path / "run", users, made, [closed_loop(u)[1] if u else 0.0 for u in users]))
    summary = summarize([run])
    charts = render_charts([run], summary, [])
    chart = next(c for c in charts if c.filename.startswith("knee_"))
    assert chart.caption.startswith("Knee at 100 users") and chart.table["users"].tolist() == USERS
    page = build_report([run], summary, [], charts)
    assert "Knee at 100 users" in page and "<td>saturated</td>" in page


REAL_KNEE = Path(__file__).parent / "fixtures" / "knee"


def test_a_real_saturating_server_has_its_knee_where_throughput_stops_growing():
    """ALBUMS_LOCK_WORK=3ms on a mutex store: throughput grows with the users up to 60, then stalls."""
    run = load_run(REAL_KNEE / "saturating")
    k = step_load_knee(run)
    assert k.users == 60 and k.rps == pytest.approx(262.8, abs=0.1)
    t = k.steps.set_index(C.USERS)
    assert (t.loc[:60, "rps_per_user"] > 0.9 * k.per_user).all()  # proportional up to the knee
    assert (t.loc[70:, "rps_per_user"] < 0.85 * k.per_user).all() and (t.loc[70:, C.P95_MS] > 300).all()
    assert k.sentence().startswith("Knee at 60 users ≈ 263 requests/s")


def test_a_real_proportional_step_load_has_no_knee_and_says_the_pacing_capped_it():
    run = load_run(REAL_KNEE / "proportional")
    k = step_load_knee(run)
    assert k.index is None and k.noisy  # p95 spikes on some steps, throughput always proportional
    assert (k.steps["rps_per_user"] > 0.95 * 5.0).all()  # constant 0.2: 5 requests/s per user at most
    text = k.sentence()
    assert text.startswith("No knee up to 80 users") and "pacing capped the load" in text
