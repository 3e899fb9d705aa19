package pagecache

import (
	"bytes"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestSyncSettledWaitsForHoles: background writeback of a stream whose
// WRITEs arrive out of order writes only what is settled: the bytes up to
// a hole (not the ones after it), nothing while a hole follows what was
// last written, and of one contiguous range all but the last hold bytes.
// Once the hole is filled the rest goes; a hole that stays (the file's
// own) is written past after holeWait; a full sync writes everything; the
// file's bytes end up as written. Many ranges (random writes) all go.
func TestSyncSettledWaitsForHoles(t *testing.T) {
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}}
	c := New(b, 0)
	k := ondisk.InodeRef{Root: 5, Ino: 257}
	const mib = 1 << 20
	want := make([]byte, 12*mib)
	for i := range want {
		want[i] = byte(i / 4096)
	}
	put := func(from, to int) {
		t.Helper()
		if err := c.Write(k, int64(from*mib), want[from*mib:to*mib]); err != nil {
			t.Fatal(err)
		}
	}
	sync := func(hold int64, wantWaiting int, wantWrites ...int) {
		t.Helper()
		b.writes = nil
		waiting, err := c.SyncSettled(noLock{}, hold)
		if err != nil {
			t.Fatal(err)
		}
		if waiting != wantWaiting || len(b.writes) != len(wantWrites) {
			t.Fatalf("wrote %v, %d waiting; want %v, %d waiting", b.writes, waiting, wantWrites, wantWaiting)
		}
		for i, w := range wantWrites {
			if b.writes[i] != w {
				t.Fatalf("wrote %v, want %v", b.writes, wantWrites)
			}
		}
	}
	put(0, 3)
	put(4, 6) // [3,4) on its way
	sync(mib, 0, 3*mib)
	sync(mib, 1) // a hole right after what was written: wait
	put(3, 4)
	sync(mib, 0, 2*mib) // [3,5): the last MiB stays
	put(6, 8)
	put(9, 10)
	sync(mib, 0, 3*mib) // [5,8): up to the hole
	sync(mib, 1)        // [9,10) waits for [8,9)
	time.Sleep(holeWait + 10*time.Millisecond)
	sync(mib, 0, mib) // [8,9) never came: it is the file's own hole
	put(10, 11)
	sync(0, 0, mib) // everything
	put(8, 9)
	put(11, 12)
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := b.files[k]; !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes, differ from the %d written", len(got), len(want))
	}
	// many spans are random writes: all of them go
	n := 2 * streamRuns
	for i := 0; i < n; i++ {
		if err := c.Write(k, int64(i*64<<10), want[:4096]); err != nil {
			t.Fatal(err)
		}
	}
	b.writes = nil
	if _, err := c.SyncSettled(noLock{}, mib); err != nil || len(b.writes) != n {
		t.Fatalf("random writes: wrote %d ranges (%v), want %d", len(b.writes), err, n)
	}
}
