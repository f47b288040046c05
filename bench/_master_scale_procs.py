"""bench/bench_master_scale.py's masters: how each is started, and what is read from them.

The Swarmbench master is started with core/launch.py's command line (the plugin in front of the
albums scenario, from the checkout, whose locust.conf applies), the plain one with
bench/master_scale_plain.py from a folder of its own (no locust.conf): both with --expect-workers N,
N users at N a second, and bench/master_scale_probe.py in front, which times their message handling.
CPU is read from /proc/PID/stat (utime + stime), memory from /proc/PID/status; workers declared
missing from Locust's own log line, which both masters print.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from swarmbench.core.launch import Launch

ROOT = Path(__file__).resolve().parents[1]
"""The checkout this script is in: not the installed package's folder (site-packages after pip install)."""

CONNECT_WAIT_S = 120.0
"""How long the masters may take to see every worker and start (--expect-workers-max-wait)."""

HOST = "http://127.0.0.1:1"
"""The masters' --host: nothing listens there (the Swarmbench master's target scrape fails at once);
no request is ever sent to it, the workers are simulated."""

PROBE = ROOT / "bench" / "master_scale_probe.py"
PLAIN = ROOT / "bench" / "master_scale_plain.py"

MASTER_CPUS_ENV = "BENCH_MASTER_CPUS"
"""CPUs the masters run on, as "1" or "2,3" (bench_scrape.py --pin sets it): the masters get them
to themselves and this script's simulated workers run on the others, as a master on a machine of
its own would, not beside its 1,000 workers. Unset: every process may run anywhere."""


def master_cpus() -> set[int] | None:
    value = os.environ.get(MASTER_CPUS_ENV, "").strip()
    return {int(c) for c in value.split(",")} if value else None


def keep_off(cpus: set[int]) -> set[int] | None:
    """This process (and what it starts from now on: threads, children) on the CPUs other than
    CPUS; those CPUs, or None when none is left."""
    others = os.sched_getaffinity(0) - cpus
    if others:
        os.sched_setaffinity(0, others)
    return others or None


MISSING_LINE = re.compile(r"Worker (\S+) failed to send heartbeat, setting state to missing")
"""Locust's own log line when a master declares a worker missing (both masters print it)."""


@dataclass
class Master:
    name: str
    proc: subprocess.Popen
    log: Path
    probe: Path  # the probe's timings (JSON)
    results: Path  # the Swarmbench run folder, or the plain master's CSV folder
    cpu_a: float = 0.0  # CPU seconds at the start of the measured interval
    cpu_b: float = 0.0
    rss_a_mib: float = 0.0  # at the start of the measured interval
    rss_mib: float = 0.0  # at its end
    hwm_mib: float = 0.0


def raise_fd_limit() -> int:
    """The soft descriptor limit raised to the hard one, for this process and (inherited) the
    masters it starts: every simulated worker is a connection on both sides."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def start_master(
    name: str, workers: int, run_s: float, port: int, tmp: Path, listeners: bool = False
) -> Master:
    log, probe = tmp / f"{name}.log", tmp / f"{name}.probe.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUST_")}
    env["SWARMBENCH_PROBE_OUT"] = str(probe)
    if listeners:
        env["SWARMBENCH_PROBE_LISTENERS"] = "1"
    common = [f"--users={workers}", f"--spawn-rate={workers}", "--loglevel=INFO"]
    if name == "swarmbench":
        launch = Launch(
            role="master",
            headless=True,
            workers=workers,
            run_time=f"{run_s:.0f}s",
            bind_host="127.0.0.1",
            master_port=port,
            host=HOST,
            results_dir=str(tmp / "results"),
            run_id="scale",
            workers_wait_s=int(CONNECT_WAIT_S),
        )
        argv = launch.argv()
        argv[1] = f"{PROBE},{argv[1]}"  # -f: the probe first, in front of the plugin
        cmd, cwd, results = [*argv, *common, "--skip-host-check"], ROOT, tmp / "results" / "scale"
    else:
        (tmp / "plain").mkdir()
        cmd = [
            "-f",
            f"{PROBE},{PLAIN}",
            "--master",
            "--headless",
            "--master-bind-host=127.0.0.1",
            f"--master-bind-port={port}",
            f"--expect-workers={workers}",
            f"--run-time={run_s:.0f}s",
            f"--expect-workers-max-wait={CONNECT_WAIT_S:.0f}",
            f"--host={HOST}",
            f"--csv={tmp / 'plain' / 'plain'}",
            *common,
        ]
        cwd, results = tmp, tmp / "plain"  # not the checkout: its locust.conf is Swarmbench's
    with open(log, "w") as out:
        cmd = [sys.executable, "-m", "locust", *cmd]
        cpus = master_cpus()
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None  # its threads inherit it
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=pin)
    return Master(name, proc, log, probe, results)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out.get("VmRSS", 0.0), out.get("VmHWM", 0.0)


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread: ZeroMQ's I/O thread included
    return usage.ru_utime + usage.ru_stime


def pct(values: list[float], q: float) -> float | None:
    """The Q-quantile (nearest rank); None without values."""
    if not values:
        return None
    xs = sorted(values)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]


@dataclass
class Handling:
    """What the probe saw of one message type in the measured interval."""

    p99_ms: float | None = None
    max_ms: float | None = None
    count: int = 0
    share: float = 0.0  # % of the interval spent handling them (wall time: waits for the CPU included)


def handling(path: Path, kind: str, t_a: float, t_b: float) -> Handling:
    """The master's handling of KIND messages in [T_A, T_B] (epoch seconds)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return Handling()
    took = [dt * 1000 for t, dt in data.get(kind, []) if t_a <= t <= t_b]
    share = 100 * sum(took) / 1000 / (t_b - t_a)
    return Handling(pct(took, 0.99), max(took) if took else None, len(took), share)


def listener_cpu(path: Path, t_a: float, t_b: float) -> dict[str, tuple[int, float]]:
    """{listener: (calls, CPU seconds)} in the seconds of [T_A, T_B] (the probe with --listeners)."""
    try:
        data = json.loads(path.read_text()).get("listeners") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    out: dict[str, tuple[int, float]] = {}
    for second, listeners in data.items():
        if t_a <= int(second) < t_b:
            for name, (calls, cpu_s) in listeners.items():
                before = out.get(name, (0, 0.0))
                out[name] = (before[0] + int(calls), before[1] + float(cpu_s))
    return out


def missing_workers(log: Path) -> set[str]:
    try:
        return set(MISSING_LINE.findall(log.read_text(errors="replace")))
    except OSError:
        return set()


def start_profilers(masters: list[Master], seconds: float, out: Path) -> list[subprocess.Popen]:
    """py-spy (requirements-dev.txt) on each master for SECONDS, raw stacks to OUT/NAME.txt;
    --nonblocking, so the masters are not paused to be sampled."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    out.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(m.proc.pid),
                "--duration",
                f"{seconds:.0f}",
                "--rate",
                "100",
                "--nonblocking",
                "--format",
                "raw",
                "-o",
                str(out / f"{m.name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for m in masters
    ]
