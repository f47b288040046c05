"""The cap the users' pacing puts on a run's rate, from run.json's measured `pacing` (or the option).

The verdict's load-bound rule (verdict.py) needs it. The pacing it uses is what the users did, not
what the --wait-time option says: run.json's `pacing` holds each user class's measured waits
(plugin/pacing.py), so a locustfile whose class sets its own `wait_time` is judged by its own waits.
Several classes: each class's cap is its users / its mean wait (closed loop) or users x the option's
rate (open loop), and the run's cap is their sum (each class's users start tasks independently, so
their maxima add up). Runs recorded before `pacing` existed fall back to the option.
"""

from __future__ import annotations

from swarmbench.core.sections import ClassPacing, PacingClassInputs, VerdictInputs
from swarmbench.core.wait import try_parse


def pacing_classes(pacing: dict[str, ClassPacing] | None, wait_time: str | None) -> list[PacingClassInputs]:
    """run.json's measured `pacing`, one row per user class with users, sorted by name; `cap` is
    the tasks/s that class's users can start at most (None: no cap -- zero waits, no waits measured
    (a TaskSet's own wait_time is not observed), or an open-loop wait_time of the class's own, whose
    rate the waits do not tell)."""
    spec = try_parse(wait_time)
    rows = []
    for name, p in sorted((pacing or {}).items()):
        if not p.users:
            continue
        if not p.waits or p.mean_wait_s is None:
            rows.append(
                PacingClassInputs(name=name, users=p.users, waits=0, own_wait_time=None, open_loop=False)
            )
            continue
        own = p.wait_time_option_used is False
        open_loop = bool(p.open_loop) or (not own and spec is not None and spec.think_time_s is None)
        if open_loop:
            rate = spec.rate_per_user if spec is not None and not own else None
            cap = p.users * rate if rate else None
        else:
            cap = p.users / p.mean_wait_s if p.mean_wait_s > 0 else None
        rows.append(
            PacingClassInputs(
                name=name, users=p.users, waits=p.waits, mean_wait_s=p.mean_wait_s,
                own_wait_time=own, open_loop=open_loop, cap=cap,
            )
        )  # fmt: skip
    return rows


def fill_pacing(inputs: VerdictInputs, pacing: dict[str, ClassPacing] | None) -> None:
    """INPUTS' cap in requests/s and mean think time: measured when run.json has `pacing`, else from
    the --wait-time option (`pacing_measured` says which). Needs inputs.requests/users/wait_time."""
    classes = pacing_classes(pacing, inputs.wait_time)
    if not classes:
        spec = try_parse(inputs.wait_time)
        cap = spec.offered_rate_cap(inputs.users) if spec and inputs.users else None
        inputs.pacing_measured, inputs.pacing = False, []
        inputs.offered_rate_cap = None if cap is None else round(cap, 2)
        inputs.think_time_s = spec.think_time_s if spec else None
        return
    waits = sum(c.waits or 0 for c in classes)
    per_task = inputs.requests / waits if inputs.requests and waits else None
    caps = [c.cap for c in classes]
    cap = sum(c for c in caps if c is not None) * per_task if per_task and None not in caps else None
    closed = [c for c in classes if c.waits and not c.open_loop]
    think = (
        sum((c.mean_wait_s or 0.0) * (c.waits or 0) for c in closed) / sum(c.waits or 0 for c in closed)
        if closed
        else None
    )
    for c in classes:
        c.mean_wait_s = None if c.mean_wait_s is None else round(c.mean_wait_s, 4)
        c.cap = None if c.cap is None else round(c.cap, 2)
    inputs.pacing_measured, inputs.pacing = True, classes
    inputs.requests_per_task = None if per_task is None else round(per_task, 3)
    inputs.offered_rate_cap = None if cap is None else round(cap, 2)
    inputs.think_time_s = None if think is None else round(think, 4)


def _class_words(c: PacingClassInputs, option: str | None) -> str:
    """One class's pacing: "20 users of FastUser (its own wait_time, mean wait 0.0200 s)"."""
    if not c.waits:
        return f"{c.users} users of {c.name} (no waits seen: a TaskSet's own wait_time?)"
    source = "its own wait_time" if c.own_wait_time else f"--wait-time '{option}'"
    wait = "open-loop pacing" if c.open_loop else f"measured mean wait {c.mean_wait_s:.4f} s"
    return f"{c.users} users of {c.name} ({source}, {wait})"


def pacing_words(inputs: VerdictInputs) -> str:
    """Who paced the run: each measured class and where its wait_time came from, or the option."""
    if not inputs.pacing:
        return f"{inputs.users} users with --wait-time '{inputs.wait_time}' (pacing not measured)"
    return " and ".join(_class_words(c, inputs.wait_time) for c in inputs.pacing)


def paces_itself(pacing: dict[str, ClassPacing] | None) -> bool:
    """Every user class paced itself (no wait went through the --wait-time option)."""
    return bool(pacing) and all(p.wait_time_option_used is False for p in (pacing or {}).values())
