package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	defaultLimit  = 20
	maxLimit      = 100      // a page is at most ~1.3 MB even of maximal albums
	maxBodyBytes  = 64 << 10 // POST body; 413 beyond
	maxFieldBytes = 1 << 10  // title and artist, in bytes of UTF-8; 400 beyond
)

// server holds everything the handlers share; there is no package state.
type server struct {
	store     Store
	delay     time.Duration  // ALBUMS_DELAY
	lockWork  time.Duration  // ALBUMS_LOCK_WORK, for /metrics
	lockIters int            // spin rounds lockWork calibrated to
	limits    limits         // ALBUMS_MAX_ALBUMS and ALBUMS_MAX_BYTES, for /metrics
	maxConns  int            // ALBUMS_MAX_CONNS, for /metrics
	conns     *limitListener // set by run; nil when serving without a listener (tests)
	metrics   *metrics
	handler   http.Handler
}

// newServer builds the store (seeded, with calibrated lock work) and routes.
func newServer(cfg config) (*server, error) {
	lim := limits{maxAlbums: cfg.MaxAlbums, maxBytes: cfg.MaxBytes}
	store, err := newStore(cfg.Store, cfg.Shards, lim)
	if err != nil {
		return nil, err
	}
	if err := seed(store, cfg.Seed); err != nil {
		return nil, fmt.Errorf("ALBUMS_SEED=%d: %w", cfg.Seed, err)
	}
	// Lock work starts after seeding: a big seed times a slow lock would
	// otherwise delay startup for no benefit.
	iters := calibrate(cfg.LockWork)
	store.setWork(lockWork{iters: iters})

	s := &server{
		store: store, delay: cfg.Delay, lockWork: cfg.LockWork, lockIters: iters,
		limits: lim, maxConns: cfg.MaxConns,
	}
	routes := []struct {
		pattern string
		handler http.HandlerFunc
	}{
		{"GET /albums", s.listAlbums},
		{"GET /albums/{id}", s.getAlbum},
		{"POST /albums", s.createAlbum},
		{"GET /healthz", s.healthz},
		{"GET /metrics", s.getMetrics},
	}
	mux := http.NewServeMux()
	var patterns []string
	for _, rt := range routes {
		mux.HandleFunc(rt.pattern, rt.handler)
		patterns = append(patterns, rt.pattern)
	}
	s.metrics = newMetrics(patterns)
	s.handler = s.metrics.instrument(mux)
	return s, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// listResponse is the GET /albums envelope.
type listResponse struct {
	Albums []Album `json:"albums"`
	Total  int64   `json:"total"`
	Limit  int     `json:"limit"`
	Offset int64   `json:"offset"`
}

func (s *server) listAlbums(w http.ResponseWriter, r *http.Request) {
	s.pause(r)
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), defaultLimit)
	if err != nil || limit < 1 || limit > maxLimit {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be an integer from 1 to %d", maxLimit))
		return
	}
	offset, err := queryInt(q.Get("offset"), 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, "offset must be a non-negative integer")
		return
	}
	// Count before List: an album created in between then shows up in the
	// page but not yet in total, never the reverse.
	total := s.store.Count()
	albums := s.store.List(offset, int(limit))
	w.Header().Set("X-Total-Count", strconv.FormatInt(total, 10))
	writeJSON(w, http.StatusOK, listResponse{Albums: albums, Total: total, Limit: int(limit), Offset: offset})
}

// queryInt parses an optional non-negative query parameter; missing or empty
// means def.
func queryInt(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	return parseDigits(v)
}

// parseDigits parses a non-negative decimal integer. Unlike strconv.ParseInt
// it rejects signs, so "+1" and "-1" are not ids.
func parseDigits(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a decimal integer", s)
		}
	}
	return strconv.ParseInt(s, 10, 64) // fails only on overflow now
}

func (s *server) getAlbum(w http.ResponseWriter, r *http.Request) {
	s.pause(r)
	id, err := parseDigits(r.PathValue("id"))
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "album id must be a positive integer")
		return
	}
	a, ok := s.store.Get(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("album %d not found", id))
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *server) createAlbum(w http.ResponseWriter, r *http.Request) {
	s.pause(r)
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	a, err := decodeAlbum(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body must be at most %d bytes", tooBig.Limit))
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The server's ReadTimeout passed mid-body: a client sending too
		// slowly, or not at all. net/http closes the connection after this.
		writeError(w, http.StatusRequestTimeout, "request body not received in time")
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	a, err = s.store.Create(a)
	if full := new(capError); errors.As(err, &full) {
		writeError(w, http.StatusInsufficientStorage, full.Error())
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error()) // Create returns no other error today
		return
	}
	w.Header().Set("Location", fmt.Sprintf("/albums/%d", a.ID))
	writeJSON(w, http.StatusCreated, a)
}

// albumInput is the POST body. Pointers tell a missing field from a zero
// one; ID exists only so a client-sent id gets a clear error rather than
// "unknown field".
type albumInput struct {
	ID     json.RawMessage `json:"id"`
	Title  *string         `json:"title"`
	Artist *string         `json:"artist"`
	Price  *float64        `json:"price"`
}

// decodeAlbum reads exactly one JSON album object from r and validates it.
// Its error messages are meant for the client. Read errors (such as
// *http.MaxBytesError) are wrapped so the caller can pick the status.
func decodeAlbum(r io.Reader) (Album, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var in albumInput
	if err := dec.Decode(&in); err != nil {
		return Album{}, decodeError(err)
	}
	// Decode stops after the first value; anything but whitespace after it
	// is a malformed request, not something to ignore.
	if _, err := dec.Token(); err != io.EOF {
		if isReadError(err) {
			return Album{}, fmt.Errorf("reading body: %w", err)
		}
		return Album{}, errors.New("invalid JSON: unexpected data after the album object")
	}
	return in.validate()
}

// isReadError reports whether a decoder error came from reading the body
// (too big, or too slow) rather than from its content; the caller picks the
// status for those.
func isReadError(err error) bool {
	tooBig := new(http.MaxBytesError)
	return errors.As(err, &tooBig) || errors.Is(err, os.ErrDeadlineExceeded)
}

// decodeError turns a json.Decoder error into a client-facing message.
func decodeError(err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case isReadError(err):
		return fmt.Errorf("reading body: %w", err)
	case errors.Is(err, io.EOF):
		return errors.New("request body is empty: want a JSON object with title, artist and price")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: body ends in the middle of the object")
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: "))
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Errorf("body must be a JSON object, not a JSON %s", typeErr.Value)
	case errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Value, "number "):
		// encoding/json reports a number too big for float64 (1e400) as
		// "number 1e400", and a number sent for a string field as "number".
		return fmt.Errorf("%s is out of range: %s", typeErr.Field, strings.TrimPrefix(typeErr.Value, "number "))
	case errors.As(err, &typeErr):
		return fmt.Errorf("%s must be a %s, not a JSON %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no error type for this; the message is stable.
		return fmt.Errorf("%s; allowed fields are title, artist and price", strings.TrimPrefix(err.Error(), "json: "))
	}
	return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON client would.
func jsonKind(goKind string) string {
	switch goKind {
	case "float64":
		return "number"
	case "string":
		return "string"
	}
	return goKind
}

func (in albumInput) validate() (Album, error) {
	switch {
	case in.ID != nil:
		return Album{}, errors.New("id must not be sent: the server assigns ids")
	case in.Title == nil:
		return Album{}, errors.New("missing field: title")
	case in.Artist == nil:
		return Album{}, errors.New("missing field: artist")
	case in.Price == nil:
		return Album{}, errors.New("missing field: price")
	case strings.TrimSpace(*in.Title) == "":
		return Album{}, errors.New("title must not be empty")
	case strings.TrimSpace(*in.Artist) == "":
		return Album{}, errors.New("artist must not be empty")
	case len(*in.Title) > maxFieldBytes:
		return Album{}, fmt.Errorf("title must be at most %d bytes (UTF-8), got %d", maxFieldBytes, len(*in.Title))
	case len(*in.Artist) > maxFieldBytes:
		return Album{}, fmt.Errorf("artist must be at most %d bytes (UTF-8), got %d", maxFieldBytes, len(*in.Artist))
	case math.IsNaN(*in.Price) || math.IsInf(*in.Price, 0):
		return Album{}, errors.New("price must be a finite number")
	case *in.Price < 0:
		return Album{}, errors.New("price must not be negative")
	}
	price := *in.Price
	if price == 0 {
		price = 0 // -0 passes the checks above; store it as 0 so it never renders as "-0"
	}
	return Album{Title: *in.Title, Artist: *in.Artist, Price: price}, nil
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// getMetrics renders into a buffer before writing anything, so this scrape's
// own request is counted when it is written and shows in the next scrape.
func (s *server) getMetrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	s.metrics.writeTo(&b, s.currentGauges())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.Write(b.Bytes())
}

// pause adds ALBUMS_DELAY to an album request, outside any lock, standing in
// for a slower service with a known cost. It ends early if the client goes
// away, so abandoned requests do not pile up.
func (s *server) pause(r *http.Request) {
	if s.delay <= 0 {
		return
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

type errorResponse struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorResponse{Error: msg})
}

// writeJSON marshals v before writing the header, so an encoding failure can
// still become a 500 instead of a truncated 200.
func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		code, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	w.Write(body)
}
