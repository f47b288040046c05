package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

const jsonType = "application/json"

// newTestServer returns a server with a small seeded store. Zero fields get
// the defaults (4 shards for sharded).
func newTestServer(t *testing.T, cfg config) *server {
	t.Helper()
	cfg.Store = cmp.Or(cfg.Store, "rwmutex")
	cfg.Shards = cmp.Or(cfg.Shards, 4)
	cfg.MaxAlbums = cmp.Or(cfg.MaxAlbums, defaultMaxAlbums)
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, defaultMaxBytes)
	cfg.MaxConns = cmp.Or(cfg.MaxConns, defaultMaxConns)
	s, err := newServer(cfg)
	if err != nil {
		t.Fatalf("newServer(%+v): %v", cfg, err)
	}
	return s
}

// serve sends one request through the full handler (metrics included).
func serve(h http.Handler, method, target, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeBody[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decoding response %q: %v", rec.Body.String(), err)
	}
	return v
}

func TestGetAlbum(t *testing.T) {
	s := newTestServer(t, config{Seed: 3})
	tests := []struct {
		target   string
		wantCode int
		wantErr  string // substring of the JSON error, if any
	}{
		{"/albums/1", http.StatusOK, ""},
		{"/albums/3", http.StatusOK, ""},
		{"/albums/4", http.StatusNotFound, "not found"},
		{"/albums/9223372036854775807", http.StatusNotFound, "not found"},
		{"/albums/abc", http.StatusBadRequest, "positive integer"},
		{"/albums/0", http.StatusBadRequest, "positive integer"},
		{"/albums/-1", http.StatusBadRequest, "positive integer"},
		{"/albums/+1", http.StatusBadRequest, "positive integer"},
		{"/albums/1x", http.StatusBadRequest, "positive integer"},
		{"/albums/%201", http.StatusBadRequest, "positive integer"},
		{"/albums/1.0", http.StatusBadRequest, "positive integer"},
		{"/albums/9223372036854775808", http.StatusBadRequest, "positive integer"},
	}
	for _, tt := range tests {
		rec := serve(s, "GET", tt.target, "", "")
		if rec.Code != tt.wantCode {
			t.Errorf("GET %s: got status %d, want %d (body %s)", tt.target, rec.Code, tt.wantCode, rec.Body)
			continue
		}
		if got := rec.Header().Get("Content-Type"); got != jsonType {
			t.Errorf("GET %s: got Content-Type %q, want %q", tt.target, got, jsonType)
		}
		if tt.wantErr != "" {
			if e := decodeBody[errorResponse](t, rec); !strings.Contains(e.Error, tt.wantErr) {
				t.Errorf("GET %s: got error %q, want it to mention %q", tt.target, e.Error, tt.wantErr)
			}
			continue
		}
		id, _ := strconv.ParseInt(strings.TrimPrefix(tt.target, "/albums/"), 10, 64)
		a := decodeBody[Album](t, rec)
		want := seedAlbums[id-1]
		want.ID = id
		if a != want {
			t.Errorf("GET %s: got %+v, want %+v", tt.target, a, want)
		}
	}
	checkUnchanged(t, s, 3)
}

// checkUnchanged asserts the store still holds want albums and still serves.
func checkUnchanged(t *testing.T, s *server, want int64) {
	t.Helper()
	if got := s.store.Count(); got != want {
		t.Errorf("store count: got %d, want %d", got, want)
	}
	if rec := serve(s, "GET", "/albums/1", "", ""); rec.Code != http.StatusOK {
		t.Errorf("GET /albums/1 afterwards: got status %d, want %d", rec.Code, http.StatusOK)
	}
}

func TestCreateAlbum(t *testing.T) {
	s := newTestServer(t, config{Seed: 3})
	rec := serve(s, "POST", "/albums", jsonType+"; charset=utf-8",
		`{"title":"Kind of Blue","artist":"Miles Davis","price":29.99}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /albums: got status %d, want %d (body %s)", rec.Code, http.StatusCreated, rec.Body)
	}
	want := Album{ID: 4, Title: "Kind of Blue", Artist: "Miles Davis", Price: 29.99}
	if got := decodeBody[Album](t, rec); got != want {
		t.Errorf("POST /albums: got %+v, want %+v", got, want)
	}
	if got := rec.Header().Get("Location"); got != "/albums/4" {
		t.Errorf("POST /albums: got Location %q, want %q", got, "/albums/4")
	}
	rec = serve(s, "GET", "/albums/4", "", "")
	if got := decodeBody[Album](t, rec); rec.Code != http.StatusOK || got != want {
		t.Errorf("GET /albums/4: got %d %+v, want %d %+v", rec.Code, got, http.StatusOK, want)
	}
	if got := s.store.Count(); got != 4 {
		t.Errorf("store count: got %d, want 4", got)
	}

	// The field caps are inclusive: 1024 bytes of UTF-8 each is fine.
	title, artist := strings.Repeat("é", maxFieldBytes/2), strings.Repeat("a", maxFieldBytes)
	rec = serve(s, "POST", "/albums", jsonType, fmt.Sprintf(`{"title":%q,"artist":%q,"price":1}`, title, artist))
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /albums with a %d-byte title and artist: got status %d, want %d (body %s)", maxFieldBytes, rec.Code, http.StatusCreated, rec.Body)
	}
	if got, want := s.store.Bytes(), seedBytes(3)+albumSize(want)+albumSize(Album{Title: title, Artist: artist}); got != want {
		t.Errorf("store bytes: got %d, want %d", got, want)
	}
}

// TestCreateAlbumBadInput checks that every kind of bad POST gets the right
// status and a JSON error naming the problem, and leaves the store alone.
func TestCreateAlbumBadInput(t *testing.T) {
	valid := `{"title":"t","artist":"a","price":1}`
	tests := []struct {
		name     string
		ctype    string
		body     string
		wantCode int
		wantErr  string
	}{
		{"invalid JSON", jsonType, `{"title":`, 400, "invalid JSON"},
		{"not JSON", jsonType, `title=t`, 400, "invalid JSON"},
		{"empty body", jsonType, ``, 400, "empty"},
		{"trailing data", jsonType, valid + `{}`, 400, "after the album"},
		{"trailing brace", jsonType, valid + `}`, 400, "after the album"},
		{"trailing junk", jsonType, valid + ` x`, 400, "after the album"},
		{"unknown field", jsonType, `{"title":"t","artist":"a","price":1,"year":1959}`, 400, `unknown field "year"`},
		{"client id", jsonType, `{"id":7,"title":"t","artist":"a","price":1}`, 400, "server assigns ids"},
		{"client null id", jsonType, `{"id":null,"title":"t","artist":"a","price":1}`, 400, "server assigns ids"},
		{"missing title", jsonType, `{"artist":"a","price":1}`, 400, "title"},
		{"missing artist", jsonType, `{"title":"t","price":1}`, 400, "artist"},
		{"missing price", jsonType, `{"title":"t","artist":"a"}`, 400, "price"},
		{"null body", jsonType, `null`, 400, "missing field: title"},
		{"array body", jsonType, `[]`, 400, "JSON object"},
		{"empty title", jsonType, `{"title":"","artist":"a","price":1}`, 400, "title must not be empty"},
		{"blank title", jsonType, `{"title":"  ","artist":"a","price":1}`, 400, "title must not be empty"},
		{"empty artist", jsonType, `{"title":"t","artist":"","price":1}`, 400, "artist must not be empty"},
		{"negative price", jsonType, `{"title":"t","artist":"a","price":-0.01}`, 400, "price must not be negative"},
		{"huge price", jsonType, `{"title":"t","artist":"a","price":1e400}`, 400, "price is out of range"},
		{"NaN price", jsonType, `{"title":"t","artist":"a","price":NaN}`, 400, "invalid JSON"},
		{"string price", jsonType, `{"title":"t","artist":"a","price":"1"}`, 400, "price must be a number"},
		{"number title", jsonType, `{"title":1,"artist":"a","price":1}`, 400, "title must be a string"},
		{"title over 1 KiB", jsonType, `{"title":"` + strings.Repeat("a", 1025) + `","artist":"a","price":1}`, 400, "title must be at most 1024 bytes"},
		{"title over 1 KiB in UTF-8", jsonType, `{"title":"` + strings.Repeat("é", 513) + `","artist":"a","price":1}`, 400, "title must be at most 1024 bytes"},
		{"title over 1 KiB once unescaped", jsonType, `{"title":"` + strings.Repeat(`\u00e9`, 513) + `","artist":"a","price":1}`, 400, "title must be at most 1024 bytes"},
		{"artist over 1 KiB", jsonType, `{"title":"t","artist":"` + strings.Repeat("a", 1025) + `","price":1}`, 400, "artist must be at most 1024 bytes"},
		{"body over 64 KiB", jsonType, `{"title":"` + strings.Repeat("a", 65<<10) + `","artist":"a","price":1}`, 413, "at most 65536 bytes"},
		{"whitespace over 64 KiB", jsonType, valid + strings.Repeat(" ", 65<<10), 413, "at most 65536 bytes"},
		{"text/plain", "text/plain", valid, 415, "application/json"},
		{"no Content-Type", "", valid, 415, "application/json"},
		{"bad Content-Type", "application/json; =", valid, 415, "application/json"},
	}
	s := newTestServer(t, config{Seed: 3})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(s, "POST", "/albums", tt.ctype, tt.body)
			if rec.Code != tt.wantCode {
				t.Errorf("POST /albums (%s): got status %d, want %d (body %s)", tt.name, rec.Code, tt.wantCode, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != jsonType {
				t.Errorf("POST /albums (%s): got Content-Type %q, want %q", tt.name, got, jsonType)
			}
			if e := decodeBody[errorResponse](t, rec); !strings.Contains(e.Error, tt.wantErr) {
				t.Errorf("POST /albums (%s): got error %q, want it to mention %q", tt.name, e.Error, tt.wantErr)
			}
			if loc := rec.Header().Get("Location"); loc != "" {
				t.Errorf("POST /albums (%s): got Location %q on a failed create", tt.name, loc)
			}
			checkUnchanged(t, s, 3)
		})
	}
}

func TestHealthz(t *testing.T) {
	s := newTestServer(t, config{})
	rec := serve(s, "GET", "/healthz", "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /healthz: got status %d, want %d", rec.Code, http.StatusOK)
	}
	if got, want := strings.TrimSpace(rec.Body.String()), `{"status":"ok"}`; got != want {
		t.Errorf("GET /healthz: got body %s, want %s", got, want)
	}
}

func TestUnmatchedRoutes(t *testing.T) {
	s := newTestServer(t, config{Seed: 3})
	tests := []struct {
		method, target string
		wantCode       int
	}{
		{"GET", "/nope", http.StatusNotFound},
		{"GET", "/albums/1/tracks", http.StatusNotFound},
		{"DELETE", "/albums/1", http.StatusMethodNotAllowed},
		{"PUT", "/albums", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		if rec := serve(s, tt.method, tt.target, "", ""); rec.Code != tt.wantCode {
			t.Errorf("%s %s: got status %d, want %d", tt.method, tt.target, rec.Code, tt.wantCode)
		}
	}
	checkUnchanged(t, s, 3)
}

func TestListAlbums(t *testing.T) {
	s := newTestServer(t, config{Seed: 45})
	tests := []struct {
		query                 string
		wantLimit             int
		wantOffset            int64
		wantFirst, wantLength int64 // ids wantFirst.. in order
	}{
		{"", 20, 0, 1, 20},
		{"?limit=5", 5, 0, 1, 5},
		{"?limit=5&offset=10", 5, 10, 11, 5},
		{"?offset=40", 20, 40, 41, 5},
		{"?limit=100", 100, 0, 1, 45},
		{"?limit=1&offset=44", 1, 44, 45, 1},
		{"?offset=45", 20, 45, 0, 0},
		{"?offset=1000", 20, 1000, 0, 0},
		{"?offset=9223372036854775807&limit=100", 100, math.MaxInt64, 0, 0},
		{"?limit=&offset=", 20, 0, 1, 20},
	}
	for _, tt := range tests {
		target := "/albums" + tt.query
		rec := serve(s, "GET", target, "", "")
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: got status %d, want %d (body %s)", target, rec.Code, http.StatusOK, rec.Body)
			continue
		}
		if got := rec.Header().Get("X-Total-Count"); got != "45" {
			t.Errorf("GET %s: got X-Total-Count %q, want %q", target, got, "45")
		}
		if !bytes.Contains(rec.Body.Bytes(), []byte(`"albums":[`)) {
			t.Errorf("GET %s: got body %s, want an albums array (never null)", target, rec.Body)
		}
		got := decodeBody[listResponse](t, rec)
		if got.Total != 45 || got.Limit != tt.wantLimit || got.Offset != tt.wantOffset {
			t.Errorf("GET %s: got total=%d limit=%d offset=%d, want total=45 limit=%d offset=%d",
				target, got.Total, got.Limit, got.Offset, tt.wantLimit, tt.wantOffset)
		}
		if int64(len(got.Albums)) != tt.wantLength {
			t.Errorf("GET %s: got %d albums, want %d", target, len(got.Albums), tt.wantLength)
			continue
		}
		for i, a := range got.Albums {
			if want := tt.wantFirst + int64(i); a.ID != want {
				t.Errorf("GET %s: album %d has id %d, want %d", target, i, a.ID, want)
				break
			}
		}
	}
}

func TestListAlbumsBadQuery(t *testing.T) {
	s := newTestServer(t, config{Seed: 3})
	for _, query := range []string{
		"limit=0", "limit=101", "limit=1000", "limit=abc", "limit=-1", "limit=+5", "limit=1.5",
		"limit=99999999999999999999", "offset=-1", "offset=abc", "offset=1e3",
	} {
		target := "/albums?" + query
		rec := serve(s, "GET", target, "", "")
		if rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: got status %d, want %d", target, rec.Code, http.StatusBadRequest)
			continue
		}
		param, _, _ := strings.Cut(query, "=")
		e := decodeBody[errorResponse](t, rec)
		if !strings.Contains(e.Error, param) {
			t.Errorf("GET %s: got error %q, want it to mention %q", target, e.Error, param)
		}
		if want := "from 1 to 100"; param == "limit" && !strings.Contains(e.Error, want) {
			t.Errorf("GET %s: got error %q, want it to name the range %q", target, e.Error, want)
		}
		checkUnchanged(t, s, 3)
	}
}

// TestListAlbumsSeesNewAlbums checks pagination reflects creates.
func TestListAlbumsSeesNewAlbums(t *testing.T) {
	s := newTestServer(t, config{Seed: 2})
	for i := range 3 {
		body := fmt.Sprintf(`{"title":"new %d","artist":"a","price":%d}`, i, i)
		if rec := serve(s, "POST", "/albums", jsonType, body); rec.Code != http.StatusCreated {
			t.Fatalf("POST /albums: got status %d, want %d", rec.Code, http.StatusCreated)
		}
	}
	got := decodeBody[listResponse](t, serve(s, "GET", "/albums?offset=2&limit=10", "", ""))
	if got.Total != 5 || len(got.Albums) != 3 || got.Albums[0].Title != "new 0" || got.Albums[2].ID != 5 {
		t.Errorf("GET /albums?offset=2&limit=10: got %+v, want the 3 new albums (ids 3..5) of 5", got)
	}
}

// TestDelay checks every album route waits out ALBUMS_DELAY. Only a lower
// bound is asserted: a shared, noisy machine can make a request slower, never
// faster. /healthz and /metrics must not wait; they are checked without a
// bound, for the same reason.
func TestDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	s := newTestServer(t, config{Seed: 1, Delay: delay})
	serveAtLeast(t, s, "ALBUMS_DELAY", delay, delay, []routeCase{
		{"GET", "/albums/1", "", http.StatusOK},
		{"GET", "/albums/99", "", http.StatusNotFound},
		{"GET", "/albums?limit=5", "", http.StatusOK},
		{"POST", "/albums", `{"title":"t","artist":"a","price":1}`, http.StatusCreated},
		{"POST", "/albums", `{"title":""}`, http.StatusBadRequest},
	})
}

// routeCase is one request of a table test and the status it must get.
type routeCase struct {
	method, target, body string
	wantCode             int
}

// serveAtLeast serves each case in order and checks its status and that it
// took at least min (knob=value names the setting in the message). Only a
// lower bound: a shared, noisy machine can make a request slower, never faster.
func serveAtLeast(t *testing.T, h http.Handler, knob string, value, min time.Duration, cases []routeCase) {
	t.Helper()
	for _, c := range cases {
		start := time.Now()
		rec := serve(h, c.method, c.target, jsonType, c.body)
		took := time.Since(start)
		if rec.Code != c.wantCode {
			t.Errorf("%s %s with %s=%v: got status %d, want %d", c.method, c.target, knob, value, rec.Code, c.wantCode)
		}
		if took < min {
			t.Errorf("%s %s with %s=%v: took %v, want at least %v", c.method, c.target, knob, value, took, min)
		}
	}
}

// TestDelayEndsWithClient checks an abandoned request stops waiting.
func TestDelayEndsWithClient(t *testing.T) {
	s := newTestServer(t, config{Seed: 1, Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/albums/1", nil)
	done := make(chan struct{})
	go func() {
		s.ServeHTTP(httptest.NewRecorder(), req)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("GET /albums/1 with a cancelled context and ALBUMS_DELAY=1h: still waiting after 10s")
	}
}

// TestCreateAlbumCaps checks each store cap refuses a create with 507 and a
// JSON error naming the variable, and leaves the store unchanged (count,
// bytes, and the next id).
func TestCreateAlbumCaps(t *testing.T) {
	const seeded = 3
	body := `{"title":"Kind of Blue","artist":"Miles Davis","price":29.99}`
	size := albumSize(Album{Title: "Kind of Blue", Artist: "Miles Davis"})
	tests := []struct {
		name                string
		maxAlbums, maxBytes int64 // 0: default
		wantCreated         int   // POSTs of body that succeed before the cap
		wantErr             string
	}{
		{"albums cap", seeded + 2, 0, 2, "ALBUMS_MAX_ALBUMS (5 albums)"},
		{"albums cap reached by the seed", seeded, 0, 0, "ALBUMS_MAX_ALBUMS (3 albums)"},
		{"bytes cap", 0, seedBytes(seeded) + 2*size, 2, "ALBUMS_MAX_BYTES"},
		{"bytes cap one byte short", 0, seedBytes(seeded) + 2*size - 1, 1, "ALBUMS_MAX_BYTES"},
	}
	for _, strategy := range strategies {
		for _, tt := range tests {
			t.Run(strategy+"/"+tt.name, func(t *testing.T) {
				s := newTestServer(t, config{Store: strategy, Seed: seeded, MaxAlbums: tt.maxAlbums, MaxBytes: tt.maxBytes})
				for i := range tt.wantCreated {
					if rec := serve(s, "POST", "/albums", jsonType, body); rec.Code != http.StatusCreated {
						t.Fatalf("POST /albums #%d under the cap: got status %d, want %d (body %s)", i+1, rec.Code, http.StatusCreated, rec.Body)
					}
				}
				wantCount, wantBytes := s.store.Count(), s.store.Bytes()
				for range 2 { // refused again: nothing changed the first time
					rec := serve(s, "POST", "/albums", jsonType, body)
					if rec.Code != http.StatusInsufficientStorage {
						t.Fatalf("POST /albums past the cap: got status %d, want %d (body %s)", rec.Code, http.StatusInsufficientStorage, rec.Body)
					}
					if e := decodeBody[errorResponse](t, rec); !strings.Contains(e.Error, tt.wantErr) {
						t.Errorf("POST /albums past the cap: got error %q, want it to mention %q", e.Error, tt.wantErr)
					}
					if loc := rec.Header().Get("Location"); loc != "" {
						t.Errorf("POST /albums past the cap: got Location %q on a refused create", loc)
					}
				}
				checkUnchanged(t, s, wantCount)
				if got := s.store.Bytes(); got != wantBytes {
					t.Errorf("store bytes after refused creates: got %d, want %d", got, wantBytes)
				}
				if got := coreOf(s.store).last.Load(); got != wantCount {
					t.Errorf("ids handed out after refused creates: got %d, want %d (a refused create must not use up an id)", got, wantCount)
				}
				if tt.maxBytes > 0 && s.store.Bytes() > tt.maxBytes {
					t.Errorf("store bytes: got %d, want at most ALBUMS_MAX_BYTES %d", s.store.Bytes(), tt.maxBytes)
				}
			})
		}
	}
}

// seedBytes is what seed(n) counts against ALBUMS_MAX_BYTES.
func seedBytes(n int) int64 {
	st, err := newStore("mutex", 1, limits{maxAlbums: int64(n) + 1, maxBytes: 1 << 62})
	if err != nil {
		panic(err)
	}
	if err := seed(st, n); err != nil {
		panic(err)
	}
	return st.Bytes()
}

// TestSeedOverCaps checks a seed that does not fit the caps is a startup
// error naming ALBUMS_SEED and the cap.
func TestSeedOverCaps(t *testing.T) {
	for _, tt := range []struct {
		cfg  config
		want string
	}{
		{config{Store: "mutex", Seed: 5, MaxAlbums: 4, MaxBytes: 1 << 20}, "ALBUMS_MAX_ALBUMS"},
		{config{Store: "mutex", Seed: 5, MaxAlbums: 10, MaxBytes: seedBytes(5) - 1}, "ALBUMS_MAX_BYTES"},
	} {
		_, err := newServer(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), "ALBUMS_SEED=5") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("newServer(seed 5, max %d albums, %d bytes): got error %v, want one naming ALBUMS_SEED=5 and %s",
				tt.cfg.MaxAlbums, tt.cfg.MaxBytes, err, tt.want)
		}
	}
	if _, err := newServer(config{Store: "mutex", Seed: 5, MaxAlbums: 5, MaxBytes: seedBytes(5)}); err != nil {
		t.Errorf("newServer(seed 5 that exactly fits the caps): %v", err)
	}
}

// FuzzDecodeAlbum checks the POST decoder never panics and never accepts an
// invalid album. CI runs only the seed corpus; run it for real with
//
//	go test -run=^$ -fuzz=FuzzDecodeAlbum -fuzztime=20s
func FuzzDecodeAlbum(f *testing.F) {
	for _, seed := range []string{
		`{"title":"Blue Train","artist":"John Coltrane","price":56.99}`,
		`{"title":"t","artist":"a","price":0}`,
		`{"title":"t","artist":"a","price":-0}`,
		`{"title":"t","artist":"a","price":-1}`,
		`{"title":"t","artist":"a","price":1e400}`,
		`{"title":"t","artist":"a","price":1e308}`,
		`{"title":"","artist":"a","price":1}`,
		`{"title":"t","artist":"a"}`,
		`{"id":1,"title":"t","artist":"a","price":1}`,
		`{"title":"t","artist":"a","price":1,"x":2}`,
		`{"TITLE":"t","Artist":"a","price":1}`,
		`{"title":"t","title":"","artist":"a","price":1}`,
		`{"title":"\u0000","artist":"\xff","price":1}`,
		`{"title":"t","artist":"a","price":1} {}`,
		`{"title":"t","artist":"a","price":1}   `,
		`[]`, `null`, `""`, `1`, ``, `{`, `{"title":`,
		`{"title":"` + strings.Repeat("a", maxFieldBytes) + `","artist":"a","price":1}`,
		`{"title":"` + strings.Repeat("a", maxFieldBytes+1) + `","artist":"a","price":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := decodeAlbum(bytes.NewReader(body))
		if err != nil {
			if a != (Album{}) {
				t.Errorf("decodeAlbum(%q): got %+v with error %v, want zero album", body, a, err)
			}
			if err.Error() == "" {
				t.Errorf("decodeAlbum(%q): got an empty error message", body)
			}
			return
		}
		switch {
		case a.ID != 0:
			t.Errorf("decodeAlbum(%q): got id %d, want 0 before the store assigns one", body, a.ID)
		case strings.TrimSpace(a.Title) == "" || strings.TrimSpace(a.Artist) == "":
			t.Errorf("decodeAlbum(%q): accepted empty title or artist: %+v", body, a)
		case len(a.Title) > maxFieldBytes || len(a.Artist) > maxFieldBytes:
			t.Errorf("decodeAlbum(%q): accepted a title or artist over %d bytes", body, maxFieldBytes)
		case math.IsNaN(a.Price) || math.IsInf(a.Price, 0) || a.Price < 0 || math.Signbit(a.Price):
			t.Errorf("decodeAlbum(%q): accepted price %v", body, a.Price)
		}
	})
}
