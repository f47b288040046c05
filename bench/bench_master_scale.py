"""Benchmark: the master at hundreds of workers, simulated on Locust's own wire protocol.

    python bench/bench_master_scale.py --workers N --names K --seconds S [--warmup 15] [--rps 200]
                                       [--seed 1] [--masters swarmbench,locust] [--profile DIR] [--keep DIR]

One process plays N workers against each of two real masters started side by side, at the same
time, on this machine: the Swarmbench master (Locust with the plugin in front of the albums
scenario: core/launch.py's command line) and a plain Locust master (bench/master_scale_plain.py, no
plugin). Both get --expect-workers N, N users (one a worker), and the same simulated workers, over
ZeroMQ (a DEALER per worker, its client_id as identity) with Locust's own messages (its Message
class: msgpack) and timing: client_ready (again after 5 s without an ack), a heartbeat every second,
a stats report every 3 s from the ack on, spawning / spawning_complete on "spawn", and on "quit" a
final report and "quit"; "stop" is answered like a real worker does. Phases are random, as workers
started one by one are.

Reports are real-shaped: Locust's stats, stats_total and errors made by Locust's own RequestStats
from K request names (Zipf-weighted, long-tailed latencies, 0.5 % failures), and, to the
Swarmbench master only (a plain worker sends none), what the plugin adds: its CPU seconds, loop
lag, pacing and the exact-latency windows encoded by the plugin's own Recorder (4 windows a report:
3 s of requests that straddle window edges). They are drawn from POOL templates made before the
run from a seeded model (--seed), so the simulator only fills in times: the truth is known. Every
report sent is counted; at the end the Swarmbench run folder is checked against the truth:
locust_stats.csv's counts, locust_latency_hdr.json's histograms (bucket for bucket),
locust_latency_hdr.csv's percentiles (computed again by hdrh's own code), every window of
locust_latency_windows.csv (count and histogram) and run.json's latency.exact. The plain master's
CSV counts are checked too (Locust quits 0.5 s after asking its workers to; its last reports can
be lost: that is reported, not hidden).

Measured over S seconds after --warmup (WARMUP_S) from the later test start (both masters in the
same seconds): each master's CPU (utime + stime from /proc/PID/stat, % of one core), its RSS at the end
of the interval, its report handling time (bench/master_scale_probe.py times Locust's decode plus
handle_message inside each master: every worker_report listener), the heartbeat round trip seen by
the simulated workers (a reply queued behind reports is late), workers the master declared missing
(its log), and the mean bytes of a stats message. The simulator prints its own CPU and how late it
sent what was due (lag p99/max): a master that falls behind is not a simulator that does.

--profile DIR: py-spy (requirements-dev.txt) samples each master over the measured interval; the
top functions by own and by total time are printed and the raw stacks left in DIR.

File descriptors: every simulated worker is a socket (2-3 descriptors); the soft limit is raised
to the hard limit for this process and the masters it starts (resource.setrlimit), and a --workers
that would not fit is refused. Only 127.0.0.1; every run is bounded in time. The last line, for
scripts:
    workers=N names=K swarmbench_cpu=X% locust_cpu=Y% ratio=R missing=M exact=yes|no
(M: workers either master declared missing; exact: the Swarmbench folder equals the truth).
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _master_scale_check import check_counts, check_swarmbench, top_functions, truth_counts
from _master_scale_model import OFFSETS, Template, make_templates
from _master_scale_procs import (
    CONNECT_WAIT_S,
    MASTER_CPUS_ENV,
    Master,
    cpu_seconds,
    handling,
    keep_off,
    listener_cpu,
    master_cpus,
    memory_mib,
    missing_workers,
    own_cpu_seconds,
    pct,
    raise_fd_limit,
    start_master,
    start_profilers,
)
from _master_scale_sim import TICK_S, Group, Simulator
from locust.runners import HEARTBEAT_LIVENESS, WORKER_REPORT_INTERVAL

from swarmbench.runner.points import free_port

PROG = "bench_master_scale.py"

WARMUP_S = 15.0
"""Seconds after the later test start before the measured interval: the first windows are sealed
(latency/windows.py SEAL_AFTER) and every worker has reported a few times, so the interval is the steady
state, not the ramp-up."""

TAIL_S = 5.0
"""The masters' --run-time goes this far past the measured interval: both tests still run while it
is measured, even if one master started its test a few seconds after the other."""

RPS_DEFAULT = 200.0
"""Requests per second per simulated worker, all names together: a worker with think time (a
closed-loop worker without runs 1,000-7,000/s here, bench_latency.py). The windows' sizes grow
with it; --rps changes it."""

END_WAIT_S = 120.0
"""After the run time: how long the masters may take to collect the final reports and write."""

FDS_PER_WORKER = 3
"""Descriptors a simulated worker costs this process (its TCP connection, ZeroMQ's mailbox, slack)."""

MASTERS = ("swarmbench", "locust")


def run(args: argparse.Namespace) -> int:
    limit = raise_fd_limit()
    pinned = master_cpus()
    if pinned:
        others = keep_off(pinned)  # the simulator (and ZeroMQ's threads, made after this)
        if others is None:
            fail(f"{MASTER_CPUS_ENV}={sorted(pinned)} leaves no CPU for the simulated workers")
        print(f"masters on CPU {sorted(pinned)}, the simulated workers on CPU {sorted(others)}", flush=True)
    need = args.workers * len(args.masters) * FDS_PER_WORKER + 256
    if need > limit:
        fail(f"--workers {args.workers}: needs about {need} file descriptors, the limit is {limit}")
    tmp = Path(tempfile.mkdtemp(prefix="swarmbench-scale-"))
    run_s = args.warmup + args.seconds + (TAIL_S if len(args.masters) > 1 else 1.0)
    print(
        f"{args.workers} simulated workers x {args.names} names, {args.rps:g} req/s each, against "
        f"{' and '.join(args.masters)} side by side; measured {args.seconds:g} s after {args.warmup:g} s "
        f"(descriptor limit {limit})",
        flush=True,
    )
    templates = make_templates(args.names, args.rps, args.seed)
    groups = [
        Group(name, free_port(), name == "swarmbench", rng=random.Random(args.seed + i))
        for i, name in enumerate(args.masters)
    ]
    masters = {g.name: start_master(g.name, args.workers, run_s, g.port, tmp, args.listeners) for g in groups}
    sim = Simulator(groups, templates, args.rps, args.workers, args.report_every)
    profilers: list[subprocess.Popen] = []
    try:
        time.sleep(1.0)  # the masters bind their ports (a worker's connect retries anyway)
        for g in groups:
            sim.connect(g, args.workers)
        outcome = drive(sim, groups, list(masters.values()), args, run_s, profilers)
    finally:
        for p in [*profilers, *(m.proc for m in masters.values())]:
            if p.poll() is None:
                p.kill()
                p.wait()
        sim.close()
    if outcome is None:
        print(f"the masters did not start their tests in {CONNECT_WAIT_S:g} s; their logs: {tmp}")
        return 1
    report(outcome, groups, masters, templates, args)
    if args.keep:
        shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


@dataclass
class Outcome:
    t_a: float  # the measured interval, epoch seconds
    t_b: float
    sim_cpu: float  # the simulator's CPU, % of one core
    sim_lag_p99: float | None  # how late it sent what was due, ms
    sim_lag_max: float | None


def drive(
    sim: Simulator,
    groups: list[Group],
    masters: list[Master],
    args: argparse.Namespace,
    run_s: float,
    profilers: list[subprocess.Popen],
) -> Outcome | None:
    """The loop: the workers connect, the tests start, the interval is measured, then the masters
    end their runs (quit every worker, collect the final reports, write) and exit."""
    deadline = time.monotonic() + CONNECT_WAIT_S
    t_a = t_b = None
    cpu_a = epoch_a = 0.0
    while True:
        sim.turn()
        now = time.monotonic()
        if t_a is None or t_b is None:
            starts = [g.test_started for g in groups]
            if all(starts):
                t_a = max(starts) + args.warmup  # type: ignore[type-var]
                t_b = t_a + args.seconds
                if max(starts) - min(starts) > TAIL_S:  # type: ignore[type-var,operator]
                    print("warning: the tests started too far apart; the interval is not both's")
            elif now > deadline or any(m.proc.poll() is not None for m in masters):
                return None
        elif not sim.measuring and t_a <= now < t_b:
            sim.measuring = True
            for m in masters:
                m.cpu_a = cpu_seconds(m.proc.pid)
                m.rss_a_mib = memory_mib(m.proc.pid)[0]
            cpu_a, epoch_a = own_cpu_seconds(), time.time()
            if args.profile:
                profilers.extend(start_profilers(masters, args.seconds, args.profile))
        elif sim.measuring and now >= t_b:
            sim.measuring = False
            for m in masters:
                m.cpu_b = cpu_seconds(m.proc.pid)
                m.rss_mib, m.hwm_mib = memory_mib(m.proc.pid)
            lag = sim.lag_ms
            sim_cpu = 100 * (own_cpu_seconds() - cpu_a) / args.seconds
            outcome = Outcome(epoch_a, time.time(), sim_cpu, pct(lag, 0.99), max(lag) if lag else None)
            end_by = now + run_s + END_WAIT_S
            while any(m.proc.poll() is None for m in masters) and time.monotonic() < end_by:
                sim.turn()
                time.sleep(TICK_S)
            for p in profilers:
                p.wait(timeout=30)
            return outcome
        time.sleep(max(0.0, TICK_S - (time.monotonic() - now)))


COLUMNS = (
    ("master", 11),
    ("workers", 7),
    ("names", 5),
    ("CPU %", 6),
    ("RSS MiB", 8),
    ("report p99 ms", 13),
    ("hb rtt p99 ms", 13),
    ("missing", 7),
    ("bytes/report", 12),
    ("exact", 5),
)


def row(*cells: Any) -> str:
    first, *rest = zip(cells, (w for _, w in COLUMNS), strict=True)
    return " ".join([f"{first[0]:<{first[1]}}", *(f"{c:>{w}}" for c, w in rest)])


def report(
    outcome: Outcome,
    groups: list[Group],
    masters: dict[str, Master],
    templates: list[Template],
    args: argparse.Namespace,
) -> None:
    """The table, each master's details (and profile), the simulator's own figures, the last line."""
    cpu: dict[str, float] = {}
    exact, missing_total = "-", 0  # "-": no Swarmbench master in this run
    print("\n" + row(*(name for name, _ in COLUMNS)))
    for g in groups:
        m = masters[g.name]
        cpu[g.name] = 100 * (m.cpu_b - m.cpu_a) / args.seconds
        problems = verify(g, m, templates, args.names)
        verdict = ("no" if problems else "yes") if g.plugin else "n/a"
        exact = verdict if g.plugin else exact
        stats = handling(m.probe, "stats", outcome.t_a, outcome.t_b)
        beats = handling(m.probe, "heartbeat", outcome.t_a, outcome.t_b)
        missing = missing_workers(m.log)
        missing_total += len(missing)
        size = statistics.mean(g.report_bytes) if g.report_bytes else 0
        cells = (f"{cpu[g.name]:.1f}", f"{m.rss_mib:.1f}", fmt(stats.p99_ms, 2), fmt(pct(g.beat_ms, 0.99), 0))
        print(row(g.name, args.workers, args.names, *cells, len(missing), f"{size:.0f}", verdict))
        print(
            f"    {stats.count} reports in the interval, slowest {fmt(stats.max_ms, 1)} ms; handling them "
            f"took {stats.share:.1f} % of the interval, heartbeats {beats.share:.1f} % (wall time, waits for "
            f"the CPU included); heartbeats unanswered for "
            f"{HEARTBEAT_LIVENESS} s: {g.late_beats}; client_ready again {g.ready_retries}, reconnects "
            f"{g.reconnects}, sends refused {g.send_blocked}, other messages {dict(g.unknown) or 0}; "
            f"workers that quit when told {g.ended}/{len(g.workers)}; exit code {m.proc.returncode}; "
            f"RSS {m.rss_a_mib:.1f} -> {m.rss_mib:.1f} MiB over the interval, peak {m.hwm_mib:.1f}"
        )
        for problem in problems[:10]:
            print(f"    {'not exact' if g.plugin else 'counts'}: {problem}")
        if args.profile and (args.profile / f"{g.name}.txt").is_file():
            print_profile(args.profile / f"{g.name}.txt")
        if args.listeners:
            print_listeners(listener_cpu(m.probe, outcome.t_a, outcome.t_b), stats.count, args.seconds)
    print(
        f"simulator: {outcome.sim_cpu:.1f} % of one core; sends late by p99 "
        f"{fmt(outcome.sim_lag_p99, 1)} ms, max {fmt(outcome.sim_lag_max, 1)} ms "
        f"(loop period {TICK_S * 1000:.0f} ms)"
    )
    sb, lo = cpu.get("swarmbench"), cpu.get("locust")
    ratio = f"{sb / lo:.2f}" if sb is not None and lo else "-"
    print(
        f"workers={args.workers} names={args.names} swarmbench_cpu={fmt(sb, 1)}% locust_cpu={fmt(lo, 1)}% "
        f"ratio={ratio} missing={missing_total} exact={exact}"
    )


def verify(g: Group, m: Master, templates: list[Template], names: int) -> list[str]:
    """The Swarmbench folder against the truth (and the check against a truth one report short);
    the plain master: Locust's own counts, which its quit can cut short."""
    if not g.plugin:
        return check_counts(m.results / "plain_stats.csv", names, *truth_counts(g, templates, names))
    started = time.monotonic()
    problems = check_swarmbench(m.results, g, templates, names)
    if not problems and not check_swarmbench(m.results, one_short(g), templates, names):
        problems = ["the check found nothing wrong with a truth one report short: it checks nothing"]
    print(f"(the Swarmbench folder checked against the truth in {time.monotonic() - started:.1f} s)")
    return problems


def print_profile(path: Path) -> None:
    for title, frames in zip(("own", "total"), top_functions(path), strict=True):
        print(f"    py-spy, {title} time (% of samples):")
        print("\n".join(f"      {share:5.1f}%  {frame}" for frame, share in frames))


def print_listeners(cpu: dict[str, tuple[int, float]], reports: int, seconds: float) -> None:
    """Each worker_report listener's CPU (and the stats messages' decode) over the interval."""
    print("    CPU per stats report (thread CPU clock; --listeners):")
    for name, (calls, cpu_s) in sorted(cpu.items(), key=lambda kv: -kv[1][1]):
        per = 1e6 * cpu_s / max(1, calls)
        print(f"      {per:7.1f} us x {calls:6d} = {100 * cpu_s / seconds:5.2f} % of a core  {name}")


def one_short(group: Group) -> Group:
    """GROUP with one report fewer in its truth: the check must tell (else it checks nothing)."""
    r, _j, w = next(key for key in group.truth if key[1] == 0)
    short = Group(group.name, group.port, group.plugin)
    short.truth = group.truth.copy()
    for j in range(OFFSETS):
        for key in [k for k in short.truth if k[0] == r and k[1] == j]:
            short.truth[key] -= 1  # that template's report, in whichever window its offset went
            break
    return short


def fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# --- the command line --------------------------------------------------------------------------------


def fail(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    raise SystemExit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        fail(message)


def whole(name: str, least: int) -> Any:
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < least:
            fail(f"{name} {text!r}: expected a whole number >= {least}")
        return int(text)

    return parse


def positive(name: str) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0 or not math.isfinite(value):
            fail(f"{name} {text!r}: expected a number > 0")
        return value

    return parse


def masters_list(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names or any(n not in MASTERS for n in names):
        fail(f"--masters {text!r}: expected a comma-separated subset of {','.join(MASTERS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=whole("--workers", 1), default=50, help="simulated workers (default 50)")
    p.add_argument("--names", type=whole("--names", 1), default=10, help="request names (default 10)")
    p.add_argument(
        "--seconds", type=positive("--seconds"), default=60.0, help="measured seconds (default 60)"
    )
    p.add_argument(
        "--rps", type=positive("--rps"), default=RPS_DEFAULT, help="requests/s per worker (default 200)"
    )
    p.add_argument(
        "--warmup",
        type=positive("--warmup"),
        default=WARMUP_S,
        help=f"seconds before measuring (default {WARMUP_S:g})",
    )
    p.add_argument("--seed", type=whole("--seed", 0), default=1, help="the latency model's seed (default 1)")
    p.add_argument(
        "--report-every", type=positive("--report-every"), default=WORKER_REPORT_INTERVAL,
        help="each simulated worker's stats report interval, s (default Locust's 3; --abort-on-fail: 1)",
    )  # fmt: skip
    p.add_argument("--masters", type=masters_list, default=MASTERS, help="swarmbench,locust (default both)")
    p.add_argument(
        "--profile", type=Path, help="py-spy each master over the measured interval; raw stacks here"
    )
    p.add_argument("--keep", type=Path, help="copy the masters' logs, probes and run folders here")
    p.add_argument(
        "--listeners",
        action="store_true",
        help="time every worker_report listener's CPU in each master (costs them; not for the ratio)",
    )
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
