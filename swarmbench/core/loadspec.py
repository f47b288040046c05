"""The load a run asks for, each as one grammar: durations, the wait time, request mixes and stores,
the arrival-rate schedule and step loads.

The one duration grammar of the whole package: `500ms`, `30s`, `1.5m`, `2h`, `1m30s`, `90`.

A duration is one or more NUMBER UNIT parts (units ms, s, m, h; Locust's --run-time forms like
`1h30m` are the same grammar) or a plain number in the caller's default unit. Every setting that
takes a time goes through `parse_duration`: --run-time, --arrival-rate's stages, --arrival-max-wait,
the step grammars' SECONDS, KNEE_P99_MS. Standard library only.

The --wait-time spec, parsed once: `between MIN MAX`, `constant S`, `throughput R`, `pacing S`.

Pacing decides whether adding load generators can raise the request rate at all, so it is a run
setting (recorded in run.json) rather than something edited in a locustfile. The plugin turns a
spec into Locust's wait function (plugin/pacing.py); the runner validates it before anything starts;
the verdict reads its think time and the rate cap it puts on closed-loop users. All from here.

What an experiment varies: request mixes, the target's store strategies, sweep modes (step loads:
below).

Named once here: the albums scenario builds its cycles under these mix names, the plugin validates
--albums-mix against them, the sweep plans over them, the CLI's help lists them.

Open-model load: the --arrival-rate stage grammar, the rate it offers over time, and its counts.

An arrival-rate run starts iterations (one task of one user) at a rate R per second across all load
generators, whatever the responses take: a user of the pre-spawned pool (`--users`) runs each
iteration; an iteration whose intended start finds no idle user is DROPPED and counted, never
delayed (a delayed start is what hides a slow server from a closed-loop test).

The grammar, `STAGE; STAGE; ...`:

    100             100 iterations/s from the start (a '/s' suffix is allowed: 100/s)
    50; 100@30s     start at 50/s, ramp linearly to 100/s over 30 s, then hold 100/s
    100@10s         ramp from 0 to 100/s over 10 s, then hold
    50; 50@30s; 200@0s; 200@1m
                    hold 50/s for 30 s, jump to 200/s, hold it for a minute (and after)

The last rate holds until the run ends. Durations: core/loadspec.py (500ms, 30s, 2m, plain seconds).
The holds of a schedule (a stage at the rate it starts from) are its steps, whoever wrote it (knee,
sweep, ARRIVAL_RATE by hand): the analysis judges each hold.

Standard library only: the plugin schedules iterations from it, the runner validates the setting
before anything starts, the analysis reads the schedule back. What each generator counted, and
run.json's `open_model` summary: core/openmodel.py; the open-model verdict: core/bottleneck.py.

The one step grammar, `START STEP SECONDS MAX`: user steps (`--step-users`, STEP_USERS) and rate
steps (`knee --rates`, STEP_RATES) alike.

    10 10 20 80        users 10, 20, ... 80, 20 s each (a closed-loop step load)
    100 100 20s 800    100, 200, ... 800 iterations/s, 20 s each (an open-model knee)

Users must be whole numbers from 1; rates may be fractional (`2.5/s`) up to arrival.MAX_RATE. A
user step load runs as locustfiles/step_load.py's shape; a rate step load is written in the
--arrival-rate grammar as holds joined by jumps, so the plugin needs nothing new for it.
Standard library only: the runner validates, the plugin runs, the analysis reads back."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from swarmbench.core.manifest import LoadShape

# --- durations ------------------------------------------------------------------------------------

UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
"""Seconds per unit."""

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PLAIN = re.compile(rf"^{_NUMBER}$")
_PART = re.compile(rf"({_NUMBER})\s*(ms|s|m|h)\s*")
_WHOLE = re.compile(rf"^(?:{_NUMBER}\s*(?:ms|s|m|h)\s*)+$")


def parse_duration(text: str, unit: str = "s") -> float:
    """Seconds of TEXT ('500ms', '30s', '1m30s', or a plain number of UNITs); ValueError otherwise."""
    word = text.strip()
    if word.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        raise ValueError(f"{word!r} is not a finite duration")
    if _PLAIN.match(word):
        seconds = float(word) * UNIT_S[unit]
    elif _WHOLE.match(word):
        seconds = sum(float(n) * UNIT_S[u] for n, u in _PART.findall(word))
    else:
        raise ValueError(f"{word!r} is not a duration like 30s, 500ms, 2m or 1h")
    return seconds


# --- the wait time --------------------------------------------------------------------------------

DEFAULT_WAIT_TIME = "between 0.5 1.5"
"""Default pacing: closed loop, ~1 s think time per user, like a person clicking through a UI.
With U users it caps the offered load near U requests/s whatever the worker count; use
`throughput R` or more users to measure a server's capacity."""

ARITY = {"between": 2, "constant": 1, "throughput": 1, "pacing": 1}
"""Each form and how many numbers it takes."""

WAIT_USAGE = "expected 'between MIN MAX', 'constant SECONDS', 'throughput TASKS_PER_S' or 'pacing SECONDS'"


@dataclass(frozen=True)
class WaitSpec:
    """A parsed spec: `kind` one of ARITY, `values` its numbers (finite, >= 0)."""

    kind: str
    values: tuple[float, ...]

    def __str__(self) -> str:
        return " ".join([self.kind, *(f"{v:g}" for v in self.values)])

    @property
    def think_time_s(self) -> float | None:
        """Mean seconds a closed-loop user waits between tasks; None for open-ish pacing
        (throughput, pacing), where the wait shrinks as responses slow down."""
        if self.kind == "between":
            return (self.values[0] + self.values[1]) / 2
        if self.kind == "constant":
            return self.values[0]
        return None

    @property
    def rate_per_user(self) -> float | None:
        """Most tasks/s one user can start with this pacing (even with instant responses); None
        when it does not cap the rate (zero think time)."""
        if self.kind == "throughput":
            return self.values[0]
        wait = self.values[0] if self.kind == "pacing" else self.think_time_s
        return 1 / wait if wait else None

    def offered_rate_cap(self, users: int) -> float | None:
        """Upper bound on tasks/s that USERS users with this pacing can start."""
        rate = self.rate_per_user
        return None if rate is None else rate * users


@functools.lru_cache(maxsize=64)
def parse_wait_time(spec: str) -> WaitSpec:
    """Parse a spec such as "between 0.5 1.5" or "throughput 2" (commas work as spaces).

    Raises ValueError with a message naming the spec when it is malformed.
    """
    words = spec.replace(",", " ").split()
    if not words or words[0] not in ARITY or len(words) - 1 != ARITY[words[0]]:
        raise ValueError(f"invalid wait time {spec!r}: {WAIT_USAGE}")
    try:
        numbers = tuple(float(w) for w in words[1:])
    except ValueError:
        raise ValueError(f"invalid wait time {spec!r}: {words[1:]} are not numbers") from None
    if any(n < 0 or not math.isfinite(n) for n in numbers):
        raise ValueError(f"invalid wait time {spec!r}: values must be finite and >= 0")
    if words[0] == "between" and numbers[0] > numbers[1]:
        raise ValueError(f"invalid wait time {spec!r}: MIN is larger than MAX")
    if words[0] == "throughput" and numbers[0] == 0:
        raise ValueError(f"invalid wait time {spec!r}: throughput must be > 0")
    return WaitSpec(words[0], numbers)


def try_parse(spec: str | None) -> WaitSpec | None:
    """The parsed spec, or None for no spec or a malformed one (a recorded run.json is read, not
    validated: an old or hand-made value must not stop the analysis)."""
    if not spec:
        return None
    try:
        return parse_wait_time(spec)
    except ValueError:
        return None


# --- what an experiment varies --------------------------------------------------------------------

DEFAULT_MIX = "default"
READ_HEAVY = "read-heavy"
POST_HEAVY = "post-heavy"
MIXES: dict[str, str] = {DEFAULT_MIX: "3:1", READ_HEAVY: "9:1", POST_HEAVY: "1:3"}
"""Request mixes of the bundled albums scenario -> their GET:POST ratio (the cycles live in
locustfiles/albums.py). The store strategies differ most between a write-heavy and a read-heavy load."""

STORES = ("mutex", "rwmutex", "syncmap", "sharded")
"""The target's shared-state strategies (ALBUMS_STORE); target/store.go implements them."""

STRONG, WEAK = "strong", "weak"
SWEEP_MODES = (STRONG, WEAK)
"""strong: total users fixed as workers grow; weak: users per worker fixed, so the total grows."""


# --- the arrival-rate schedule (open model) -------------------------------------------------------

ARRIVAL_USAGE = "expected 'RATE[@DURATION]; ...' such as '100', '50; 100@30s' or '100@10s; 400@1m'"


MAX_RATE = 1_000_000.0
"""Iterations/s above which a value is surely a typo (a million starts per second is beyond any
Locust cluster); it also keeps the scheduler's 1/rate gaps away from float underflow."""


@dataclass(frozen=True)
class Stage:
    """Ramp linearly to `rate` iterations/s over `duration_s` (0: jump)."""

    rate: float
    duration_s: float


@dataclass(frozen=True)
class ArrivalSchedule:
    """The offered rate over time: `start_rate` at t=0, then each stage in turn, then the last rate."""

    start_rate: float
    stages: tuple[Stage, ...] = ()

    def rate_at(self, t: float) -> float:
        """Iterations/s offered T seconds after the schedule started (all generators together)."""
        rate, t0 = self.start_rate, 0.0
        for st in self.stages:
            if t < t0 + st.duration_s:
                return rate + (st.rate - rate) * (t - t0) / st.duration_s
            rate, t0 = st.rate, t0 + st.duration_s
        return rate

    def iterations(self, t1: float) -> float:
        """Iterations offered in [0, T1] (the integral of rate_at): what a run of T1 seconds offers."""
        total, rate, t0 = 0.0, self.start_rate, 0.0
        for st in self.stages:
            end = min(t1, t0 + st.duration_s)
            if end > t0:
                mid = self.rate_at((t0 + end) / 2)  # linear within a stage: the midpoint is exact
                total += mid * (end - t0)
            if t1 <= t0 + st.duration_s:
                return total
            rate, t0 = st.rate, t0 + st.duration_s
        return total + rate * max(0.0, t1 - t0)

    def time_at(self, n: float) -> float:
        """The first time T with iterations(T) = N: when the schedule's N-th iteration is due
        (math.inf when it never offers that many). Exact per stage (a ramp's count is quadratic in
        time), so a ramp from 0 starts at once instead of waiting 1 / (a tiny first rate)."""
        if n <= 0:
            return 0.0
        done, rate, t0 = 0.0, self.start_rate, 0.0
        for st in self.stages:
            seg = (rate + st.rate) / 2 * st.duration_s
            if seg > 0 and done + seg >= n:
                need, a = n - done, (st.rate - rate) / (2 * st.duration_s)
                # rate*x + a*x^2 = need, in the form that is stable for either sign of a
                x = 2 * need / (rate + math.sqrt(max(0.0, rate * rate + 4 * a * need)))
                return t0 + min(st.duration_s, x)
            done, rate, t0 = done + seg, st.rate, t0 + st.duration_s
        return t0 + (n - done) / rate if rate > 0 else math.inf

    def __str__(self) -> str:
        first = [f"{self.start_rate:g}"] if self.start_rate or not self.stages else []
        return "; ".join(first + [f"{s.rate:g}@{s.duration_s:g}s" for s in self.stages])


@dataclass(frozen=True)
class Hold:
    """A constant offered rate from T0 to T1 seconds of the schedule (T1 = inf: until the run ends)."""

    rate: float
    t0: float
    t1: float


def holds(schedule: ArrivalSchedule) -> list[Hold]:
    """The schedule's constant-rate parts, in order, the last one open-ended; ramps are no step.
    A rate of 0 offers nothing to judge and is left out."""
    out: list[Hold] = []
    rate, t0 = schedule.start_rate, 0.0
    for st in schedule.stages:
        if st.duration_s > 0 and st.rate == rate and rate > 0:
            if out and out[-1].rate == rate and out[-1].t1 == t0:  # '100; 100@10s; 100@10s' is one step
                out[-1] = Hold(rate, out[-1].t0, t0 + st.duration_s)
            else:
                out.append(Hold(rate, t0, t0 + st.duration_s))
        rate, t0 = st.rate, t0 + st.duration_s
    if rate > 0:
        if out and out[-1].rate == rate and out[-1].t1 == t0:
            out[-1] = Hold(rate, out[-1].t0, math.inf)
        else:
            out.append(Hold(rate, t0, math.inf))
    return out


def _rate(text: str) -> float:
    word = text.strip().removesuffix("/s").strip()
    try:
        rate = float(word)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a rate (iterations per second)") from None
    if not math.isfinite(rate) or rate < 0 or rate > MAX_RATE:
        raise ValueError(f"rate {text.strip()!r} must be between 0 and {MAX_RATE:g} per second")
    return rate


def parse_arrival_rate(spec: str) -> ArrivalSchedule:
    """The schedule of SPEC; ValueError naming the spec and the stage that is wrong."""
    items = spec.split(";")
    if not spec.strip():
        raise ValueError(f"empty arrival rate: {ARRIVAL_USAGE}")
    start, stages = 0.0, []
    for i, item in enumerate(items, 1):
        try:
            if not item.strip():
                raise ValueError("empty stage")
            rate_text, at, dur_text = item.partition("@")
            rate = _rate(rate_text)
            if at:
                stages.append(Stage(rate, parse_duration(dur_text)))
            elif i == 1:
                start = rate
            else:
                raise ValueError("only the first stage may omit '@DURATION'")
        except ValueError as e:
            raise ValueError(
                f"invalid arrival rate {spec!r}: stage {i} {item.strip()!r}: {e}; {ARRIVAL_USAGE}"
            ) from None
    schedule = ArrivalSchedule(start, tuple(stages))
    if schedule.start_rate == 0 and all(s.rate == 0 for s in stages):
        raise ValueError(f"invalid arrival rate {spec!r}: every rate is 0, nothing would be sent")
    return schedule


# --- step loads -----------------------------------------------------------------------------------

STEP_SETTLE_S = 5
"""Seconds `knee` adds to a step load's run time, so the last step runs its whole length."""

STEP_USAGE = (
    "expected 'START STEP SECONDS MAX', e.g. '10 10 20 80' (users) or '100 100 20 800' (iterations/s)"
)


@dataclass(frozen=True)
class Steps:
    """START, START+STEP, ... up to MAX (users or iterations/s), SECONDS per step."""

    start: float
    step: float
    seconds: float
    max: float

    @property
    def levels(self) -> list[float]:
        """Every step's value, in order."""
        n = int(math.floor((self.max - self.start) / self.step + 1e-9)) + 1
        return [self.start + i * self.step for i in range(n)]

    @property
    def duration_s(self) -> float:
        return len(self.levels) * self.seconds

    def run_time(self) -> str:
        """A --run-time that covers every step plus STEP_SETTLE_S, e.g. '125s'."""
        return f"{math.ceil(self.duration_s) + STEP_SETTLE_S}s"

    # --- user steps ---

    def users_at(self, run_time_s: float) -> int | None:
        """Users at RUN_TIME_S seconds into the test; None once the last step has run."""
        index = int(run_time_s // self.seconds)
        levels = self.levels
        return None if index >= len(levels) else int(levels[index])

    def load_shape(self) -> LoadShape:
        """run.json's `load_shape` of a user step load."""
        return LoadShape(
            kind="step", start=int(self.start), step=int(self.step), seconds=self.seconds, max=int(self.max)
        )

    # --- rate steps ---

    def arrival_rate(self) -> str:
        """The --arrival-rate spec: hold each rate SECONDS, jump to the next (the last holds on)."""
        stages = [f"{self.start:g}"]
        for i, rate in enumerate(self.levels):
            if i:
                stages.append(f"{rate:g}@0s")
            stages.append(f"{rate:g}@{self.seconds:g}s")
        return "; ".join(stages)


def parse_steps(spec: str, rates: bool) -> Steps:
    """'START STEP SECONDS MAX' -> Steps; ValueError naming the problem. RATES: iterations/s
    (fractional, an optional '/s'), else users (whole numbers)."""
    words = spec.replace(",", " ").split()
    if len(words) != 4:
        raise ValueError(f"{spec!r}: {STEP_USAGE}")
    try:
        start, step, top = (float(w.removesuffix("/s")) if rates else int(w) for w in (*words[:2], words[3]))
    except ValueError:
        what = "numbers" if rates else "whole numbers"
        raise ValueError(f"{spec!r}: START, STEP and MAX must be {what}; {STEP_USAGE}") from None
    try:
        seconds = parse_duration(words[2])
    except ValueError as e:
        raise ValueError(f"{spec!r}: SECONDS {e}; {STEP_USAGE}") from None
    if not all(math.isfinite(v) for v in (start, step, seconds, top)):
        raise ValueError(f"{spec!r}: every value must be finite; {STEP_USAGE}")
    low, high = (0.0, MAX_RATE) if rates else (1, math.inf)
    if start <= 0 or start < low or step <= 0 or seconds <= 0 or top < start or top > high:
        limit = f" <= {MAX_RATE:g}" if rates else ""
        raise ValueError(
            f"{spec!r}: need START > 0, STEP > 0, SECONDS > 0 and START <= MAX{limit}; {STEP_USAGE}"
        )
    return Steps(start, step, seconds, top)


def parse_step_users(spec: str) -> Steps:
    """User steps (--step-users/STEP_USERS): whole numbers of users."""
    return parse_steps(spec, rates=False)


def parse_step_rates(spec: str) -> Steps:
    """Rate steps (knee --rates/STEP_RATES): iterations/s."""
    return parse_steps(spec, rates=True)
