package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// noEnv is an environment with nothing set.
func noEnv(string) string { return "" }

func TestLoadConfig(t *testing.T) {
	got, err := loadConfig(noEnv)
	if err != nil {
		t.Fatalf("loadConfig(no env): %v", err)
	}
	want := config{
		Addr: "127.0.0.1", Port: "8080", Store: "rwmutex", Shards: 16, Seed: 20,
		MaxAlbums: 1_000_000, MaxBytes: 128 << 20, MaxConns: 4096,
		Timeouts: timeouts{Header: 5 * time.Second, Body: 10 * time.Second, Write: time.Minute, Idle: 2 * time.Minute},
	}
	if got != want {
		t.Errorf("loadConfig(no env): got %+v, want %+v", got, want)
	}

	env := map[string]string{
		"ADDR": "0.0.0.0", "PORT": "9090", "ALBUMS_STORE": "sharded", "ALBUMS_SHARDS": "32", "ALBUMS_SEED": "0",
		"ALBUMS_DELAY": "5ms", "ALBUMS_LOCK_WORK": "250us",
		"ALBUMS_MAX_ALBUMS": "5000", "ALBUMS_MAX_BYTES": "64MiB", "ALBUMS_MAX_CONNS": "10",
	}
	got, err = loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("loadConfig(%v): %v", env, err)
	}
	want = config{
		Addr: "0.0.0.0", Port: "9090", Store: "sharded", Shards: 32, Seed: 0, Delay: 5 * time.Millisecond, LockWork: 250 * time.Microsecond,
		MaxAlbums: 5000, MaxBytes: 64 << 20, MaxConns: 10, Timeouts: defaultTimeouts,
	}
	if got != want {
		t.Errorf("loadConfig(%v): got %+v, want %+v", env, got, want)
	}
}

func TestEnvBytes(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int64
	}{
		{"1", 1}, {"268435456", 256 << 20}, {"256MiB", 256 << 20}, {"1KiB", 1024}, {"3GiB", 3 << 30},
		{"1TiB", 1 << 40}, {"1024TiB", 1 << 50}, {"1125899906842624", 1 << 50},
	} {
		got, err := envBytes(func(string) string { return tt.value }, "X", 7, 1<<50)
		if err != nil || got != tt.want {
			t.Errorf("envBytes(%q): got %d, %v, want %d", tt.value, got, err, tt.want)
		}
	}
	for n, want := range map[int64]string{1 << 50: "1024TiB", 128 << 20: "128MiB", 3072: "3KiB", 1536: "1536", 1: "1"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d): got %q, want %q", n, got, want)
		}
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct{ name, value string }{
		{"ALBUMS_STORE", "btree"},
		{"ALBUMS_STORE", "Mutex"},
		{"ALBUMS_DELAY", "5"},
		{"ALBUMS_DELAY", "-1ms"},
		{"ALBUMS_DELAY", "soon"},
		{"ALBUMS_LOCK_WORK", "1x"},
		{"ALBUMS_LOCK_WORK", "-5us"},
		{"ALBUMS_SEED", "-1"},
		{"ALBUMS_SEED", "many"},
		{"ALBUMS_SEED", "1000001"},
		{"ALBUMS_SHARDS", "0"},
		{"ALBUMS_SHARDS", "4.5"},
		{"PORT", "http"},
		{"PORT", "0"},
		{"PORT", "65536"},
		{"ADDR", "localhost"},
		{"ADDR", "127.0.0.1:8080"},
		{"ADDR", "1.2.3"},
		{"ALBUMS_MAX_ALBUMS", "0"},
		{"ALBUMS_MAX_ALBUMS", "-1"},
		{"ALBUMS_MAX_ALBUMS", "1e6"},
		{"ALBUMS_MAX_ALBUMS", "1099511627777"},
		{"ALBUMS_MAX_ALBUMS", "19"}, // below the default ALBUMS_SEED of 20
		{"ALBUMS_MAX_BYTES", "0"},
		{"ALBUMS_MAX_BYTES", "-5"},
		{"ALBUMS_MAX_BYTES", "256MB"},
		{"ALBUMS_MAX_BYTES", "256 MiB"},
		{"ALBUMS_MAX_BYTES", "MiB"},
		{"ALBUMS_MAX_BYTES", "0MiB"},
		{"ALBUMS_MAX_BYTES", "1025TiB"},
		{"ALBUMS_MAX_BYTES", "99999999999999999999"},
		{"ALBUMS_MAX_CONNS", "0"},
		{"ALBUMS_MAX_CONNS", "many"},
		{"ALBUMS_MAX_CONNS", "1048577"},
	}
	for _, tt := range tests {
		_, err := loadConfig(func(k string) string {
			if k == tt.name {
				return tt.value
			}
			return ""
		})
		if err == nil {
			t.Errorf("loadConfig(%s=%q): got nil error, want one", tt.name, tt.value)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.name) || !strings.Contains(msg, tt.value) || strings.Contains(msg, "\n") {
			t.Errorf("loadConfig(%s=%q): got error %q, want one line naming the variable and value", tt.name, tt.value, msg)
		}
	}
}

func TestLoadConfigSeedOverMaxAlbums(t *testing.T) {
	env := map[string]string{"ALBUMS_SEED": "101", "ALBUMS_MAX_ALBUMS": "100"}
	_, err := loadConfig(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), `ALBUMS_SEED "101"`) || !strings.Contains(err.Error(), "ALBUMS_MAX_ALBUMS (100)") {
		t.Errorf("loadConfig(%v): got error %v, want one naming ALBUMS_SEED and ALBUMS_MAX_ALBUMS", env, err)
	}
}

// testConfig is the default configuration, for tests to adjust.
func testConfig(t *testing.T) config {
	t.Helper()
	cfg, err := loadConfig(noEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startRun serves cfg with the real run on 127.0.0.1:0 and returns the
// address. The server is shut down, and must return nil, at the end of the
// test; the test closes its own connections first.
func startRun(t *testing.T, cfg config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, ln, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run after cancel: got %v, want nil", err)
		}
	})
	return ln.Addr().String()
}

// dial opens a raw connection; the test closes it.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRunGracefulShutdown starts the real server, checks it serves (through
// the -healthcheck code path), then cancels the context and expects run to
// return nil promptly.
func TestRunGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testConfig(t)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, ln, io.Discard) }()

	for _, addr := range []string{"", "127.0.0.1", "0.0.0.0"} {
		if err := checkHealth(addr, port); err != nil {
			t.Errorf("checkHealth(%q, %s) on the running server: %v", addr, port, err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: got %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return within 5s of cancel")
	}
	if err := checkHealth("", port); err == nil {
		t.Errorf("checkHealth(%s) after shutdown: got nil error, want one", port)
	}
}

func TestRunBadStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Store = "btree"
	if err := run(context.Background(), cfg, ln, io.Discard); err == nil {
		t.Errorf("run with store btree: got nil error, want one")
	}
}

// TestRunTimeouts checks, over real TCP, that the server closes connections
// whose client stalls (the slowloris cases), within the configured timeouts
// (shortened here) and not before.
func TestRunTimeouts(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	// Idle is longer than Header+Body: net/http falls back to ReadTimeout
	// for idle connections, and this checks it does not need to.
	cfg.Timeouts = timeouts{Header: 200 * time.Millisecond, Body: 300 * time.Millisecond, Write: 5 * time.Second, Idle: time.Second}
	addr := startRun(t, cfg)
	const post = "POST /albums HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"
	tests := []struct {
		name     string
		send     string
		minOpen  time.Duration // the server must not close it sooner
		wantResp string        // start of what the server sends before closing
	}{
		{"headers never finish", "GET /albums HTTP/1.1\r\nHost: t\r\n", cfg.Timeouts.Header, ""},
		{"body never finishes", post + `{"title":`, cfg.Timeouts.Header + cfg.Timeouts.Body, "HTTP/1.1 408 "},
		{"idle keep-alive", "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", cfg.Timeouts.Idle, "HTTP/1.1 200 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now() // before dial: the server's clock starts when it accepts
			c := dial(t, addr)
			if _, err := io.WriteString(c, tt.send); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c) // until the server closes the connection
			open := time.Since(start)
			if err != nil {
				t.Fatalf("reading until the server closes: %v after %v (got %q); want the connection closed", err, open, got)
			}
			if !strings.HasPrefix(string(got), tt.wantResp) || tt.wantResp == "" && len(got) > 0 {
				t.Errorf("got %q before the close, want it to start with %q", got, tt.wantResp)
			}
			if open < tt.minOpen {
				t.Errorf("server closed the connection after %v, want at least %v", open, tt.minOpen)
			}
		})
	}
}

// TestRunTimeoutsAllowDelay checks the read and write timeouts are relative
// to ALBUMS_DELAY: a delay longer than Header+Body and Write must not turn a
// POST whose body arrives during the delay into a 408 or a dropped response.
func TestRunTimeoutsAllowDelay(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Delay = 1500 * time.Millisecond
	cfg.Timeouts = timeouts{Header: 300 * time.Millisecond, Body: 300 * time.Millisecond, Write: time.Second, Idle: 5 * time.Second}
	c := dial(t, startRun(t, cfg))
	body := `{"title":"t","artist":"a","price":1}`
	fmt.Fprintf(c, "POST /albums HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	time.Sleep(100 * time.Millisecond) // the body arrives apart, while the handler waits out the delay
	io.WriteString(c, body)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("POST /albums with ALBUMS_DELAY=%v: %v; want a response", cfg.Delay, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("POST /albums with ALBUMS_DELAY=%v: got status %d, want %d", cfg.Delay, resp.StatusCode, http.StatusCreated)
	}
}

// TestRunConnCap checks ALBUMS_MAX_CONNS over real TCP: with the cap's
// connections open, the next one is held (connected, but not served) until
// one closes, and /metrics counts it.
func TestRunConnCap(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxConns = 2
	addr := startRun(t, cfg)
	get := func(c net.Conn, path string, wait time.Duration) (*http.Response, []byte, error) {
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path); err != nil {
			return nil, nil, err
		}
		c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	c1, c2 := dial(t, addr), dial(t, addr)
	for i, c := range []net.Conn{c1, c2} {
		if resp, _, err := get(c, "/healthz", 5*time.Second); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /healthz on connection %d of %d: got %v, %v; want 200", i+1, cfg.MaxConns, resp, err)
		}
	}

	c3 := dial(t, addr) // the kernel completes the handshake; the server does not accept it yet
	r3 := bufio.NewReader(c3)
	io.WriteString(c3, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
	c3.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if resp, err := http.ReadResponse(r3, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("GET /healthz on connection %d with ALBUMS_MAX_CONNS=%d: got %v, %v; want no response yet", cfg.MaxConns+1, cfg.MaxConns, resp, err)
	}

	_, text, err := get(c2, "/metrics", 5*time.Second)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	for _, want := range []string{"\nalbums_connections_open 2\n", "\nalbums_config_max_connections 2\n"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("GET /metrics with the cap reached: want a line %q in\n%s", strings.TrimSpace(want), text)
		}
	}
	if strings.Contains(string(text), "\nalbums_connections_limited_total 0\n") {
		t.Errorf("GET /metrics with the cap reached: got albums_connections_limited_total 0, want at least 1")
	}

	c1.Close() // frees a slot: the held connection is accepted and served
	c3.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r3, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz on the held connection after one closed: got %v, %v; want 200", resp, err)
	}
	resp.Body.Close()
}
