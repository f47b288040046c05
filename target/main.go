// Command albums is the demo REST service Swarmbench load-tests: a small
// album catalogue whose shared-state strategy, added latency and serial
// section are set by environment variables, so each experiment changes one
// known thing.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	maxSeed      = 1_000_000
	maxShards    = 1 << 16
	maxAlbumsCap = 1 << 40 // ALBUMS_MAX_ALBUMS upper bound: effectively no cap
	maxBytesCap  = 1 << 50 // ALBUMS_MAX_BYTES upper bound (1024TiB): effectively no cap
	maxConnsCap  = 1 << 20

	// Defaults of the caps: see README.md ("Bounds") for why these values.
	defaultMaxAlbums = 1_000_000
	defaultMaxBytes  = 128 << 20
	defaultMaxConns  = 4096

	maxHeaderBytes  = 16 << 10 // request line and headers; net/http answers 431 beyond
	shutdownTimeout = 10 * time.Second
)

// config is the effective configuration, read once at startup.
type config struct {
	Addr      string
	Port      string
	Store     string
	Shards    int
	Seed      int
	Delay     time.Duration
	LockWork  time.Duration
	MaxAlbums int64
	MaxBytes  int64
	MaxConns  int
	Timeouts  timeouts // not read from the environment; tests shorten them
}

// timeouts bound how long one connection can hold on to the server. The
// http.Server's own timeouts are derived from them in run, adding
// ALBUMS_DELAY wherever a request waits it out, so a long delay never turns
// into a timeout.
type timeouts struct {
	Header time.Duration // to receive a request's line and headers
	Body   time.Duration // to receive its body, on top of Header and ALBUMS_DELAY
	Write  time.Duration // from the end of the headers to the end of the response, on top of ALBUMS_DELAY
	Idle   time.Duration // between requests on a keep-alive connection
}

var defaultTimeouts = timeouts{
	Header: 5 * time.Second,
	Body:   10 * time.Second,
	// Generous: with ALBUMS_LOCK_WORK, requests queue for the lock, e.g.
	// 4096 users x 5ms on the mutex store is 20 s of queue.
	Write: 60 * time.Second,
	Idle:  2 * time.Minute,
}

// loadConfig reads the knobs through getenv (os.Getenv outside tests). An
// unset or empty variable means its default. The error names the variable
// and the value, so a typo in a compose file is a one-line fix.
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		Addr:     cmp.Or(getenv("ADDR"), "127.0.0.1"),
		Port:     cmp.Or(getenv("PORT"), "8080"),
		Store:    cmp.Or(getenv("ALBUMS_STORE"), "rwmutex"),
		Timeouts: defaultTimeouts,
	}
	if _, err := netip.ParseAddr(cfg.Addr); err != nil {
		return config{}, fmt.Errorf("invalid ADDR %q: want an IP address to listen on, such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)", cfg.Addr)
	}
	if p, err := strconv.Atoi(cfg.Port); err != nil || p < 1 || p > 65535 {
		return config{}, fmt.Errorf("invalid PORT %q: want a port number from 1 to 65535", cfg.Port)
	}
	if !slices.Contains(strategies, cfg.Store) {
		return config{}, fmt.Errorf("invalid ALBUMS_STORE %q: want one of %s", cfg.Store, strings.Join(strategies, ", "))
	}
	var err error
	if cfg.Shards, err = envInt(getenv, "ALBUMS_SHARDS", 16, 1, maxShards); err != nil {
		return config{}, err
	}
	if cfg.MaxAlbums, err = envInt[int64](getenv, "ALBUMS_MAX_ALBUMS", defaultMaxAlbums, 1, maxAlbumsCap); err != nil {
		return config{}, err
	}
	if cfg.Seed, err = envInt(getenv, "ALBUMS_SEED", 20, 0, maxSeed); err != nil {
		return config{}, err
	}
	if int64(cfg.Seed) > cfg.MaxAlbums {
		return config{}, fmt.Errorf("invalid ALBUMS_SEED %q: want at most ALBUMS_MAX_ALBUMS (%d)", strconv.Itoa(cfg.Seed), cfg.MaxAlbums)
	}
	if cfg.MaxBytes, err = envBytes(getenv, "ALBUMS_MAX_BYTES", defaultMaxBytes, maxBytesCap); err != nil {
		return config{}, err
	}
	if cfg.MaxConns, err = envInt(getenv, "ALBUMS_MAX_CONNS", defaultMaxConns, 1, maxConnsCap); err != nil {
		return config{}, err
	}
	if cfg.Delay, err = envDuration(getenv, "ALBUMS_DELAY"); err != nil {
		return config{}, err
	}
	if cfg.LockWork, err = envDuration(getenv, "ALBUMS_LOCK_WORK"); err != nil {
		return config{}, err
	}
	return cfg, nil
}

func envInt[T int | int64](getenv func(string) string, name string, def, lo, hi T) (T, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < int64(lo) || n > int64(hi) {
		return 0, fmt.Errorf("invalid %s %q: want an integer from %d to %d", name, v, lo, hi)
	}
	return T(n), nil
}

// byteUnits are the suffixes envBytes accepts, in powers of 1024.
var byteUnits = []string{"KiB", "MiB", "GiB", "TiB"}

// envBytes reads a byte count from 1 to hi: a whole number, optionally with
// a binary suffix, such as 268435456 or 256MiB.
func envBytes(getenv func(string) string, name string, def, hi int64) (int64, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	digits, unit := v, int64(1)
	for i, suffix := range byteUnits {
		if d, ok := strings.CutSuffix(v, suffix); ok {
			digits, unit = d, 1<<(10*(i+1))
			break
		}
	}
	n, err := parseDigits(digits)
	if err != nil || n < 1 || n > hi/unit {
		return 0, fmt.Errorf("invalid %s %q: want a whole number of bytes from 1 to %s, optionally with a suffix %s, such as 256MiB",
			name, v, formatBytes(hi), strings.Join(byteUnits, ", "))
	}
	return n * unit, nil
}

// formatBytes writes n with the largest suffix that divides it: 1024TiB.
func formatBytes(n int64) string {
	for i := len(byteUnits) - 1; i >= 0; i-- {
		if unit := int64(1) << (10 * (i + 1)); n%unit == 0 {
			return strconv.FormatInt(n/unit, 10) + byteUnits[i]
		}
	}
	return strconv.FormatInt(n, 10)
}

// envDuration reads a non-negative Go duration such as "5ms"; default 0.
func envDuration(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid %s %q: want a non-negative Go duration such as 0, 500us or 5ms", name, v)
	}
	return d, nil
}

func main() {
	healthcheck := flag.Bool("healthcheck", false, "GET http://$ADDR:$PORT/healthz (127.0.0.1 if ADDR is unset or 0.0.0.0) and exit 0 if it answers 200, else 1 (for FROM scratch images, which have no curl)")
	flag.Parse()
	if *healthcheck {
		if err := checkHealth(os.Getenv("ADDR"), cmp.Or(os.Getenv("PORT"), "8080")); err != nil {
			fmt.Fprintln(os.Stderr, "albums: healthcheck:", err)
			os.Exit(1)
		}
		return
	}

	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "albums:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Addr, cfg.Port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "albums:", err)
		os.Exit(1)
	}
	if err := run(ctx, cfg, ln, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "albums:", err)
		os.Exit(1)
	}
}

// run serves on ln until ctx is cancelled, then shuts down gracefully:
// in-flight requests get up to shutdownTimeout to finish. It returns nil
// after a clean shutdown.
func run(ctx context.Context, cfg config, ln net.Listener, logw io.Writer) error {
	s, err := newServer(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	limited := newLimitListener(ln, cfg.MaxConns)
	s.conns = limited
	t := cfg.Timeouts
	srv := &http.Server{
		Handler: s,
		// A slow client holds a goroutine and its buffers, so every phase of
		// a request is bounded. ALBUMS_DELAY is added where a request waits
		// it out: the POST handler reads its body after the delay, and every
		// album response is written after it.
		ReadHeaderTimeout: t.Header,
		ReadTimeout:       t.Header + cfg.Delay + t.Body,
		WriteTimeout:      cfg.Delay + t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	log.New(logw, "", log.LstdFlags).Printf(
		"albums: listening on %s store=%s shards=%d seed=%d delay=%s lock_work=%s (%d iterations) max_albums=%d max_bytes=%d max_conns=%d cpus=%d",
		ln.Addr(), cfg.Store, cfg.Shards, cfg.Seed, cfg.Delay, cfg.LockWork, s.lockIters,
		cfg.MaxAlbums, cfg.MaxBytes, cfg.MaxConns, runtime.GOMAXPROCS(0))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(limited) }()
	select {
	case err := <-serveErr:
		return err // Serve failed on its own; it never returns nil
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkHealth is the container health check. It talks to addr (the listen
// address; empty or unspecified means loopback) directly, bypassing any proxy
// settings in the environment.
func checkHealth(addr, port string) error {
	host := "127.0.0.1"
	if ip, err := netip.ParseAddr(addr); err == nil && !ip.IsUnspecified() {
		host = ip.String()
	} else if err == nil && ip.Is6() {
		host = "::1"
	}
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{Proxy: nil},
	}
	resp, err := client.Get("http://" + net.JoinHostPort(host, port) + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}
