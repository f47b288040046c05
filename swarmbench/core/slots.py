"""One load generator's share of an arrival schedule as numbered slots: which are due, which are lost.

The generator owns the slots k = phase, phase + 1, ... of its share: slot k is due when its local
count `share x iterations(t) + offset` reaches k (core/arrival.py gives iterations(t)). A user that
becomes free CLAIMS the lowest unclaimed slot and sleeps until it is due; users claim in the order
they become free, so the user that has waited longest runs the next iteration.

Why that is the open model, exactly: a slot still unclaimed when it is due found no user free. (A
user free at that moment would hold a claim; claims are handed out in slot order, so it would hold
this slot or an earlier one.) Such a slot is DROPPED, never delayed -- unless the caller allows a
wait (`--arrival-max-wait`): then a user that frees up within it still takes the slot, late, and
its lateness counts in the iteration's intended-start latency.

Nothing here sleeps or reads a clock: every method takes `now`, so the tests can drive it with any
times. plugin/pool.py runs it with time.perf_counter() and gevent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from swarmbench.core.arrival import ArrivalSchedule


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
