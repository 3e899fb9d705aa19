package pagecache

import (
	"bytes"
	"errors"
	"flag"
	"math/rand"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

var seedFlag = flag.Int64("seed", 0, "seed for random tests (0 = time)")

// memBackend stores written-back ranges per inode.
type memBackend struct {
	files  map[ondisk.InodeRef][]byte
	writes []int // sizes of ranges written
	fail   bool
}

func (m *memBackend) WriteBack(k ondisk.InodeRef, off int64, data []byte) error {
	if m.fail {
		return errors.New("injected failure")
	}
	f := m.files[k]
	if end := off + int64(len(data)); end > int64(len(f)) {
		f = append(f, make([]byte, end-int64(len(f)))...)
	}
	copy(f[off:], data)
	m.files[k] = f
	m.writes = append(m.writes, len(data))
	return nil
}

// TestSyncVisitsOnlyDirtyInodes is seed 002's claim, counted: with 100,000
// clean cached inodes and 10 dirty ones, sync visits 10.
func TestSyncVisitsOnlyDirtyInodes(t *testing.T) {
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}}
	c := New(b, 0)
	for i := 0; i < 100000; i++ {
		c.Get(ondisk.InodeRef{Root: 5, Ino: ondisk.ObjectID(1000 + i)})
	}
	for i := 0; i < 10; i++ {
		if err := c.Write(ondisk.InodeRef{Root: 5, Ino: ondisk.ObjectID(1000 + i*7)}, 0, []byte("dirty")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.SyncVisited != 10 {
		t.Fatalf("sync visited %d inodes, want 10", st.SyncVisited)
	}
	if st.CachedInodes != 100000 || st.ListAdds != 10 || st.ListDels != 10 || st.DirtyInodes != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A second sync with nothing dirty visits nothing.
	c.Sync()
	if st := c.Stats(); st.SyncVisited != 0 {
		t.Fatalf("clean sync visited %d", st.SyncVisited)
	}
}

// TestStreamBecomesOneRange: 4 KiB sequential writes merge into one range,
// so the backend sees one large write (delayed allocation).
func TestStreamBecomesOneRange(t *testing.T) {
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}}
	c := New(b, 0)
	k := ondisk.InodeRef{Root: 5, Ino: 257}
	blk := bytes.Repeat([]byte{7}, 4096)
	for i := 0; i < 1024; i++ {
		c.Write(k, int64(i)*4096, blk)
	}
	c.Fsync(k)
	if len(b.writes) != 1 || b.writes[0] != 4<<20 {
		t.Fatalf("writes %v, want one of 4 MiB", b.writes)
	}
}

// TestFailedWritebackKeepsData: a backend error leaves the data dirty.
func TestFailedWritebackKeepsData(t *testing.T) {
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}, fail: true}
	c := New(b, 0)
	k := ondisk.InodeRef{Root: 5, Ino: 300}
	c.Write(k, 10, []byte("abc"))
	if err := c.Sync(); err == nil {
		t.Fatal("want error")
	}
	p := make([]byte, 16)
	c.Overlay(k, p, 0)
	if string(p[10:13]) != "abc" || c.Stats().DirtyInodes != 1 {
		t.Fatalf("data lost after failed writeback: %q", p)
	}
	b.fail = false
	if err := c.Sync(); err != nil || string(b.files[k][10:13]) != "abc" {
		t.Fatalf("retry: %v %q", err, b.files[k])
	}
}

// TestRandomAgainstModel: random writes/truncates/syncs against a byte-slice model.
func TestRandomAgainstModel(t *testing.T) { randomAgainstModel(t) }

// TestRandomAgainstModelSmallSpans is TestRandomAgainstModel with spans of
// 16 KiB: streams split into touching spans, whose buffers writeback gives
// back to the pool and later spans reuse.
func TestRandomAgainstModelSmallSpans(t *testing.T) {
	defer func(m int) { maxSpan = m }(maxSpan)
	maxSpan = 16 << 10
	randomAgainstModel(t)
}

func randomAgainstModel(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}}
	c := New(b, 1<<20)
	model := map[ondisk.InodeRef][]byte{}
	keys := []ondisk.InodeRef{{Root: 5, Ino: 257}, {Root: 5, Ino: 258}, {Root: 256, Ino: 257}}
	for op := 0; op < 5000; op++ {
		k := keys[rng.Intn(len(keys))]
		switch r := rng.Intn(10); {
		case r < 7:
			off := int64(rng.Intn(1 << 18))
			data := make([]byte, 1+rng.Intn(20000))
			rng.Read(data)
			if err := c.Write(k, off, data); err != nil {
				t.Fatal(err)
			}
			m := model[k]
			if end := off + int64(len(data)); end > int64(len(m)) {
				m = append(m, make([]byte, end-int64(len(m)))...)
			}
			copy(m[off:], data)
			model[k] = m
		case r < 8:
			size := int64(rng.Intn(1 << 18))
			if size < int64(len(model[k])) {
				model[k] = model[k][:size]
				c.Truncate(k, size)
				if f := b.files[k]; int64(len(f)) > size {
					b.files[k] = f[:size]
				}
			}
		case r < 9:
			if err := c.Fsync(k); err != nil {
				t.Fatal(err)
			}
		default:
			if err := c.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if p, d := c.Pending(), c.Stats().DirtyBytes; p != d {
			t.Fatalf("seed %d op %d: %d bytes pending, %d dirty and nothing in flight", seed, op, p, d)
		}
		// read view = backend bytes overlaid with dirty bytes
		for _, k := range keys {
			want := model[k]
			got := make([]byte, len(want))
			copy(got, b.files[k])
			c.Overlay(k, got, 0)
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d op %d: inode %v differs from model", seed, op, k)
			}
		}
	}
}

// TestLongStreamSplitsAtMaxSpan: a stream longer than maxSpan is written
// back as maxSpan-sized ranges (each still one large extent), in order.
func TestLongStreamSplitsAtMaxSpan(t *testing.T) {
	defer func(m int) { maxSpan = m }(maxSpan)
	maxSpan = 8 << 20 // 20 MiB of stream, not 160
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}}
	c := New(b, 0)
	k := ondisk.InodeRef{Root: 5, Ino: 258}
	blk := make([]byte, 4096)
	for i := 0; i < (20<<20)/4096; i++ {
		blk[0] = byte(i)
		c.Write(k, int64(i)*4096, blk)
	}
	if err := c.Fsync(k); err != nil {
		t.Fatal(err)
	}
	if len(b.writes) != 3 || b.writes[0] != maxSpan || b.writes[1] != maxSpan || b.writes[2] != 4<<20 {
		t.Fatalf("writes %v, want [8 MiB 8 MiB 4 MiB]", b.writes)
	}
	for i := 0; i < (20<<20)/4096; i++ {
		if b.files[k][i*4096] != byte(i) {
			t.Fatalf("block %d wrong after writeback", i)
		}
	}
}
