"""The open model's dispatch, as properties: core/openmodel.py against a plain per-slot reference, the
batched latency recorder against one record per sample, and the timerfd alarm with real gevent.

The reference is the open model's definition, slot by slot: at its due time a slot goes to the user
that has been free longest, if one is free (or frees up within the allowed wait); otherwise it is
dropped. The claim model (users claim slots when they free up, core/openmodel.py) must agree with it on
every slot, for random schedules, pool sizes, service times, allowed waits and generator shares.
"""

from __future__ import annotations

import heapq
import json
import math
import random
import subprocess
import sys
from collections import Counter

import pytest

from swarmbench.core.loadspec import ArrivalSchedule, Stage
from swarmbench.core.openmodel import Slots
from swarmbench.latency.histogram import LatencyBook, Timeline
from swarmbench.latency.recorder import Recorder
from swarmbench.latency.windows import Windows

GRACE = 0.001


def random_schedule(rng: random.Random) -> ArrivalSchedule:
    stages = []
    for _ in range(rng.randint(0, 3)):
        stages.append(Stage(rng.choice([0.0, rng.uniform(1, 400)]), rng.choice([0.0, rng.uniform(0.5, 4)])))
    start = rng.uniform(1, 300)
    return ArrivalSchedule(start, tuple(stages))


def service_time(seed: int, k: float, mean: float) -> float:
    """The service time of slot K's iteration: the same in both models (keyed by the slot)."""
    return random.Random(f"{seed}-{k}").expovariate(1 / mean)


def claim_model(slots: Slots, users: int, end: float, wait: float, seed: int, mean: float) -> dict:
    """Drive Slots as plugin/openmodel.py does: a user that frees up expires what is too old, claims
    the lowest slot, starts it when due (or at once, late), and frees up after its service time.
    Returns {slot: ("started", start) | ("dropped", second)}."""
    outcome: dict[float, tuple] = {}
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
        start = max(due, now)
        outcome[k] = ("started", start)
        heapq.heappush(free, (start + service_time(seed, k, mean), i))
    for second, n in slots.expire(end).items():  # what was due, never claimed, at the stop
        outcome[("drops", second)] = outcome.get(("drops", second), 0) + n
    return outcome


def reference(slots: Slots, users: int, end: float, wait: float, seed: int, mean: float) -> dict:
    """The definition, slot by slot (see the module's docstring)."""
    outcome: dict = {}
    free = [(slots.t0, i) for i in range(users)]
    heapq.heapify(free)
    k = slots.next_k
    while (due := slots.due(k)) < end:
        if free and free[0][0] <= due + wait and free[0][0] < end:  # (a stopped test starts nothing)
            at, i = heapq.heappop(free)
            start = max(due, at)
            outcome[k] = ("started", start)
            heapq.heappush(free, (start + service_time(seed, k, mean), i))
        else:
            key = ("drops", slots.second(due))
            outcome[key] = outcome.get(key, 0) + 1
        k += 1
    return outcome


@pytest.mark.parametrize("seed", range(60))
def test_claims_agree_with_the_definition_slot_by_slot(seed):
    rng = random.Random(seed)
    schedule = random_schedule(rng)
    share, phase = rng.choice([1.0, 0.5, rng.uniform(0.1, 1)]), rng.random()
    users, end = rng.randint(1, 12), rng.uniform(2, 8)
    wait = rng.choice([GRACE, GRACE, 0.05, 0.5])
    mean = rng.choice([0.001, 0.02, 0.1]) * rng.uniform(0.5, 2)
    elapsed = rng.choice([0.0, rng.uniform(0, 3)])  # joining late skips what was due before
    made = [Slots.join(schedule, share, 100.0 + elapsed, elapsed, phase) for _ in range(2)]
    got = claim_model(made[0], users, 100.0 + end, wait, seed, mean)
    want = reference(made[1], users, 100.0 + end, wait, seed, mean)
    started = {k: v for k, v in got.items() if not isinstance(k, tuple)}
    assert started == {k: v for k, v in want.items() if not isinstance(k, tuple)}
    assert {k: v for k, v in got.items() if isinstance(k, tuple)} == {
        k: v for k, v in want.items() if isinstance(k, tuple)
    }
    for k, (_what, start) in started.items():  # never early, and late only within the wait
        due = made[0].due(k)
        assert due <= start <= due + wait + 1e-9


@pytest.mark.parametrize("seed", range(40))
def test_bulk_expiry_files_every_drop_under_its_second(seed):
    rng = random.Random(seed)
    schedule = random_schedule(rng)
    share, phase = rng.uniform(0.05, 1), rng.random()
    bulk, one_by_one = (Slots.join(schedule, share, 0.0, 0.0, phase) for _ in range(2))
    moments = sorted(rng.uniform(0, 12) for _ in range(rng.randint(1, 6)))
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


def test_batched_recording_equals_recording_each_sample(monkeypatch):
    monkeypatch.setattr(Recorder, "FLUSH_AT", 997)  # several flushes, at awkward points
    rng = random.Random(5)
    recorder, book, timeline = Recorder(), LatencyBook(), Timeline()
    for i in range(10_000):
        name = rng.choice(["GET /albums", "POST /albums"])
        service = rng.lognormvariate(0.0, 1.5) + (5_000 if i % 1000 == 0 else 0)  # ms, a long tail
        intended = None if i % 7 == 0 else service + rng.expovariate(1.0)
        second = i // 2000
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
    assert recorder.take() == ([], {}), "take() starts the next report from zero"


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
