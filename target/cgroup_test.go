package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadCPULimitFixtures reads every fixture tree under testdata/cgroup; the
// Python reader (tests/test_cgroup.py) checks the same trees against the same
// expect.json, so the target and the load generators agree on every layout.
func TestReadCPULimitFixtures(t *testing.T) {
	dirs, err := os.ReadDir("testdata/cgroup")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, d := range dirs {
		base := filepath.Join("testdata/cgroup", d.Name())
		var want struct {
			CPUs   float64 `json:"cpus"`
			Source string  `json:"source"`
		}
		if err := json.Unmarshal([]byte(readFile(filepath.Join(base, "expect.json"))), &want); err != nil {
			t.Fatalf("%s: expect.json: %v", d.Name(), err)
		}
		got := readCPULimit(filepath.Join(base, "fs"), readFile(filepath.Join(base, "proc-self-cgroup")), 8)
		if math.Abs(got.cpus-want.CPUs) > 1e-9 || got.source != want.Source {
			t.Errorf("%s: got %v CPUs from %q, want %v from %q", d.Name(), got.cpus, got.source, want.CPUs, want.Source)
		}
	}
}

func TestParseCPUMaxAndCpuset(t *testing.T) {
	for text, want := range map[string]float64{"15000 100000": 0.15, "max 100000": 0, "": 0, "x 1": 0} {
		if got, _ := parseCPUMax(text); math.Abs(got-want) > 1e-9 {
			t.Errorf("parseCPUMax(%q) = %v, want %v", text, got, want)
		}
	}
	for text, want := range map[string]int{"0-3,6": 5, "2": 1, "0-1,1-2": 3, "": 0, "a-b": 0} {
		if got := parseCpuset(text); got != want {
			t.Errorf("parseCpuset(%q) = %d, want %d", text, got, want)
		}
	}
}

// TestMetricsReportTheCPULimit: /metrics names this process's limit and its source.
func TestMetricsReportTheCPULimit(t *testing.T) {
	lim := processCPULimit()
	if lim.cpus <= 0 || lim.source == "" {
		t.Fatalf("processCPULimit() = %+v", lim)
	}
	var b strings.Builder
	newMetrics(nil).writeTo(&b, gauges{strategy: "mutex", cpuLimit: lim})
	if !strings.Contains(b.String(), `albums_cpu_limit_cpus{source="`+lim.source+`"} `) {
		t.Errorf("no albums_cpu_limit_cpus sample in:\n%s", b.String())
	}
}
