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
	maxSeed         = 1_000_000
	maxShards       = 1 << 16
	shutdownTimeout = 10 * time.Second
)

// config is the effective configuration, read once at startup.
type config struct {
	Port     string
	Store    string
	Shards   int
	Seed     int
	Delay    time.Duration
	LockWork time.Duration
}

// loadConfig reads the knobs through getenv (os.Getenv outside tests). An
// unset or empty variable means its default. The error names the variable
// and the value, so a typo in a compose file is a one-line fix.
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		Port:  cmp.Or(getenv("PORT"), "8080"),
		Store: cmp.Or(getenv("ALBUMS_STORE"), "rwmutex"),
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
	if cfg.Seed, err = envInt(getenv, "ALBUMS_SEED", 20, 0, maxSeed); err != nil {
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

func envInt(getenv func(string) string, name string, def, lo, hi int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("invalid %s %q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
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
	healthcheck := flag.Bool("healthcheck", false, "GET http://127.0.0.1:$PORT/healthz and exit 0 if it answers 200, else 1 (for FROM scratch images, which have no curl)")
	flag.Parse()
	if *healthcheck {
		if err := checkHealth(cmp.Or(os.Getenv("PORT"), "8080")); err != nil {
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
	ln, err := net.Listen("tcp", ":"+cfg.Port)
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
	srv := &http.Server{
		Handler: s,
		// Bounds how long a slow client can hold a connection before sending
		// its headers. There is no WriteTimeout: ALBUMS_DELAY may be long.
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	log.New(logw, "", log.LstdFlags).Printf(
		"albums: listening on %s store=%s shards=%d seed=%d delay=%s lock_work=%s (%d iterations) cpus=%d",
		ln.Addr(), cfg.Store, cfg.Shards, cfg.Seed, cfg.Delay, cfg.LockWork,
		s.lockIters, runtime.GOMAXPROCS(0))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
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

// checkHealth is the container health check. It talks to 127.0.0.1 directly,
// bypassing any proxy settings in the environment.
func checkHealth(port string) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{Proxy: nil},
	}
	resp, err := client.Get("http://127.0.0.1:" + port + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}
