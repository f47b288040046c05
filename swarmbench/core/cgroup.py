"""This process's CPU limit, read from its cgroup: what a load generator's CPU use is judged against.

A container limited to 0.15 CPU that uses 0.15 CPU is saturated, although it used 15 % of a core.
Docker's `cpus:`, Swarm's `resources.limits.cpus` and Kubernetes' `limits.cpu` all set a CFS quota;
`cpuset` pins a process to some cores. Readers here, pure functions of a cgroup tree (the real
/sys/fs/cgroup, or a fixture directory in the tests; target/cgroup.go reads the same files):

    cgroup v2   <dir>/cpu.max                    "QUOTA PERIOD" (µs) or "max PERIOD"
                <dir>/cpuset.cpus.effective      "0-3,6"
    cgroup v1   <root>/cpu[,cpuacct]/<dir>/cpu.cfs_quota_us, cpu.cfs_period_us   (quota -1: none)
                <root>/cpuset/<dir>/cpuset.effective_cpus (or cpuset.cpus)

<dir> is this process's cgroup from /proc/self/cgroup; inside a container with its own cgroup
namespace (Docker's default on cgroup v2) that is "/", the mount's root. A limit anywhere on the way
up counts (a Kubernetes pod's limit sits on the pod's cgroup, above the container's): the smallest
quota from <dir> up to the mount's root wins. The effective limit is the smallest of the quota and the
cpuset's core count; with neither, the machine's cores. Standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path("/sys/fs/cgroup")
SELF = Path("/proc/self/cgroup")

V2_QUOTA = "cgroup2 cpu.max"
V1_QUOTA = "cgroup1 cpu.cfs_quota_us"
CPUSET = "cpuset"
HOST = "host cores"
"""`source` values: where the limit came from (HOST: no cgroup limit, the machine's cores)."""


@dataclass(frozen=True)
class CpuLimit:
    """CPUS: how many CPUs this process may use (a fraction for a quota); SOURCE: which rule set it."""

    cpus: float
    source: str

    def to_json(self) -> dict:
        return {"cpus": round(self.cpus, 4), "source": self.source}


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 cpu.max: "15000 100000" -> 0.15 CPUs; "max 100000" (no quota) -> None."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """cgroup v1: cfs_quota_us / cfs_period_us in CPUs; a quota of -1 means none."""
    try:
        quota, period = int(quota_text.strip()), int(period_text.strip())
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cpuset(text: str) -> int | None:
    """A cpuset list ("0-3,6", "2") -> how many cores it names; None when empty or malformed."""
    cores: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            return None
        cores.update(range(first, last + 1))
    return len(cores) or None


def own_cgroups(self_cgroup: str) -> dict[str, str]:
    """/proc/self/cgroup -> {controller: path}; cgroup v2's single line is under the key ""."""
    out: dict[str, str] = {}
    for line in self_cgroup.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        for controller in fields[1].split(",") if fields[1] else [""]:
            out[controller] = fields[2]
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _dirs_up(mount: Path, cgroup_path: str | None) -> list[Path]:
    """MOUNT/CGROUP_PATH and each parent up to MOUNT (only the levels that exist here; inside a
    container's namespace the path may not exist under the mount, which is then the process's own)."""
    rel = PurePosixPath(cgroup_path or "/").relative_to("/")
    levels = [mount / PurePosixPath(*rel.parts[:i]) for i in range(len(rel.parts), 0, -1)]
    return [d for d in levels if d.is_dir()] + [mount]


def _smallest(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def quota_v2(root: Path, cgroups: dict[str, str]) -> float | None:
    return _smallest([parse_cpu_max(_read(d / "cpu.max") or "") for d in _dirs_up(root, cgroups.get(""))])


def quota_v1(root: Path, cgroups: dict[str, str]) -> float | None:
    for name in ("cpu,cpuacct", "cpu", "cpuacct,cpu"):
        mount = root / name
        if (mount / "cpu.cfs_quota_us").exists():
            dirs = _dirs_up(mount, cgroups.get("cpu"))
            return _smallest(
                [
                    parse_cfs(_read(d / "cpu.cfs_quota_us") or "", _read(d / "cpu.cfs_period_us") or "")
                    for d in dirs
                ]
            )
    return None


def cpuset_cores(root: Path, cgroups: dict[str, str]) -> int | None:
    candidates = [d / "cpuset.cpus.effective" for d in _dirs_up(root, cgroups.get(""))[:1]]
    v1 = _dirs_up(root / "cpuset", cgroups.get("cpuset"))[:1] if (root / "cpuset").is_dir() else []
    candidates += [d / name for d in v1 for name in ("cpuset.effective_cpus", "cpuset.cpus")]
    for path in candidates:
        cores = parse_cpuset(_read(path) or "")
        if cores:
            return cores
    return None


def cpu_limit(root: Path = ROOT, self_cgroup: str | None = None, host_cores: int | None = None) -> CpuLimit:
    """The CPUs this process may use: its cgroup's quota or cpuset, whichever is smaller, else
    HOST_CORES (default: the machine's). SELF_CGROUP: /proc/self/cgroup's text (read when None)."""
    if self_cgroup is None:
        self_cgroup = _read(SELF) or ""
    cgroups = own_cgroups(self_cgroup)
    quota, source = quota_v2(root, cgroups), V2_QUOTA
    if quota is None:
        quota, source = quota_v1(root, cgroups), V1_QUOTA
    cores = cpuset_cores(root, cgroups)
    if quota is not None and (cores is None or quota <= cores):
        return CpuLimit(quota, source)
    if cores is not None:
        return CpuLimit(float(cores), CPUSET)
    return CpuLimit(float(host_cores or os.cpu_count() or 1), HOST)
