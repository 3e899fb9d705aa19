package extentmap

import (
	"flag"
	"math/rand"
	"sync"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var seed = flag.Int64("seed", 0, "random seed (0: time-based)")

func rng(t *testing.T) *rand.Rand { return rand.New(rand.NewSource(testutil.Seed(t, *seed))) }

func ext(start, end uint64) Extent {
	return Extent{Start: start, End: end, Kind: Regular, DiskBytenr: 1 << 20, DiskNumBytes: end - start}
}

func TestWholeExtentReuse(t *testing.T) {
	c := New(0)
	id := ondisk.InodeRef{Root: 5, Ino: 257}
	const size = 32 << 20
	r := rng(t)
	for i := 0; i < 10000; i++ {
		off := uint64(r.Int63n(size/4096)) * 4096
		if _, ok := c.Lookup(id, off); !ok {
			c.Insert(id, ext(0, size))
		}
	}
	st := c.Stats()
	if n := c.Entries(id); n != 1 {
		t.Fatalf("entries = %d, want 1", n)
	}
	if st.Misses != 1 || st.Hits != 9999 {
		t.Fatalf("hits %d misses %d, want 9999/1", st.Hits, st.Misses)
	}
}

func TestInsertReplacesOverlap(t *testing.T) {
	c := New(0)
	id := ondisk.InodeRef{Root: 5, Ino: 257}
	c.Insert(id, ext(0, 4096), ext(4096, 8192), ext(8192, 12288))
	c.Insert(id, ext(2048, 10000))
	if n := c.Entries(id); n != 1 {
		t.Fatalf("entries = %d, want 1", n)
	}
	c.Insert(id, ext(2048, 10000)) // same again
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("entries = %d after duplicate insert", st.Entries)
	}
	if _, ok := c.Lookup(id, 0); ok {
		t.Fatal("offset 0 should have been replaced")
	}
	if e, ok := c.Lookup(id, 9999); !ok || e.Start != 2048 {
		t.Fatalf("lookup 9999: %+v %v", e, ok)
	}
}

func TestSubvolumesDistinct(t *testing.T) {
	c := New(0)
	c.Insert(ondisk.InodeRef{Root: 5, Ino: 256}, ext(0, 10))
	c.Insert(ondisk.InodeRef{Root: 257, Ino: 256}, ext(0, 20))
	if e, _ := c.Lookup(ondisk.InodeRef{Root: 257, Ino: 256}, 0); e.End != 20 {
		t.Fatalf("subvolume 257 inode 256 got %+v", e)
	}
	if st := c.Stats(); st.Inodes != 2 {
		t.Fatalf("inodes %d", st.Inodes)
	}
}

func TestLRUBound(t *testing.T) {
	budget := int64(100 * entryOverhead)
	c := New(budget)
	r := rng(t)
	for i := 0; i < 5000; i++ {
		id := ondisk.InodeRef{Root: 5, Ino: 256 + uint64ToID(r.Intn(50))}
		s := uint64(r.Intn(1000)) * 4096
		c.Insert(id, ext(s, s+4096))
		if st := c.Stats(); st.Bytes > budget {
			t.Fatalf("bytes %d over budget %d", st.Bytes, budget)
		}
	}
	st := c.Stats()
	total := 0
	for _, n := range c.InodeEntries() {
		total += n
	}
	if total != st.Entries || st.Entries != 100 || st.Evictions == 0 {
		t.Fatalf("entries %d (sum %d), evictions %d", st.Entries, total, st.Evictions)
	}
	// the most recent insert survives
	id := ondisk.InodeRef{Root: 5, Ino: 999}
	c.Insert(id, ext(0, 1))
	if _, ok := c.Lookup(id, 0); !ok {
		t.Fatal("newest entry evicted")
	}
}

func TestConcurrent(t *testing.T) {
	c := New(50 * entryOverhead)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 2000; i++ {
				id := ondisk.InodeRef{Root: 5, Ino: 256 + uint64ToID(r.Intn(10))}
				off := uint64(r.Intn(64)) * 4096
				if _, ok := c.Lookup(id, off); !ok {
					c.Insert(id, ext(off, off+4096))
				}
			}
		}(g)
	}
	wg.Wait()
	if st := c.Stats(); st.Bytes > 50*entryOverhead {
		t.Fatalf("over budget: %+v", st)
	}
}

func TestDrop(t *testing.T) {
	c := New(0)
	id := ondisk.InodeRef{Root: 5, Ino: 300}
	c.Insert(id, ext(0, 10), ext(10, 20))
	c.Drop(id)
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 || st.Inodes != 0 {
		t.Fatalf("after drop: %+v", st)
	}
}

func uint64ToID(i int) ondisk.ObjectID { return ondisk.ObjectID(i) }
