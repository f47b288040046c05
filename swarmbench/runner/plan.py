"""The sweep's plan, pure: validated settings, the shuffled list of points, resume from sweep.json.

No process is started here (points.py runs them, sweep.py drives the whole sweep), so everything in
this module is a function of its inputs and is unit-tested as such.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from swarmbench.core.arrival import parse_arrival_rate
from swarmbench.core.errors import InputError, UsageError
from swarmbench.core.experiment import MIXES, POST_HEAVY, READ_HEAVY, STORES, STRONG, SWEEP_MODES
from swarmbench.core.folder import MANIFEST, SWEEP_JSON, is_folder_name
from swarmbench.core.gitinfo import git_commit
from swarmbench.core.launch import DEFAULT_LOCUSTFILE
from swarmbench.core.sweepstate import SweepPoint, SweepState, take_recorded
from swarmbench.core.wait import parse_wait_time
from swarmbench.runner import settings as S
from swarmbench.runner.paths import ROOT

# A sweep's defaults (SWEEP_*): not those of one headless run (core/launch.py DEFAULT_*).
SWEEP_WORKERS = (1, 2, 4)
"""The worker counts a sweep runs (one run's default is launch.SWEEP_WORKERS)."""
SWEEP_CLASSES = ("AlbumsHttpUser", "AlbumsFastHttpUser")
SWEEP_REPEATS = 2
SWEEP_RUN_TIME = "20s"
"""Each point's run time: short enough for a 3 x 2 x 2 sweep in ~6 minutes, long enough for several
report intervals (one headless run's default is launch.SWEEP_RUN_TIME)."""
SWEEP_USERS = 50
SWEEP_MODE = STRONG


# --- settings ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepSettings:
    sweep_id: str
    workers: tuple[int, ...]
    classes: tuple[str, ...]
    repeats: int
    run_time: str
    users: int
    mode: str
    wait_time: str | None
    stores: tuple[str, ...] = ()  # empty: the target's configured store (ALBUMS_STORE), not swept
    mixes: tuple[str, ...] = ()  # empty: the scenario's default mix, not swept
    local: bool = False
    arrival_rate: str | None = None  # open model: every point's LOCUST_ARRIVAL_RATE (core/arrival.py)

    def identity(self) -> dict:
        """What must match for a rerun to resume this sweep (how it runs, local or not, may differ)."""
        d = asdict(self)
        d.pop("local")
        if d["arrival_rate"] is None:  # closed model: sweep.json as before open-model sweeps existed
            d.pop("arrival_rate")
        for k in ("workers", "classes", "stores", "mixes"):
            d[k] = list(d[k])
        return d

    def users_at(self, workers: int) -> int:
        """strong: the total is fixed; weak: users per worker are fixed, so the total grows."""
        return self.users * workers if self.mode == "weak" else self.users


def parse_list(name: str, value: str) -> list[str]:
    items = [w for w in re.split(r"[\s,]+", value.strip()) if w]
    if not items:
        raise UsageError(f"{name}={value!r} is empty")
    return items


def parse_workers(value: str) -> tuple[int, ...]:
    out: list[int] = []
    for w in parse_list("WORKERS", value):
        n = S.positive_int("WORKERS", w)
        if n in out:
            raise UsageError(f"WORKERS={value!r} lists {n} twice")
        out.append(n)
    return tuple(sorted(out))


def known_classes(env: Mapping[str, str]) -> set[str] | None:
    """User classes defined in the locustfiles the sweep would load (None: cannot tell).

    Read from the source (no import: swarmbench/ is stdlib-only) as `class Name(...User...)`.
    """
    files = (env.get("LOCUST_LOCUSTFILE") or DEFAULT_LOCUSTFILE).split(",")
    found: set[str] = set()
    for f in files:
        path = (ROOT / f.strip()) if not Path(f.strip()).is_absolute() else Path(f.strip())
        if not path.is_file():
            return None
        found |= set(re.findall(r"^class (\w+)\([^)]*User[^)]*\)", path.read_text(), re.M))
    return found


def check_choice(name: str, items: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    for it in items:
        if it not in allowed:
            raise UsageError(f"{name}: unknown {it!r}; expected one of {', '.join(allowed)}")
    if len(set(items)) != len(items):
        raise UsageError(f"{name}: {' '.join(items)} lists a value twice")
    return tuple(items)


def default_sweep_id(now: datetime | None = None) -> str:
    return f"sweep-{(now or datetime.now(UTC)):%Y%m%dT%H%M%SZ}"


STORE_COMPARISON = {
    "STORES": " ".join(STORES),
    "MIXES": f"{POST_HEAVY} {READ_HEAVY}",
    "WORKERS": "1",
    "CLASSES": "AlbumsFastHttpUser",
    "REPEATS": "1",
    "WAIT_TIME": "constant 0.01",
    # Lock work (CPU spent holding the store's lock) and 2 target CPUs make the strategies differ.
    "ALBUMS_LOCK_WORK": "200us",
    "TARGET_CPUS": "2",
}
"""`make sweep-stores` (--store-comparison): defaults for each variable the caller did not set."""


def store_comparison_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    for key, value in STORE_COMPARISON.items():
        if not env.get(key):
            env[key] = value
    return env


def sweep_settings(args: Mapping[str, str | None], env: Mapping[str, str]) -> SweepSettings:
    """Validate everything before anything starts; UsageError (one line) on the first problem.

    ARGS: flag values (None = not given); each falls back to its make variable in ENV.
    (Long on purpose: one validation step per setting, in the order the errors should be reported.)
    """

    def get(key: str, var: str, default: str | None = None) -> str | None:
        v = args.get(key)
        if v is None or v == "":
            v = env.get(var) or None
        return v if v is not None else default

    workers = parse_workers(get("workers", "WORKERS", " ".join(map(str, SWEEP_WORKERS))) or "")
    classes = tuple(parse_list("CLASSES", get("classes", "CLASSES", " ".join(SWEEP_CLASSES)) or ""))
    for c in classes:
        S.user_classes("CLASSES", c)
    known = known_classes(env)
    if known is not None:
        unknown = [c for c in classes if c not in known]
        if unknown:
            raise UsageError(
                f"CLASSES: unknown user class {unknown[0]!r}; "
                f"the locustfiles define {', '.join(sorted(known))}"
            )
    if len(set(classes)) != len(classes):
        raise UsageError(f"CLASSES={' '.join(classes)!r} lists a class twice")
    repeats = S.positive_int("REPEATS", get("repeats", "REPEATS", str(SWEEP_REPEATS)) or "")
    run_time = get("run_time", "RUN_TIME", SWEEP_RUN_TIME) or SWEEP_RUN_TIME
    seconds = S.timespan_seconds("RUN_TIME", run_time)
    users = S.positive_int("USERS", get("users", "USERS", str(SWEEP_USERS)) or "")
    mode = (get("mode", "MODE", SWEEP_MODE) or SWEEP_MODE).lower()
    if mode not in SWEEP_MODES:
        raise UsageError(
            f"MODE={mode!r}: expected strong (total users fixed) or weak (users per worker fixed)"
        )
    wait = get("wait_time", "WAIT_TIME") or env.get("LOCUST_WAIT_TIME") or None
    if wait is not None:
        try:
            parse_wait_time(wait)
        except ValueError as e:
            raise UsageError(f"WAIT_TIME: {e}") from None
    stores = mixes = ()
    if get("stores", "STORES"):
        stores = check_choice("STORES", parse_list("STORES", get("stores", "STORES") or ""), STORES)
    if get("mixes", "MIXES"):
        mixes = check_choice("MIXES", parse_list("MIXES", get("mixes", "MIXES") or ""), tuple(MIXES))
    sweep_id = get("sweep_id", "SWEEP_ID") or default_sweep_id()
    if not is_folder_name(sweep_id):
        raise UsageError(f"SWEEP_ID={sweep_id!r} must be a folder name (letters, digits, . _ + -)")
    arrival_rate = check_arrival_rate(get("arrival_rate", "ARRIVAL_RATE") or env.get("LOCUST_ARRIVAL_RATE"))
    local = bool(args.get("local")) or S.flag(env, "LOCAL")
    return SweepSettings(
        sweep_id=sweep_id,
        workers=workers,
        classes=classes,
        repeats=repeats,
        run_time=f"{seconds}s",
        users=users,
        mode=mode,
        wait_time=wait,
        stores=stores,
        mixes=mixes,
        local=local,
        arrival_rate=arrival_rate,
    )


def check_arrival_rate(spec: str | None) -> str | None:
    """The sweep's arrival-rate schedule (ARRIVAL_RATE), validated; None: closed model."""
    if not spec or not spec.strip():
        return None
    try:
        parse_arrival_rate(spec)
    except ValueError as e:
        raise UsageError(f"ARRIVAL_RATE: {e}") from None
    return spec.strip()


# --- the plan ---------------------------------------------------------------------------------------


Point = SweepPoint
"""A planned point and its outcome (sweep.json's schema: swarmbench.core.sweepstate)."""


def point_id(repeat: int, workers: int, user_class: str, store: str | None, mix: str | None) -> str:
    return "-".join(p for p in (f"r{repeat}", f"w{workers}", user_class, store, mix) if p)


def plan(s: SweepSettings) -> list[Point]:
    """Every point in run order: repeat by repeat, each repeat shuffled (seeded by the sweep id)."""
    out: list[Point] = []
    for repeat in range(1, s.repeats + 1):
        block = [
            Point(point_id(repeat, w, c, st, mx), repeat, w, c, s.users_at(w), st, mx)
            for w in s.workers
            for c in s.classes
            for st in (s.stores or (None,))
            for mx in (s.mixes or (None,))
        ]
        random.Random(f"{s.sweep_id}:{repeat}").shuffle(block)
        out.extend(block)
    return out


def load_state(sweep_dir: Path, s: SweepSettings) -> list[Point]:
    """The plan, with each point's recorded status when resuming (sweep.json)."""
    points = plan(s)
    path = sweep_dir / SWEEP_JSON
    if not path.exists():
        return points
    try:
        diff = take_recorded(path, s.identity(), points, lambda p: sweep_dir / p.id / MANIFEST)
    except InputError as e:
        raise UsageError(f"{e}; move it away or choose another SWEEP_ID") from None
    if diff:
        raise UsageError(
            f"sweep {s.sweep_id!r} exists with other settings ({', '.join(diff)} differ); "
            "rerun with the same settings to resume, or choose another SWEEP_ID"
        )
    return points


def save_state(
    sweep_dir: Path, s: SweepSettings, points: Sequence[Point], state: str, engine: str = "compose"
) -> None:
    """sweep.json, rewritten atomically (state: running | complete | incomplete | interrupted);
    `runner` says how the points ran: local processes, or the docker ENGINE (compose, swarm)."""
    SweepState.from_points(
        s.sweep_id,
        s.identity(),
        list(points),
        state=state,
        runner="local" if s.local else engine,
        git_commit=git_commit(ROOT),
    ).write(sweep_dir)
