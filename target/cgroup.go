package main

// The CPU limit this process runs under, read from its own cgroup, so the
// harness can judge the target's CPU use against what it may use (a container
// limited to 0.25 CPU is saturated at 0.25, not at a core). The same rules as
// swarmbench/core/cgroup.py, tested on the same fixture trees
// (testdata/cgroup): cgroup v2 cpu.max, cgroup v1 cpu.cfs_quota_us /
// cpu.cfs_period_us, the cpuset's cores; the smallest quota from this
// process's cgroup up to the mount's root (a Kubernetes pod's limit sits on
// the pod's cgroup); the smaller of that quota and the cpuset; else the cores
// the process may run on.

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

const (
	limitV2     = "cgroup2 cpu.max"
	limitV1     = "cgroup1 cpu.cfs_quota_us"
	limitCpuset = "cpuset"
	limitHost   = "host cores"
)

// cpuLimit is how many CPUs this process may use, and which rule said so.
type cpuLimit struct {
	cpus   float64
	source string
}

// readCPULimit reads the limit under root (/sys/fs/cgroup) for the process
// whose /proc/self/cgroup text is self; hostCores when nothing limits it.
func readCPULimit(root, self string, hostCores int) cpuLimit {
	groups := ownCgroups(self)
	quota, source := smallest(dirsUp(root, groups[""]), func(d string) (float64, bool) {
		return parseCPUMax(readFile(filepath.Join(d, "cpu.max")))
	}), limitV2
	if quota <= 0 {
		quota, source = quotaV1(root, groups["cpu"]), limitV1
	}
	cores := cpusetCores(root, groups)
	switch {
	case quota > 0 && (cores == 0 || quota <= float64(cores)):
		return cpuLimit{quota, source}
	case cores > 0:
		return cpuLimit{float64(cores), limitCpuset}
	}
	return cpuLimit{float64(hostCores), limitHost}
}

// processCPULimit is readCPULimit for this process on this machine.
func processCPULimit() cpuLimit {
	return readCPULimit("/sys/fs/cgroup", readFile("/proc/self/cgroup"), runtime.NumCPU())
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// ownCgroups maps each controller of /proc/self/cgroup to its path; cgroup
// v2's single line is under "".
func ownCgroups(self string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(self, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out
}

// dirsUp lists mount/path and each parent that exists, then mount itself
// (inside a container's namespace the path need not exist under the mount).
func dirsUp(mount, path string) []string {
	var out []string
	rel := strings.Trim(path, "/")
	for rel != "" && rel != "." {
		if st, err := os.Stat(filepath.Join(mount, rel)); err == nil && st.IsDir() {
			out = append(out, filepath.Join(mount, rel))
		}
		rel = filepath.Dir(rel)
	}
	return append(out, mount)
}

// smallest is the smallest positive value read from dirs, 0 when none.
func smallest(dirs []string, read func(string) (float64, bool)) float64 {
	best := 0.0
	for _, d := range dirs {
		if v, ok := read(d); ok && (best == 0 || v < best) {
			best = v
		}
	}
	return best
}

// parseCPUMax reads cgroup v2 cpu.max: "15000 100000" is 0.15 CPUs; "max" is none.
func parseCPUMax(text string) (float64, bool) {
	f := strings.Fields(text)
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	return ratio(f[0], f[1])
}

func ratio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseInt(strings.TrimSpace(quota), 10, 64)
	p, err2 := strconv.ParseInt(strings.TrimSpace(period), 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return float64(q) / float64(p), true
}

func quotaV1(root, path string) float64 {
	for _, name := range []string{"cpu,cpuacct", "cpu", "cpuacct,cpu"} {
		mount := filepath.Join(root, name)
		if _, err := os.Stat(filepath.Join(mount, "cpu.cfs_quota_us")); err != nil {
			continue
		}
		return smallest(dirsUp(mount, path), func(d string) (float64, bool) {
			return ratio(readFile(filepath.Join(d, "cpu.cfs_quota_us")), readFile(filepath.Join(d, "cpu.cfs_period_us")))
		})
	}
	return 0
}

// parseCpuset counts the cores of a list like "0-3,6"; 0 when empty or malformed.
func parseCpuset(text string) int {
	cores := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(text), ",") {
		if part == "" {
			continue
		}
		lo, hi, found := strings.Cut(part, "-")
		if !found {
			hi = lo
		}
		first, err1 := strconv.Atoi(lo)
		last, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil {
			return 0
		}
		for c := first; c <= last; c++ {
			cores[c] = true
		}
	}
	return len(cores)
}

func cpusetCores(root string, groups map[string]string) int {
	candidates := []string{filepath.Join(dirsUp(root, groups[""])[0], "cpuset.cpus.effective")}
	if st, err := os.Stat(filepath.Join(root, "cpuset")); err == nil && st.IsDir() {
		d := dirsUp(filepath.Join(root, "cpuset"), groups["cpuset"])[0]
		candidates = append(candidates, filepath.Join(d, "cpuset.effective_cpus"), filepath.Join(d, "cpuset.cpus"))
	}
	for _, c := range candidates {
		if n := parseCpuset(readFile(c)); n > 0 {
			return n
		}
	}
	return 0
}
