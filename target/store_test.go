package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestConcurrentCreates hammers every strategy through the HTTP handler with
// concurrent creates, gets and lists; run it with -race.
func TestConcurrentCreates(t *testing.T) {
	const (
		seeded  = 5
		creates = 200
		readers = 8
	)
	for _, strategy := range strategies {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t, config{Store: strategy, Shards: 8, Seed: seeded})

			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				created = make(map[int64]Album) // id -> what the POST returned
				done    = make(chan struct{})
			)
			for i := range creates {
				wg.Go(func() {
					body := fmt.Sprintf(`{"title":"title %d","artist":"artist %d","price":%d.5}`, i, i, i)
					rec := serve(s, "POST", "/albums", jsonType, body)
					if rec.Code != http.StatusCreated {
						t.Errorf("POST /albums #%d: got status %d, want %d", i, rec.Code, http.StatusCreated)
						return
					}
					a := decodeBody[Album](t, rec)
					want := Album{ID: a.ID, Title: fmt.Sprintf("title %d", i), Artist: fmt.Sprintf("artist %d", i), Price: float64(i) + 0.5}
					if a != want {
						t.Errorf("POST /albums #%d: got %+v, want %+v", i, a, want)
					}
					mu.Lock()
					defer mu.Unlock()
					if prev, dup := created[a.ID]; dup {
						t.Errorf("POST /albums #%d: id %d already given to %+v", i, a.ID, prev)
					}
					created[a.ID] = a
				})
			}
			var readWG sync.WaitGroup
			for r := range readers {
				readWG.Go(func() { readLoop(t, s, r, done) })
			}
			wg.Wait()
			close(done)
			readWG.Wait()

			if got := s.store.Count(); got != seeded+creates {
				t.Errorf("store count: got %d, want %d", got, seeded+creates)
			}
			for id := int64(seeded + 1); id <= seeded+creates; id++ {
				want, ok := created[id]
				if !ok {
					t.Errorf("id %d was never returned by a POST; ids are not dense", id)
					continue
				}
				rec := serve(s, "GET", "/albums/"+strconv.FormatInt(id, 10), "", "")
				if got := decodeBody[Album](t, rec); rec.Code != http.StatusOK || got != want {
					t.Errorf("GET /albums/%d: got %d %+v, want %d %+v", id, rec.Code, got, http.StatusOK, want)
				}
			}
			var listed []Album
			for offset := 0; offset < seeded+creates; offset += maxLimit {
				target := fmt.Sprintf("/albums?limit=%d&offset=%d", maxLimit, offset)
				list := decodeBody[listResponse](t, serve(s, "GET", target, "", ""))
				if list.Total != seeded+creates {
					t.Errorf("GET %s: got total %d, want %d", target, list.Total, seeded+creates)
				}
				listed = append(listed, list.Albums...)
			}
			if len(listed) != seeded+creates {
				t.Errorf("GET /albums, every page: got %d albums, want %d", len(listed), seeded+creates)
			}
		})
	}
}

// readLoop lists and gets while creates are in flight, checking that every
// page is in ascending id order and every get is a 200 or, for an id not
// created yet, a 404.
func readLoop(t *testing.T, s *server, r int, done <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		target := fmt.Sprintf("/albums?limit=50&offset=%d", (r*7+i)%150)
		rec := serve(s, "GET", target, "", "")
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: got status %d, want %d", target, rec.Code, http.StatusOK)
			return
		}
		list := decodeBody[listResponse](t, rec)
		for j := 1; j < len(list.Albums); j++ {
			if list.Albums[j].ID <= list.Albums[j-1].ID {
				t.Errorf("GET %s: ids not ascending: %d after %d", target, list.Albums[j].ID, list.Albums[j-1].ID)
				return
			}
		}
		target = fmt.Sprintf("/albums/%d", (r*31+i)%250+1)
		if rec := serve(s, "GET", target, "", ""); rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: got status %d, want 200 or 404", target, rec.Code)
			return
		}
	}
}

// TestStoreList exercises List directly for every strategy, including the
// in-flight gap that syncmap and sharded can show.
func TestStoreList(t *testing.T) {
	for _, strategy := range strategies {
		t.Run(strategy, func(t *testing.T) {
			st, err := newStore(strategy, 3, noLimits)
			if err != nil {
				t.Fatal(err)
			}
			if err := seed(st, 10); err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				offset          int64
				limit           int
				wantFirst, want int64
			}{
				{0, 10, 1, 10}, {0, 3, 1, 3}, {4, 4, 5, 4}, {8, 5, 9, 2}, {10, 5, 0, 0}, {1 << 62, 1000, 0, 0},
			}
			for _, tt := range tests {
				got := st.List(tt.offset, tt.limit)
				if int64(len(got)) != tt.want {
					t.Errorf("List(%d, %d): got %d albums, want %d", tt.offset, tt.limit, len(got), tt.want)
					continue
				}
				for i, a := range got {
					if a.ID != tt.wantFirst+int64(i) {
						t.Errorf("List(%d, %d): album %d has id %d, want %d", tt.offset, tt.limit, i, a.ID, tt.wantFirst+int64(i))
					}
				}
			}
			if _, ok := st.Get(0); ok {
				t.Errorf("Get(0): found an album, want none")
			}
			if _, ok := st.Get(-5); ok {
				t.Errorf("Get(-5): found an album, want none")
			}
			// Simulate an insert in flight: an id handed out but not stored.
			coreOf(st).last.Add(1)
			if _, err := st.Create(Album{Title: "t", Artist: "a"}); err != nil {
				t.Fatal(err)
			}
			if got := st.List(10, 5); len(got) != 1 || got[0].ID != 12 {
				t.Errorf("List(10, 5) with id 11 in flight: got %+v, want just id 12", got)
			}
			if got := st.Count(); got != 11 {
				t.Errorf("Count with id 11 in flight: got %d, want 11", got)
			}
		})
	}
}

// noLimits is for stores whose size the test bounds itself.
var noLimits = limits{maxAlbums: math.MaxInt64, maxBytes: math.MaxInt64}

// coreOf returns the bookkeeping shared by every strategy.
func coreOf(st Store) *core {
	switch st := st.(type) {
	case *mutexStore:
		return &st.core
	case *rwmutexStore:
		return &st.core
	case *syncMapStore:
		return &st.core
	case *shardedStore:
		return &st.core
	}
	panic(fmt.Sprintf("unknown store type %T", st))
}

func TestShardSize(t *testing.T) {
	if got := unsafe.Sizeof(shard{}); got%64 != 0 {
		t.Errorf("shard is %d bytes, want a multiple of 64 (one cache line)", got)
	}
}

func TestNewStoreErrors(t *testing.T) {
	if _, err := newStore("btree", 1, noLimits); err == nil {
		t.Errorf(`newStore("btree"): got nil error, want one`)
	}
	if _, err := newStore("sharded", 0, noLimits); err == nil {
		t.Errorf(`newStore("sharded", 0 shards): got nil error, want one`)
	}
	for _, lim := range []limits{{0, 1}, {1, 0}, {-1, 1}} {
		if _, err := newStore("mutex", 1, lim); err == nil {
			t.Errorf(`newStore("mutex", %+v): got nil error, want one`, lim)
		}
	}
}

// TestCalibrate checks the iteration counts' signs, and that the count for d
// really costs about d of CPU. Only a generous lower bound (a quarter of d) is
// asserted: calibrate keeps its fastest sample, so a noisy, shared machine can
// only make the work take longer; a quarter leaves room for the CPU clocking
// up after calibration.
func TestCalibrate(t *testing.T) {
	for _, tt := range []struct {
		d        time.Duration
		positive bool
	}{
		{0, false}, {-time.Millisecond, false}, {time.Nanosecond, true}, {time.Millisecond, true},
	} {
		n := calibrate(tt.d)
		if tt.positive && n <= 0 || !tt.positive && n != 0 {
			t.Errorf("calibrate(%v): got %d iterations, want positive=%v (zero otherwise)", tt.d, n, tt.positive)
		}
	}
	const d = 20 * time.Millisecond
	w := lockWork{iters: calibrate(d)}
	for range 3 {
		start := time.Now()
		w.do()
		if took := time.Since(start); took < d/4 {
			t.Errorf("lockWork{calibrate(%v) = %d iterations}.do(): took %v, want at least %v", d, w.iters, took, d/4)
		}
	}
	lockWork{}.do() // zero work must simply return
}

// TestLockWorkStore checks every store operation of every strategy does its
// lock work, including the paths that touch no album (a miss, an empty page,
// a create refused by a cap). Each request must take at least a quarter of
// ALBUMS_LOCK_WORK (see TestCalibrate for why a quarter; no upper bound).
func TestLockWorkStore(t *testing.T) {
	const work = 4 * time.Millisecond
	body := `{"title":"t","artist":"a","price":1}`
	for _, strategy := range strategies {
		t.Run(strategy, func(t *testing.T) {
			s := newTestServer(t, config{Store: strategy, Seed: 2, MaxAlbums: 3, LockWork: work})
			if s.lockIters <= 0 {
				t.Errorf("got %d lock-work iterations for %v, want > 0", s.lockIters, work)
			}
			serveAtLeast(t, s, "ALBUMS_LOCK_WORK", work, work/4, []routeCase{
				{"GET", "/albums/1", "", http.StatusOK},
				{"GET", "/albums/99", "", http.StatusNotFound},
				{"GET", "/albums?limit=5", "", http.StatusOK},
				{"GET", "/albums?offset=10", "", http.StatusOK},
				{"POST", "/albums", body, http.StatusCreated},
				{"POST", "/albums", body, http.StatusInsufficientStorage}, // MaxAlbums 3 reached
			})
		})
	}
}

// TestStoreCapsConcurrent races many creates past each cap, for every
// strategy: exactly as many albums as fit must be stored, with dense ids, and
// every other create refused with a *capError naming the cap.
func TestStoreCapsConcurrent(t *testing.T) {
	const (
		seeded  = 5
		fit     = 40 // creates that fit under the cap
		workers = 16
		each    = 10 // creates per worker: workers*each > fit
	)
	a := Album{Title: "Concurrent", Artist: "Creates", Price: 1}
	size := albumSize(a)
	caps := []struct {
		knob string
		lim  limits
	}{
		{"ALBUMS_MAX_ALBUMS", limits{maxAlbums: seeded + fit, maxBytes: math.MaxInt64}},
		{"ALBUMS_MAX_BYTES", limits{maxAlbums: math.MaxInt64, maxBytes: seedBytes(seeded) + fit*size}},
		// Both caps reached by the same create: whichever is reported, the
		// count must still be exact.
		{"", limits{maxAlbums: seeded + fit, maxBytes: seedBytes(seeded) + fit*size}},
	}
	for _, strategy := range strategies {
		for _, c := range caps {
			t.Run(strategy+"/"+cmp.Or(c.knob, "both"), func(t *testing.T) {
				t.Parallel()
				st, err := newStore(strategy, 4, c.lim)
				if err != nil {
					t.Fatal(err)
				}
				if err := seed(st, seeded); err != nil {
					t.Fatal(err)
				}
				var created, refused atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{}) // so the workers' first creates collide
				for range workers {
					wg.Go(func() {
						<-start
						for range each {
							_, err := st.Create(a)
							var full *capError
							switch {
							case err == nil:
								created.Add(1)
							case errors.As(err, &full) && (c.knob == "" || full.knob == c.knob):
								refused.Add(1)
							default:
								t.Errorf("Create past %s: got error %v, want a *capError for it", cmp.Or(c.knob, "both caps"), err)
							}
						}
					})
				}
				close(start)
				wg.Wait()
				if got := created.Load(); got != fit {
					t.Errorf("creates that succeeded: got %d, want exactly %d", got, fit)
				}
				if got, want := refused.Load(), int64(workers*each-fit); got != want {
					t.Errorf("creates refused: got %d, want %d", got, want)
				}
				if got := st.Count(); got != seeded+fit {
					t.Errorf("Count: got %d, want %d", got, seeded+fit)
				}
				if got, want := st.Bytes(), seedBytes(seeded)+fit*size; got != want {
					t.Errorf("Bytes: got %d, want %d", got, want)
				}
				if got := coreOf(st).last.Load(); got != seeded+fit {
					t.Errorf("ids handed out: got %d, want %d", got, seeded+fit)
				}
				for id := int64(1); id <= seeded+fit; id++ {
					if _, ok := st.Get(id); !ok {
						t.Errorf("Get(%d): missing; ids must stay dense under the cap", id)
					}
				}
			})
		}
	}
}
