"""The open model's dispatch, as properties: core/openmodel.py against a plain per-slot reference, the
batched latency recorder against one record per sample, and the timerfd alarm with real gevent.

The reference is the open model's definition, slot by slot: at its due time a slot goes to the user
that has been free longest, if one is free (or frees up within the allowed wait); otherwise it is
dropped. The claim model (users claim slots when they free up, core/openmodel.py) must agree with it on
every slot, for the schedules, pool sizes, service times, allowed waits and generator shares Hypothesis
draws; a disagreement is shrunk to its smallest case.
"""

from __future__ import annotations

import heapq
import json
import math
import operator
import random
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from swarmbench.core.loadspec import ArrivalSchedule, Stage
from swarmbench.core.openmodel import Slots
from swarmbench.latency.histogram import LatencyBook, Timeline
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import Windows

GRACE = 0.001

SCHEDULES = st.builds(
    ArrivalSchedule,
    st.floats(1, 300),
    st.lists(
        st.builds(Stage, st.just(0.0) | st.floats(1, 400), st.just(0.0) | st.floats(0.5, 4)), max_size=3
    ).map(tuple),
)
"""A start rate and zero to three stages, each a ramp or a jump (0 s) to a rate or to nothing."""
PHASES = st.floats(0, 1, exclude_max=True)
"""Where in its first slot's interval a generator starts."""
SEEDS = st.integers(0, 2**32 - 1)
"""A seed of the per-slot service times (service_time): keyed by slot, the same in both models."""


def service_time(seed: int, slot: int, mean: float) -> float:
    """The service time of SLOT's iteration: the same in both models (keyed by the slot)."""
    return random.Random(f"{seed}-{slot}").expovariate(1 / mean)


def claim_model(slots: Slots, users: int, end: float, wait: float, seed: int, mean: float) -> dict:
    """Drive Slots as plugin/openmodel.py does: a user that frees up expires what is too old, claims
    the lowest slot, starts it when due (or at once, late), and frees up after its service time.
    Returns {slot: (due, start)} and {("drops", second): how many}.

    A slot is numbered by the whole part of k (the phase plus a whole number): k is a float that the
    claims (first + n) and the definition (one step at a time) may round an ulp apart, and keyed by
    that float the two models would see two slots (and two service times) where there is one."""
    outcome: dict = {}
    phase = slots.next_k % 1
    free = [(slots.t0, i) for i in range(users)]  # (time the user frees up, tie-break)
    heapq.heapify(free)
    while free:
        now, i = heapq.heappop(free)
        if now >= end:
            break
        k, due, dropped = slots.claim(now - wait)
        for second, n in dropped.items():
            outcome[("drops", second)] = outcome.get(("drops", second), 0) + n
        if due >= end:
            break
        start, slot = max(due, now), round(k - phase)
        outcome[slot] = (due, start)
        heapq.heappush(free, (start + service_time(seed, slot, mean), i))
    for second, n in slots.expire(end).items():  # what was due, never claimed, at the stop
        outcome[("drops", second)] = outcome.get(("drops", second), 0) + n
    return outcome


def reference(slots: Slots, users: int, end: float, wait: float, seed: int, mean: float) -> dict:
    """The definition, slot by slot (see the module's docstring), in claim_model's form."""
    outcome: dict = {}
    phase = slots.next_k % 1
    free = [(slots.t0, i) for i in range(users)]
    heapq.heapify(free)
    k = slots.next_k
    while (due := slots.due(k)) < end:
        if free and free[0][0] <= due + wait and free[0][0] < end:  # (a stopped test starts nothing)
            at, i = heapq.heappop(free)
            start, slot = max(due, at), round(k - phase)
            outcome[slot] = (due, start)
            heapq.heappush(free, (start + service_time(seed, slot, mean), i))
        else:
            key = ("drops", slots.second(due))
            outcome[key] = outcome.get(key, 0) + 1
        k += 1
    return outcome


@settings(max_examples=200, deadline=None)  # 60 seeds before; an example costs ~5 ms
@given(
    schedule=SCHEDULES,
    share=st.sampled_from([1.0, 0.5]) | st.floats(0.1, 1),
    phase=PHASES,
    users=st.integers(1, 12),
    end=st.floats(2, 8),
    wait=st.sampled_from([GRACE, 0.05, 0.5]),
    mean=st.builds(operator.mul, st.sampled_from([0.001, 0.02, 0.1]), st.floats(0.5, 2)),
    elapsed=st.just(0.0) | st.floats(0, 3),  # joining late skips what was due before
    seed=SEEDS,
)
def test_claims_agree_with_the_definition_slot_by_slot(
    schedule, share, phase, users, end, wait, mean, elapsed, seed
):
    made = [Slots.join(schedule, share, 100.0 + elapsed, elapsed, phase) for _ in range(2)]
    got = claim_model(made[0], users, 100.0 + end, wait, seed, mean)
    want = reference(made[1], users, 100.0 + end, wait, seed, mean)
    started = {k: v for k, v in got.items() if not isinstance(k, tuple)}
    # The same slots started, at the same moments (to the ulp by which two roundings of one slot's
    # due time may differ), and the same drops filed under the same seconds.
    assert started.keys() == {k for k in want if not isinstance(k, tuple)}
    starts = {k: start for k, (_, start) in started.items()}
    assert starts == pytest.approx({k: want[k][1] for k in started}, abs=1e-9)
    assert {k: v for k, v in got.items() if isinstance(k, tuple)} == {
        k: v for k, v in want.items() if isinstance(k, tuple)
    }
    for due, start in started.values():  # never early, and late only within the wait
        assert due <= start <= due + wait + 1e-9


@settings(max_examples=200, deadline=None)  # 40 seeds before; an example costs ~2 ms
@given(
    schedule=SCHEDULES,
    share=st.floats(0.05, 1),
    phase=PHASES,
    moments=st.lists(st.floats(0, 12), min_size=1, max_size=6).map(sorted),
)
def test_bulk_expiry_files_every_drop_under_its_second(schedule, share, phase, moments):
    bulk, one_by_one = (Slots.join(schedule, share, 0.0, 0.0, phase) for _ in range(2))
    got: Counter[int] = Counter()
    want: Counter[int] = Counter()
    for before in moments:
        got.update(bulk.expire(before))
        while (due := one_by_one.due(one_by_one.next_k)) < before:
            want[one_by_one.second(due)] += 1
            one_by_one.next_k += 1
    assert got == want
    assert bulk.next_k == pytest.approx(one_by_one.next_k)
    assert sum(got.values()) == pytest.approx(share * schedule.iterations(moments[-1]), abs=1.0)


def test_a_resplit_keeps_the_count_and_takes_the_new_share():
    s = Slots.join(ArrivalSchedule(100.0), 1.0, 10.0, 0.0, 0.0)
    before = s.count(12.0)
    assert s.resplit(0.25, 12.0) is True and s.resplit(0.25, 12.0) is False
    assert s.count(12.0) == pytest.approx(before)
    assert s.count(16.0) - s.count(12.0) == pytest.approx(0.25 * 100 * 4)
    k = math.ceil(s.count(13.0))
    assert s.due(k + 25) - s.due(k) == pytest.approx(1.0)  # 25 slots a second at a quarter of 100/s


def test_a_share_of_nothing_offers_nothing():
    s = Slots.join(ArrivalSchedule(100.0), 0.0, 0.0, 0.0, 0.0)
    assert s.due(s.next_k) == math.inf and s.expire(50.0) == {}


# --- the latency recorder: batches equal one record per sample -------------------------------------


def the_loops_samples() -> list[tuple[int, str, float, float | None]]:
    """The 10,000 samples the seeded loop recorded (seed 5): five windows of 2,000, a 5 s outlier
    every 1,000th, every 7th without an intended start."""
    rng = random.Random(5)
    out = []
    for i in range(10_000):
        name = rng.choice(["GET /albums", "POST /albums"])
        service = rng.lognormvariate(0.0, 1.5) + (5_000 if i % 1000 == 0 else 0)  # ms, a long tail
        later = None if i % 7 == 0 else rng.expovariate(1.0)
        out.append((i // 2000, name, service, later))
    return out


LATENCY_SAMPLES = st.lists(
    st.tuples(
        st.integers(0, 4),  # the window (second): five, as in the loop
        st.sampled_from(["GET /albums", "POST /albums"]),
        st.floats(0, 10_000),  # the service time, ms: the loop's lognormal body and its 5 s tail
        st.none() | st.floats(0, 50),  # how much longer since the intended start, or none
    ),
    max_size=200,
).map(lambda samples: sorted(samples, key=lambda s: s[0]))
"""(window, name, service ms, ms more since the intended start), in the order windows end."""


@settings(max_examples=40, deadline=None)  # the loop's one: below; ~30 ms an example
@given(samples=LATENCY_SAMPLES, flush_at=st.integers(1, 997))
@example(samples=the_loops_samples(), flush_at=997)  # several flushes, at awkward points
def test_batched_recording_equals_recording_each_sample(samples, flush_at):
    recorder, book, timeline = Recorder(), LatencyBook(), Timeline()
    recorder.FLUSH_AT = flush_at
    for second, name, service, later in samples:
        intended = None if later is None else service + later
        recorder.record(
            second, name.split()[0], name, service, False, None if intended is None else (intended, second)
        )
        book.record(name.split()[0], name, "service", service)
        if intended is not None:
            book.record(name.split()[0], name, "intended", intended)
            timeline.record(second, "service", service)
            timeline.record(second, "intended", intended)
    windows, seconds = recorder.take()
    shipped_windows = Windows()
    shipped_windows.merge(windows)
    merged = shipped_windows.totals()
    assert merged.hists.keys() == book.hists.keys()
    for key, hist in book.hists.items():
        assert list(merged.hists[key].counts) == list(hist.counts), key
        assert merged.hists[key].get_max_value() == hist.get_max_value()
    assert merged.rows() == book.rows()
    expected = Timeline()
    expected.merge(timeline.take())
    shipped = Timeline()
    shipped.merge(seconds)
    assert shipped.percentiles() == expected.percentiles()
    assert recorder.take() == (([], []), {}), "take() starts the next report from zero"


# --- the alarm: real gevent, a real timerfd ----------------------------------------------------------


ALARM_PROBE = """
import json, random, time
import gevent
from gevent.hub import Waiter
from swarmbench.plugin.openmodel import EARLY_S, Alarm

alarm = Alarm.create()
if alarm is None:
    print(json.dumps(None))
    raise SystemExit(0)
rng = random.Random(3)
start = time.perf_counter() + 0.02
dues = [start + rng.uniform(0, 0.05) for _ in range(60)]
woke = []

def sleeper(due):
    waiter = Waiter()
    alarm.sleep_until(due, waiter)
    waiter.get()
    woke.append((due, time.perf_counter()))

cancelled = Waiter()
alarm.cancel(alarm.sleep_until(start, cancelled))  # a cancelled entry wakes nobody
gevent.joinall([gevent.spawn(sleeper, d) for d in dues], timeout=10)
print(json.dumps({"dues": dues, "woke": woke, "early_s": EARLY_S, "cancelled_woke": cancelled.ready()}))
"""
"""The alarm lives in the plugin (Locust imported, gevent patched): it runs in its own process."""


def test_the_alarm_wakes_every_sleeper_on_time_in_due_order():
    res = subprocess.run([sys.executable, "-c", ALARM_PROBE], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    found = json.loads(res.stdout)
    if found is None:
        pytest.skip("no timerfd on this platform (the pool sleeps on gevent's timers)")
    dues, woke, early_s = found["dues"], found["woke"], found["early_s"]
    assert len(woke) == len(dues)
    assert all(at >= due - early_s for due, at in woke), "woken more than EARLY_S before its time"
    assert [due for due, _ in woke] == sorted(dues), "woken out of due order"
    assert not found["cancelled_woke"]
