"""The open model's shares and counts: one generator's slots of the arrival schedule, what each
generator counted, and run.json's `open_model`.

One load generator's share of an arrival schedule as numbered slots: which are due, which are lost.

The generator owns the slots k = phase, phase + 1, ... of its share: slot k is due when its local
count `share x iterations(t) + offset` reaches k (core/loadspec.py gives iterations(t)). A user that
becomes free CLAIMS the lowest unclaimed slot and sleeps until it is due; users claim in the order
they become free, so the user that has waited longest runs the next iteration.

Why that is the open model, exactly: a slot still unclaimed when it is due found no user free. (A
user free at that moment would hold a claim; claims are handed out in slot order, so it would hold
this slot or an earlier one.) Such a slot is DROPPED, never delayed -- unless the caller allows a
wait (`--arrival-max-wait`): then a user that frees up within it still takes the slot, late, and
its lateness counts in the iteration's intended-start latency.

Nothing here sleeps or reads a clock: every method takes `now`, so the tests can drive it with any
times. plugin/openmodel.py runs it with time.perf_counter() and gevent.

What each open-model generator counted, summed on the master, and run.json's `open_model`.

Generators count every iteration of the schedule (core/loadspec.py) they handled -- started, dropped
(no idle user at its time), queued -- per second of the schedule, and ship the deltas with their
stats reports (`to_report`, a JSON-safe wire format); the master adds them up (`add_report`) and
`summarize` turns the sum into run.json's `open_model` section (sections.OpenModel). Standard
library only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from swarmbench.core.loadspec import ArrivalSchedule
from swarmbench.core.manifest import GeneratorIterations, OpenModel

# --- a generator's share as numbered slots --------------------------------------------------------


@dataclass
class Slots:
    """A generator's numbered slots of SCHEDULE; times are in the caller's clock (seconds)."""

    schedule: ArrivalSchedule
    t0: float
    """The caller's clock at the schedule's second 0 (the master's clock, as of joining)."""
    share: float
    """This generator's part of the rate, 0..1 (its users over all users)."""
    offset: float = 0.0
    """Keeps the local count continuous when the share changes (resplit)."""
    next_k: float = 0.0
    """The lowest slot not claimed or dropped yet: phase + an integer."""

    @classmethod
    def join(
        cls, schedule: ArrivalSchedule, share: float, now: float, elapsed_s: float, phase: float
    ) -> Slots:
        """Slots of SHARE, ELAPSED_S into the schedule at NOW. What was due before joining is
        skipped (this generator never offered it). PHASE in [0, 1) staggers the generators."""
        slots = cls(schedule, now - elapsed_s, share)
        slots.next_k = phase + math.ceil(max(0.0, slots.count(now) - phase))
        return slots

    def count(self, t: float) -> float:
        """The local count at time T: slot k is due once it reaches k."""
        return self.share * self.schedule.iterations(t - self.t0) + self.offset

    def due(self, k: float) -> float:
        """When slot K is due (math.inf while this share offers nothing, or never will)."""
        if self.share <= 0:
            return math.inf
        return self.t0 + self.schedule.time_at((k - self.offset) / self.share)

    def second(self, t: float) -> int:
        """The schedule's second that time T falls in (how every count is filed)."""
        return int(t - self.t0)

    def resplit(self, share: float, now: float) -> bool:
        """Take SHARE from NOW on, without a jump in the count. True when it changed: claimed
        slots then fall due at other times (their sleepers must look again)."""
        if share == self.share:
            return False
        count = self.count(now)
        self.share = share
        self.offset = count - share * self.schedule.iterations(now - self.t0)
        return True

    def expire(self, before: float) -> dict[int, int]:
        """Drop every unclaimed slot due before time BEFORE: {second it was due in: how many}.

        Counted per second of the schedule from the count function, not slot by slot: a pool
        that stays busy through thousands of due slots costs one step per second here."""
        first = self.next_k
        dropped: dict[int, int] = {}
        if self.due(first) >= before:  # the usual case, once per claim: nothing to drop
            return dropped
        n = math.ceil(self.count(before) - first)
        if n > 0:
            done, s, last = 0, max(0, self.second(self.due(first))), self.second(before)
            while done < n:
                upto = n if s >= last else min(n, max(0, math.ceil(self.count(self.t0 + s + 1) - first)))
                if upto > done:
                    dropped[s] = upto - done
                    done = upto
                s += 1
            self.next_k = first + n
        # The count and the due times are each other's inverse up to rounding: settle the edge.
        while (due := self.due(self.next_k)) < before:
            s = self.second(due)
            dropped[s] = dropped.get(s, 0) + 1
            self.next_k += 1
        return dropped

    def claim(self, before: float) -> tuple[float, float, dict[int, int]]:
        """Drop what is due before time BEFORE (expire), then claim the lowest slot left:
        (k, when it is due, {second: dropped})."""
        k = self.next_k
        due = self.due(k)
        dropped: dict[int, int] = {}
        if due < before:
            dropped = self.expire(before)
            k = self.next_k
            due = self.due(k)
        self.next_k = k + 1
        return k, due, dropped


# --- what the generators counted ------------------------------------------------------------------


@dataclass
class ArrivalCounts:
    """Iterations of one generator (or, summed, of the run): scheduled = started + dropped.

    `per_second` maps a second of the schedule (0 = its start) to [scheduled, started, dropped].
    An exhaustion event is the start of a run of drops: the pool ran out of idle users. `span` is
    the part of the schedule (its seconds) the generator covered: from when it joined to the last
    moment it was handing out iterations (a stopping Locust blocks a while before saying so, and
    those moments offered nothing).
    """

    scheduled: int = 0
    started: int = 0
    dropped: int = 0
    exhaustion_events: int = 0
    queued: int = 0  # iterations that found no idle user and waited for one (--arrival-max-wait)
    per_second: dict[int, list[int]] = field(default_factory=dict)
    span: list[float] = field(default_factory=list)  # [first, last] second of the schedule covered

    def cover(self, t: float) -> None:
        """The generator was live T seconds into the schedule."""
        span = self.span
        if not span:
            span.extend((t, t))
        elif t > span[1]:
            span[1] = t
        elif t < span[0]:
            span[0] = t

    @property
    def span_s(self) -> float:
        return self.span[1] - self.span[0] if self.span else 0.0

    def record(self, second: int, started: bool) -> None:
        """One iteration's outcome, filed under its intended second."""
        self.record_many(second, int(started), int(not started))

    def record_many(self, second: int, started: int, dropped: int) -> None:
        """STARTED and DROPPED iterations at once, all filed under SECOND."""
        row = self.per_second.setdefault(second, [0, 0, 0])
        self.scheduled += started + dropped
        self.started += started
        self.dropped += dropped
        row[0] += started + dropped
        row[1] += started
        row[2] += dropped

    def to_report(self) -> dict[str, Any]:
        """JSON-safe form for the worker -> master report (msgpack keys stay strings)."""
        return {
            "scheduled": self.scheduled,
            "started": self.started,
            "dropped": self.dropped,
            "exhaustion_events": self.exhaustion_events,
            "queued": self.queued,
            "per_second": {str(k): v for k, v in self.per_second.items()},
            "span": self.span,
        }

    def add_report(self, report: dict[str, Any]) -> None:
        """Add a delta another generator shipped (see to_report)."""
        self.scheduled += int(report.get("scheduled", 0))
        self.started += int(report.get("started", 0))
        self.dropped += int(report.get("dropped", 0))
        self.exhaustion_events += int(report.get("exhaustion_events", 0))
        self.queued += int(report.get("queued", 0))
        for key, (sch, sta, dro) in (report.get("per_second") or {}).items():
            row = self.per_second.setdefault(int(key), [0, 0, 0])
            row[0] += sch
            row[1] += sta
            row[2] += dro
        for t in report.get("span") or []:
            self.cover(float(t))

    def rows(self) -> list[list[int]]:
        """[second, scheduled, started, dropped] per second of the schedule, in order, gaps as 0."""
        if not self.per_second:
            return []
        return [[s, *self.per_second.get(s, [0, 0, 0])] for s in range(max(self.per_second) + 1)]


PER_SECOND_COLUMNS = ("second", "scheduled", "started", "dropped")
"""Columns of the run folder's per-second arrival CSV (folder.ARRIVAL_CSV)."""


def summarize(spec: str, schedule: ArrivalSchedule, counts: ArrivalCounts, pool: int | None) -> OpenModel:
    """run.json's `open_model`: what was offered, what started, what was dropped.

    Rates are per second across all generators over the window the generators covered (the union
    of their spans): offered_rate is the schedule's mean there, scheduled_rate what the generators
    scheduled of it, achieved_rate the iterations that started.
    """
    start, end = counts.span or [0.0, 0.0]
    window = max(end - start, 1e-9)
    drops = [row[3] for row in counts.rows()]
    offered = schedule.iterations(end) - schedule.iterations(start)
    return OpenModel(
        arrival_rate=spec,
        schedule=str(schedule),
        pool_users=pool,
        window_s=round(end - start, 3),
        window_start_s=round(start, 3),
        offered_rate=round(offered / window, 3),
        scheduled_rate=round(counts.scheduled / window, 3),
        achieved_rate=round(counts.started / window, 3),
        iterations_scheduled=counts.scheduled,
        iterations_started=counts.started,
        dropped_iterations=counts.dropped,
        # offered by the schedule but by no generator: one lost until the master saw it missing
        unscheduled_iterations=max(0, round(offered) - counts.scheduled),
        dropped_ratio=round(counts.dropped / counts.scheduled, 5) if counts.scheduled else None,
        max_dropped_per_s=max(drops) if drops else 0,
        pool_exhaustion_events=counts.exhaustion_events,
        queued_iterations=counts.queued,
    )


def generator_iterations(counts: ArrivalCounts) -> GeneratorIterations:
    """One generator's line in run.json's open_model.per_worker."""
    return GeneratorIterations(
        scheduled=counts.scheduled, started=counts.started, dropped=counts.dropped, span=list(counts.span)
    )
