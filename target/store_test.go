package main

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
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
			list := decodeBody[listResponse](t, serve(s, "GET", "/albums?limit=1000", "", ""))
			if len(list.Albums) != seeded+creates || list.Total != seeded+creates {
				t.Errorf("GET /albums?limit=1000: got %d albums, total %d, want %d", len(list.Albums), list.Total, seeded+creates)
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
			st, err := newStore(strategy, 3)
			if err != nil {
				t.Fatal(err)
			}
			seed(st, 10)
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
			st.Create(Album{Title: "t", Artist: "a"})
			if got := st.List(10, 5); len(got) != 1 || got[0].ID != 12 {
				t.Errorf("List(10, 5) with id 11 in flight: got %+v, want just id 12", got)
			}
			if got := st.Count(); got != 11 {
				t.Errorf("Count with id 11 in flight: got %d, want 11", got)
			}
		})
	}
}

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

func TestNewStoreUnknown(t *testing.T) {
	if _, err := newStore("btree", 1); err == nil {
		t.Errorf(`newStore("btree"): got nil error, want one`)
	}
	if _, err := newStore("sharded", 0); err == nil {
		t.Errorf(`newStore("sharded", 0 shards): got nil error, want one`)
	}
}

// TestCalibrate checks only the iteration counts' signs: timing assertions
// would flake on a shared, noisy machine.
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
	lockWork{iters: calibrate(time.Microsecond)}.do() // must simply return
}

// TestLockWorkStore runs each strategy with lock work on, to cover those paths.
func TestLockWorkStore(t *testing.T) {
	for _, strategy := range strategies {
		s := newTestServer(t, config{Store: strategy, Seed: 2, LockWork: time.Microsecond})
		if s.lockIters <= 0 {
			t.Errorf("%s: got %d lock-work iterations for 1µs, want > 0", strategy, s.lockIters)
		}
		for _, target := range []string{"/albums/1", "/albums?limit=5", "/albums?offset=10"} {
			if rec := serve(s, "GET", target, "", ""); rec.Code != http.StatusOK {
				t.Errorf("%s: GET %s: got status %d, want %d", strategy, target, rec.Code, http.StatusOK)
			}
		}
		if rec := serve(s, "POST", "/albums", jsonType, `{"title":"t","artist":"a","price":1}`); rec.Code != http.StatusCreated {
			t.Errorf("%s: POST /albums: got status %d, want %d", strategy, rec.Code, http.StatusCreated)
		}
	}
}
