package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// unmatched is the route label for requests no pattern matched (the mux's
// own 404 and 405 responses).
const unmatched = "unmatched"

// metrics counts responses by route pattern and status code.
//
// Every request passes through here, so it must not add a shared lock: that
// would be a hidden serial section in the very concurrency experiments this
// service exists for. All counters are allocated up front, one per (route,
// code) pair, and the route map is never written after newMetrics, so
// counting is one read-only map lookup plus one atomic add.
type metrics struct {
	routes map[string]*codeCounters
	order  []string // routes in exposition order
}

// codeCounters has one counter per valid HTTP status code (100..999, the
// range http.ResponseWriter.WriteHeader accepts).
type codeCounters [900]atomic.Int64

func newMetrics(patterns []string) *metrics {
	m := &metrics{routes: make(map[string]*codeCounters)}
	for _, p := range append(patterns, unmatched) {
		m.routes[p] = new(codeCounters)
		m.order = append(m.order, p)
	}
	return m
}

// observe counts one response. pattern is the ServeMux pattern that matched,
// or "" if none did. Anything that is not a registered pattern (the mux can
// report a raw path for some redirects) counts as unmatched, which keeps the
// label set bounded whatever clients send.
func (m *metrics) observe(pattern string, code int) {
	c, ok := m.routes[pattern]
	if !ok {
		c = m.routes[unmatched]
	}
	if code >= 100 && code <= 999 {
		c[code-100].Add(1)
	}
}

// instrument wraps the mux so every response is counted when its status is
// written. The mux sets r.Pattern on the request it was given before calling
// the route's handler, so by the time anything is written the pattern is
// known.
func (m *metrics) instrument(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, r: r, m: m}
		mux.ServeHTTP(sw, r)
		sw.observe(http.StatusOK) // a handler that wrote nothing sent an empty 200
	})
}

// statusWriter counts the response the first time a status is written,
// explicitly or by the implicit 200 of a first Write.
type statusWriter struct {
	http.ResponseWriter
	r       *http.Request
	m       *metrics
	counted bool
}

func (w *statusWriter) WriteHeader(code int) {
	w.observe(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.observe(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) observe(code int) {
	if w.counted {
		return
	}
	w.counted = true
	w.m.observe(w.r.Pattern, code)
}

// gauges are the values /metrics reports besides the request counters.
type gauges struct {
	strategy     string
	albums       int64
	bytes        int64
	delay        time.Duration
	lockWork     time.Duration
	cpus         int
	maxAlbums    int64
	maxBytes     int64
	maxConns     int
	connsOpen    int64
	connsLimited int64 // a counter, read here with the gauges
	cpuLimit     cpuLimit
}

// writeTo writes the Prometheus text exposition (format 0.0.4). Label values
// come from fixed sets (registered patterns, strategy names), so they need no
// escaping. Counters that are still zero are left out.
func (m *metrics) writeTo(w io.Writer, g gauges) {
	var b bytes.Buffer
	b.WriteString("# HELP albums_http_requests_total HTTP requests served, by route pattern and status code.\n")
	b.WriteString("# TYPE albums_http_requests_total counter\n")
	for _, route := range m.order {
		for i := range m.routes[route] {
			if n := m.routes[route][i].Load(); n > 0 {
				fmt.Fprintf(&b, "albums_http_requests_total{route=%q,code=\"%d\"} %d\n", route, i+100, n)
			}
		}
	}
	family(&b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", "", cpuSeconds())
	family(&b, "albums_store_info", "gauge", "Store strategy in use (ALBUMS_STORE).", `{strategy="`+g.strategy+`"}`, 1)
	family(&b, "albums_store_albums", "gauge", "Albums in the store.", "", float64(g.albums))
	family(&b, "albums_store_bytes", "gauge", "Bytes the stored albums count against ALBUMS_MAX_BYTES: each album's struct plus its title and artist.", "", float64(g.bytes))
	family(&b, "albums_connections_open", "gauge", "Client connections open now.", "", float64(g.connsOpen))
	family(&b, "albums_connections_limited_total", "counter", "Times all ALBUMS_MAX_CONNS connections were open, so the server stopped accepting until one closed.", "", float64(g.connsLimited))
	family(&b, "albums_config_delay_seconds", "gauge", "Fixed latency added to each album request (ALBUMS_DELAY).", "", g.delay.Seconds())
	family(&b, "albums_config_lock_work_seconds", "gauge", "CPU work done inside the store's critical section per operation (ALBUMS_LOCK_WORK).", "", g.lockWork.Seconds())
	family(&b, "albums_config_cpus", "gauge", "CPUs the Go scheduler uses (GOMAXPROCS).", "", float64(g.cpus))
	if g.cpuLimit.source != "" {
		family(&b, "albums_cpu_limit_cpus", "gauge", "CPUs this process may use: its cgroup's CPU quota or cpuset, else the machine's cores (source says which).", `{source="`+g.cpuLimit.source+`"}`, g.cpuLimit.cpus)
	}
	family(&b, "albums_config_max_albums", "gauge", "Albums the store accepts before answering 507 (ALBUMS_MAX_ALBUMS).", "", float64(g.maxAlbums))
	family(&b, "albums_config_max_bytes", "gauge", "Album bytes the store accepts before answering 507 (ALBUMS_MAX_BYTES).", "", float64(g.maxBytes))
	family(&b, "albums_config_max_connections", "gauge", "Client connections open at once before new ones wait (ALBUMS_MAX_CONNS).", "", float64(g.maxConns))
	w.Write(b.Bytes())
}

// family writes a single-sample metric family.
func family(b *bytes.Buffer, name, typ, help, labels string, v float64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s%s %s\n",
		name, help, name, typ, name, labels, strconv.FormatFloat(v, 'g', -1, 64))
}

// cpuSeconds is the user+system CPU time this process has used, the number
// to compare against the CPU the load generator burns.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// ownCPULimit is read once: a container's limit does not change while it runs.
var ownCPULimit = sync.OnceValue(processCPULimit)

// currentGauges is split out so the metrics handler stays small.
func (s *server) currentGauges() gauges {
	g := gauges{
		strategy:  s.store.Strategy(),
		albums:    s.store.Count(),
		bytes:     s.store.Bytes(),
		delay:     s.delay,
		lockWork:  s.lockWork,
		cpus:      runtime.GOMAXPROCS(0),
		maxAlbums: s.limits.maxAlbums,
		maxBytes:  s.limits.maxBytes,
		maxConns:  s.maxConns,
		cpuLimit:  ownCPULimit(),
	}
	if s.conns != nil {
		g.connsOpen, g.connsLimited = s.conns.open.Load(), s.conns.limited.Load()
	}
	return g
}
