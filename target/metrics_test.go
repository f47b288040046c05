package main

import (
	"bufio"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// scrape GETs /metrics and parses the exposition into series -> value,
// keyed by the series as written (name plus labels).
func scrape(t *testing.T, s *server) (map[string]string, string) {
	t.Helper()
	rec := serve(s, "GET", "/metrics", "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: got status %d, want %d", rec.Code, http.StatusOK)
	}
	if got, want := rec.Header().Get("Content-Type"), "text/plain; version=0.0.4"; !strings.HasPrefix(got, want) {
		t.Errorf("GET /metrics: got Content-Type %q, want it to start with %q", got, want)
	}
	text := rec.Body.String()
	series := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("GET /metrics: malformed line %q", line)
		}
		series[line[:i]] = line[i+1:]
	}
	return series, text
}

func TestMetrics(t *testing.T) {
	s := newTestServer(t, config{Store: "sharded", Seed: 3})
	for _, req := range []struct{ method, target, ctype, body string }{
		{"GET", "/albums", "", ""},
		{"GET", "/albums?limit=2", "", ""},
		{"GET", "/albums?limit=0", "", ""},
		{"GET", "/albums/1", "", ""},
		{"GET", "/albums/99", "", ""},
		{"GET", "/albums/99", "", ""},
		{"GET", "/albums/abc", "", ""},
		{"POST", "/albums", jsonType, `{"title":"t","artist":"a","price":1}`},
		{"POST", "/albums", jsonType, `{"title":"t"}`},
		{"POST", "/albums", "text/plain", `{}`},
		{"GET", "/healthz", "", ""},
		{"GET", "/nope", "", ""},
		{"DELETE", "/albums/1", "", ""},
	} {
		serve(s, req.method, req.target, req.ctype, req.body)
	}

	got, text := scrape(t, s)
	want := map[string]string{
		`albums_http_requests_total{route="GET /albums",code="200"}`:      "2",
		`albums_http_requests_total{route="GET /albums",code="400"}`:      "1",
		`albums_http_requests_total{route="GET /albums/{id}",code="200"}`: "1",
		`albums_http_requests_total{route="GET /albums/{id}",code="400"}`: "1",
		`albums_http_requests_total{route="GET /albums/{id}",code="404"}`: "2",
		`albums_http_requests_total{route="POST /albums",code="201"}`:     "1",
		`albums_http_requests_total{route="POST /albums",code="400"}`:     "1",
		`albums_http_requests_total{route="POST /albums",code="415"}`:     "1",
		`albums_http_requests_total{route="GET /healthz",code="200"}`:     "1",
		`albums_http_requests_total{route="unmatched",code="404"}`:        "1",
		`albums_http_requests_total{route="unmatched",code="405"}`:        "1",
		`albums_store_info{strategy="sharded"}`:                           "1",
		`albums_store_albums`:                                             "4",
		`albums_store_bytes`:                                              strconv.FormatInt(seedBytes(3)+albumSize(Album{Title: "t", Artist: "a"}), 10),
		`albums_connections_open`:                                         "0", // no listener: served through the handler
		`albums_connections_limited_total`:                                "0",
		`albums_config_max_albums`:                                        "1e+06",
		`albums_config_max_bytes`:                                         "1.34217728e+08",
		`albums_config_max_connections`:                                   "4096",
		`albums_config_delay_seconds`:                                     "0",
		`albums_config_lock_work_seconds`:                                 "0",
		`albums_config_cpus`:                                              strconv.Itoa(runtime.GOMAXPROCS(0)),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("GET /metrics: got %s = %q, want %q", k, got[k], v)
		}
	}
	var requestSeries int
	for k := range got {
		if strings.HasPrefix(k, "albums_http_requests_total") {
			requestSeries++
		}
	}
	// The scrape counts itself only once written, so it is not in its own output.
	if requestSeries != 11 {
		t.Errorf("GET /metrics: got %d request series, want 11:\n%s", requestSeries, text)
	}
	if cpu, err := strconv.ParseFloat(got["process_cpu_seconds_total"], 64); err != nil || cpu < 0 {
		t.Errorf("GET /metrics: process_cpu_seconds_total = %q, want a non-negative float (err %v)", got["process_cpu_seconds_total"], err)
	}
	for _, name := range []string{
		"albums_http_requests_total counter", "process_cpu_seconds_total counter",
		"albums_store_info gauge", "albums_store_albums gauge", "albums_config_delay_seconds gauge",
		"albums_config_lock_work_seconds gauge", "albums_config_cpus gauge",
		"albums_store_bytes gauge", "albums_connections_open gauge", "albums_connections_limited_total counter",
		"albums_config_max_albums gauge", "albums_config_max_bytes gauge", "albums_config_max_connections gauge",
	} {
		if !strings.Contains(text, "# TYPE "+name+"\n") {
			t.Errorf("GET /metrics: missing # TYPE %s", name)
		}
	}

	got, _ = scrape(t, s)
	if k := `albums_http_requests_total{route="GET /metrics",code="200"}`; got[k] != "1" {
		t.Errorf("second GET /metrics: got %s = %q, want %q", k, got[k], "1")
	}
}

func TestMetricsConfigGauges(t *testing.T) {
	s := newTestServer(t, config{Store: "mutex", Delay: 1500000, LockWork: 2000, MaxAlbums: 5000, MaxBytes: 64 << 20, MaxConns: 10})
	got, _ := scrape(t, s)
	for k, v := range map[string]string{
		`albums_store_info{strategy="mutex"}`: "1",
		`albums_config_delay_seconds`:         "0.0015",
		`albums_config_lock_work_seconds`:     "2e-06",
		`albums_config_max_albums`:            "5000",
		`albums_config_max_bytes`:             "6.7108864e+07",
		`albums_config_max_connections`:       "10",
	} {
		if got[k] != v {
			t.Errorf("GET /metrics: got %s = %q, want %q", k, got[k], v)
		}
	}
}

// TestMetricsConcurrent checks counts stay exact under concurrent requests.
func TestMetricsConcurrent(t *testing.T) {
	s := newTestServer(t, config{Seed: 1})
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				serve(s, "GET", "/albums/1", "", "")
				serve(s, "GET", "/healthz", "", "")
			}
		})
	}
	wg.Wait()
	got, _ := scrape(t, s)
	for _, k := range []string{
		`albums_http_requests_total{route="GET /albums/{id}",code="200"}`,
		`albums_http_requests_total{route="GET /healthz",code="200"}`,
	} {
		if want := strconv.Itoa(workers * each); got[k] != want {
			t.Errorf("GET /metrics: got %s = %q, want %q", k, got[k], want)
		}
	}
}

func TestObserveUnknownPattern(t *testing.T) {
	m := newMetrics([]string{"GET /x"})
	m.observe("/some/raw/path", 307) // the mux reports raw paths for some redirects
	m.observe("", 404)
	if got := m.routes[unmatched][307-100].Load(); got != 1 {
		t.Errorf("unmatched 307: got %d, want 1", got)
	}
	if got := m.routes[unmatched][404-100].Load(); got != 1 {
		t.Errorf("unmatched 404: got %d, want 1", got)
	}
}
