package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Album is the one resource this service manages.
type Album struct {
	ID     int64   `json:"id"`
	Title  string  `json:"title"`
	Artist string  `json:"artist"`
	Price  float64 `json:"price"`
}

// albumSize is what an album counts against ALBUMS_MAX_BYTES: the struct
// (id, price and two string headers, 48 bytes on 64-bit) plus the bytes of
// its title and artist. Map and garbage-collector overhead come on top, so
// the process's RSS is a small multiple of the stored bytes.
func albumSize(a Album) int64 {
	return int64(unsafe.Sizeof(a)) + int64(len(a.Title)) + int64(len(a.Artist))
}

// limits are the store's caps (ALBUMS_MAX_ALBUMS, ALBUMS_MAX_BYTES).
type limits struct {
	maxAlbums int64
	maxBytes  int64
}

// capError is what Create returns when an album would take the store past
// a cap. The store is unchanged: no id is used up and no bytes are counted.
type capError struct {
	knob  string // the environment variable that sets the cap
	limit int64
	need  int64 // the album's size, for the bytes cap
	used  int64 // the store's size when it was refused
}

func (e *capError) Error() string {
	if e.knob == "ALBUMS_MAX_BYTES" {
		return fmt.Sprintf("store is full: this album (%d bytes) would take it past ALBUMS_MAX_BYTES (%d bytes, %d in use)",
			e.need, e.limit, e.used)
	}
	return fmt.Sprintf("store is full: ALBUMS_MAX_ALBUMS (%d albums) reached", e.limit)
}

// Store is the shared state every request touches. The implementations differ
// only in how they synchronize, which is what the load tests compare.
//
// IDs are assigned by the store, sequentially from 1, and never reused (there
// is no delete), so the ids in use are always the dense range 1..N. List relies
// on that to cost O(limit) instead of sorting or scanning the whole store.
//
// Every strategy enforces the same caps exactly, however many creates race:
// the store never holds more than maxAlbums albums or maxBytes bytes (see
// albumSize), and a create is refused only if it did not fit next to the
// creates stored or in flight at that moment.
type Store interface {
	// Create stores a copy of a under a new id and returns it with the id
	// set, or returns a *capError and leaves the store unchanged.
	Create(a Album) (Album, error)
	// Get returns the album with the given id.
	Get(id int64) (Album, bool)
	// List returns the albums with ids offset+1..offset+limit in ascending
	// order. An id whose insert is still in flight is skipped.
	List(offset int64, limit int) []Album
	// Count returns how many albums are stored. It is a single atomic load,
	// so it never contends with other operations and does no lock work.
	Count() int64
	// Bytes returns the bytes (see albumSize) of the albums stored or being
	// stored: a single atomic load, like Count.
	Bytes() int64
	// Strategy is the ALBUMS_STORE name of the implementation.
	Strategy() string

	setWork(w lockWork)
}

// strategies lists the valid ALBUMS_STORE values.
var strategies = []string{"mutex", "rwmutex", "syncmap", "sharded"}

// newStore returns an empty store using the named strategy and caps. shards
// is only used by "sharded". The store does no lock work until setWork is
// called, so seeding a large store at startup stays fast.
func newStore(strategy string, shards int, lim limits) (Store, error) {
	if lim.maxAlbums < 1 || lim.maxBytes < 1 {
		return nil, fmt.Errorf("store caps must be positive, got %d albums and %d bytes", lim.maxAlbums, lim.maxBytes)
	}
	switch strategy {
	case "mutex":
		return &mutexStore{core: core{lim: lim}, m: make(map[int64]Album)}, nil
	case "rwmutex":
		return &rwmutexStore{core: core{lim: lim}, m: make(map[int64]Album)}, nil
	case "syncmap":
		return &syncMapStore{core: core{lim: lim}}, nil
	case "sharded":
		if shards < 1 {
			return nil, fmt.Errorf("sharded store needs at least 1 shard, got %d", shards)
		}
		s := &shardedStore{core: core{lim: lim}, shards: make([]shard, shards)}
		for i := range s.shards {
			s.shards[i].m = make(map[int64]Album)
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown store strategy %q", strategy)
}

// seedAlbums are the albums from Go's own REST tutorial; seed cycles through
// them so the store has realistic-looking data from the first request.
var seedAlbums = []Album{
	{Title: "Blue Train", Artist: "John Coltrane", Price: 56.99},
	{Title: "Jeru", Artist: "Gerry Mulligan", Price: 17.99},
	{Title: "Sarah Vaughan and Clifford Brown", Artist: "Sarah Vaughan", Price: 39.99},
}

// seed adds n albums to s. It fails only if they do not fit the store's caps.
func seed(s Store, n int) error {
	for i := range n {
		a := seedAlbums[i%len(seedAlbums)]
		if vol := i / len(seedAlbums); vol > 0 {
			a.Title = fmt.Sprintf("%s (Vol. %d)", a.Title, vol+1)
		}
		if _, err := s.Create(a); err != nil {
			return fmt.Errorf("seeding album %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// core is the bookkeeping every strategy shares.
type core struct {
	last  atomic.Int64 // highest id handed out = albums stored or being stored
	count atomic.Int64 // albums whose insert has completed
	bytes atomic.Int64 // albumSize of the albums stored or being stored
	lim   limits       // read-only after newStore
	work  lockWork     // done once per store operation; see each strategy
}

func (c *core) Count() int64       { return c.count.Load() }
func (c *core) Bytes() int64       { return c.bytes.Load() }
func (c *core) setWork(w lockWork) { c.work = w }

// reserve counts an album of size bytes against the caps and hands out its
// id, or returns a *capError and changes nothing.
//
// Both counters are compare-and-swap loops, so neither ever goes past its cap,
// even for an instant. Bytes come first: a bytes reservation is undone only
// when the albums cap is reached, which is permanent (there is no delete), so
// the store still ends up exactly at the cap that binds, as the tests check.
// Under the mutex strategies this runs inside the lock and
// never retries; under syncmap and sharded it replaces the atomic add that
// handed out ids before, so it adds no lock.
func (c *core) reserve(size int64) (int64, error) {
	for {
		used := c.bytes.Load()
		if size > c.lim.maxBytes-used {
			return 0, &capError{knob: "ALBUMS_MAX_BYTES", limit: c.lim.maxBytes, need: size, used: used}
		}
		if c.bytes.CompareAndSwap(used, used+size) {
			break
		}
	}
	for {
		last := c.last.Load()
		if last >= c.lim.maxAlbums {
			c.bytes.Add(-size)
			return 0, &capError{knob: "ALBUMS_MAX_ALBUMS", limit: c.lim.maxAlbums}
		}
		if c.last.CompareAndSwap(last, last+1) {
			return last + 1, nil
		}
	}
}

// span returns the ids List(offset, limit) covers, lo..hi inclusive; lo > hi
// means none. It clamps to the ids handed out so far and cannot overflow,
// whatever offset the client sent.
func (c *core) span(offset int64, limit int) (lo, hi int64) {
	last := c.last.Load()
	if offset >= last {
		return 1, 0
	}
	return offset + 1, offset + min(int64(limit), last-offset)
}

// mutexStore guards a map with one sync.Mutex: every operation, read or
// write, is serialized, and so is its lock work.
type mutexStore struct {
	core
	mu sync.Mutex
	m  map[int64]Album
}

func (s *mutexStore) Strategy() string { return "mutex" }

func (s *mutexStore) Create(a Album) (Album, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work.do()
	// The id is taken under the lock, so inserts land in id order and a
	// List never sees a gap.
	id, err := s.reserve(albumSize(a))
	if err != nil {
		return Album{}, err
	}
	a.ID = id
	s.m[a.ID] = a
	s.count.Add(1)
	return a, nil
}

func (s *mutexStore) Get(id int64) (Album, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work.do()
	a, ok := s.m[id]
	return a, ok
}

func (s *mutexStore) List(offset int64, limit int) []Album {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work.do()
	return listMap(s.m, offset, limit, &s.core)
}

// rwmutexStore guards a map with a sync.RWMutex: reads (and their lock work)
// run in parallel under RLock; writes are exclusive.
type rwmutexStore struct {
	core
	mu sync.RWMutex
	m  map[int64]Album
}

func (s *rwmutexStore) Strategy() string { return "rwmutex" }

func (s *rwmutexStore) Create(a Album) (Album, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work.do()
	id, err := s.reserve(albumSize(a)) // under the lock, as in mutexStore
	if err != nil {
		return Album{}, err
	}
	a.ID = id
	s.m[a.ID] = a
	s.count.Add(1)
	return a, nil
}

func (s *rwmutexStore) Get(id int64) (Album, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.work.do()
	a, ok := s.m[id]
	return a, ok
}

func (s *rwmutexStore) List(offset int64, limit int) []Album {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.work.do()
	return listMap(s.m, offset, limit, &s.core)
}

// listMap looks up ids offset+1..offset+limit in m; the caller holds the lock.
func listMap(m map[int64]Album, offset int64, limit int, c *core) []Album {
	lo, hi := c.span(offset, limit)
	out := make([]Album, 0, max(hi-lo+1, 0))
	for id := lo; id <= hi; id++ {
		if a, ok := m[id]; ok {
			out = append(out, a)
		}
	}
	return out
}

// syncMapStore uses sync.Map, which needs no lock of ours. There is no
// critical section to put the lock work in, so it runs unserialized: with
// this strategy ALBUMS_LOCK_WORK is plain per-operation CPU cost.
type syncMapStore struct {
	core
	m sync.Map // int64 -> Album
}

func (s *syncMapStore) Strategy() string { return "syncmap" }

func (s *syncMapStore) Create(a Album) (Album, error) {
	s.work.do()
	// Taking the id and storing the album are two steps, so a concurrent
	// List can see the id before the album; it skips it.
	id, err := s.reserve(albumSize(a))
	if err != nil {
		return Album{}, err
	}
	a.ID = id
	s.m.Store(a.ID, a)
	s.count.Add(1)
	return a, nil
}

func (s *syncMapStore) Get(id int64) (Album, bool) {
	s.work.do()
	v, ok := s.m.Load(id)
	if !ok {
		return Album{}, false
	}
	return v.(Album), true
}

func (s *syncMapStore) List(offset int64, limit int) []Album {
	s.work.do()
	lo, hi := s.span(offset, limit)
	out := make([]Album, 0, max(hi-lo+1, 0))
	for id := lo; id <= hi; id++ {
		if v, ok := s.m.Load(id); ok {
			out = append(out, v.(Album))
		}
	}
	return out
}

// shardedStore splits the map into shards, each with its own RWMutex, keyed by
// id modulo the shard count. Sequential ids go round-robin over the shards, so
// concurrent creates rarely meet on the same lock. Lock work runs under the
// lock of the shard the operation touches.
type shardedStore struct {
	core
	shards []shard
}

// shard is padded to 64 bytes, a cache line on common CPUs, so that locking
// one shard does not invalidate its neighbour's line (false sharing) and
// quietly reintroduce the contention sharding is meant to remove.
type shard struct {
	mu sync.RWMutex
	m  map[int64]Album
	_  [64 - (unsafe.Sizeof(sync.RWMutex{})+unsafe.Sizeof(map[int64]Album(nil)))%64]byte
}

func (s *shardedStore) Strategy() string { return "sharded" }

func (s *shardedStore) shardFor(id int64) *shard {
	return &s.shards[id%int64(len(s.shards))]
}

func (s *shardedStore) Create(a Album) (Album, error) {
	// The id is taken before the shard lock (there is no store-wide lock to
	// take it under), so a concurrent List can see it in flight; it skips it.
	id, err := s.reserve(albumSize(a))
	if err != nil {
		// No shard to write to: do the operation's lock work under the
		// first shard's read lock, as an empty List does.
		sh := s.shardFor(1)
		sh.mu.RLock()
		s.work.do()
		sh.mu.RUnlock()
		return Album{}, err
	}
	a.ID = id
	sh := s.shardFor(a.ID)
	sh.mu.Lock()
	s.work.do()
	sh.m[a.ID] = a
	sh.mu.Unlock()
	s.count.Add(1)
	return a, nil
}

func (s *shardedStore) Get(id int64) (Album, bool) {
	if id < 1 {
		return Album{}, false // would index a negative shard
	}
	sh := s.shardFor(id)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	s.work.do()
	a, ok := sh.m[id]
	return a, ok
}

// List visits each shard the range touches once, taking its read lock once,
// rather than locking per id. The result is not a snapshot across shards,
// which is fine: ids are never removed, only added. The lock work is done
// once per List, under the first shard's lock, so a list costs one unit of
// lock work like every other operation.
func (s *shardedStore) List(offset int64, limit int) []Album {
	lo, hi := s.span(offset, limit)
	if lo > hi {
		s.shardFor(1).mu.RLock()
		s.work.do()
		s.shardFor(1).mu.RUnlock()
		return []Album{}
	}
	n := hi - lo + 1
	slots := make([]Album, n) // slots[id-lo]; ID 0 marks an id in flight
	step := int64(len(s.shards))
	for first := lo; first < lo+min(step, n); first++ {
		sh := s.shardFor(first)
		sh.mu.RLock()
		if first == lo {
			s.work.do()
		}
		for id := first; id <= hi; id += step {
			slots[id-lo] = sh.m[id]
		}
		sh.mu.RUnlock()
	}
	out := slots[:0]
	for _, a := range slots {
		if a.ID != 0 {
			out = append(out, a)
		}
	}
	return out
}

// lockWork is a fixed amount of CPU work done inside the store's critical
// section: a known serial fraction for Amdahl's-law experiments. It is a
// fixed iteration count rather than "spin until d has passed", so that a
// thread descheduled mid-work still owes the same work when it resumes and
// contention shows up as queueing, as it would for real serial code.
type lockWork struct {
	iters int
}

func (w lockWork) do() {
	if w.iters > 0 {
		spin(w.iters)
	}
}

// spin runs n rounds of a cheap hash (FNV-1a over the loop counter). The
// multiply chain keeps each round dependent on the last, so the CPU cannot
// overlap rounds, and returning the hash from a non-inlined function keeps
// the compiler from deleting the loop.
//
//go:noinline
func spin(n int) uint64 {
	h := uint64(14695981039346656037)
	for i := range n {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

// calibrate returns how many spin rounds take d on an idle core. It times a
// batch several times and keeps the fastest, since interference on a shared
// machine only ever makes a run slower. It takes a few milliseconds.
func calibrate(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	const batch = 1 << 20
	best := time.Duration(1<<63 - 1)
	for range 5 {
		start := time.Now()
		spin(batch)
		best = min(best, time.Since(start))
	}
	best = max(best, 1) // a coarse clock could report 0
	return max(int(float64(d)/float64(best)*batch), 1)
}
