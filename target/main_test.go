package main

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	got, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatalf("loadConfig(no env): %v", err)
	}
	want := config{Port: "8080", Store: "rwmutex", Shards: 16, Seed: 20}
	if got != want {
		t.Errorf("loadConfig(no env): got %+v, want %+v", got, want)
	}

	env := map[string]string{
		"PORT": "9090", "ALBUMS_STORE": "sharded", "ALBUMS_SHARDS": "32", "ALBUMS_SEED": "0",
		"ALBUMS_DELAY": "5ms", "ALBUMS_LOCK_WORK": "250us",
	}
	got, err = loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("loadConfig(%v): %v", env, err)
	}
	want = config{Port: "9090", Store: "sharded", Shards: 32, Seed: 0, Delay: 5 * time.Millisecond, LockWork: 250 * time.Microsecond}
	if got != want {
		t.Errorf("loadConfig(%v): got %+v, want %+v", env, got, want)
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

// TestRunGracefulShutdown starts the real server, checks it serves (through
// the -healthcheck code path), then cancels the context and expects run to
// return nil promptly.
func TestRunGracefulShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config{Port: "0", Store: "rwmutex", Shards: 16, Seed: 20}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, ln, io.Discard) }()

	if err := checkHealth(strconv.Itoa(port)); err != nil {
		t.Errorf("checkHealth(%d) on the running server: %v", port, err)
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
	if err := checkHealth(strconv.Itoa(port)); err == nil {
		t.Errorf("checkHealth(%d) after shutdown: got nil error, want one", port)
	}
}

func TestRunBadStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), config{Store: "btree"}, ln, io.Discard); err == nil {
		t.Errorf("run with store btree: got nil error, want one")
	}
}
