package fsops

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestChangeLogAfterReserveCommits: an operation whose metadata
// reservation has to commit first (the filesystem full, the space it needs
// pinned by deletes of the running transaction) makes its changes in the
// next transaction, and records that one as the inode's last change: a
// read from the last commit (view.go) must not take the inode as unchanged
// once the commit the reservation ran is published. Before, the operation
// kept the transaction id it started with, and a view of that commit read
// the inode's old contents.
func TestChangeLogAfterReserveCommits(t *testing.T) {
	img := smallImage(t)
	f := openImage(t, img, Options{})
	defer f.Close()
	x, err := f.Create(TopLevel, "x", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(x, 0, bytes.Repeat([]byte("old "), 1024))
	must(t, err)
	dir, err := f.Mkdir(TopLevel, "d", 0o755, 0, 0)
	must(t, err)
	content := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 1000) }
	n := 0
	for ; ; n++ {
		id, err := f.Create(dir, fmt.Sprintf("m%05d", n), 0o644, 0, 0, 0)
		if err != nil {
			break
		}
		if _, err := f.WriteAt(id, 0, content(n)); err != nil {
			break
		}
		if err := f.SetXattr(id, "user.pad", content(n + 1)[:1500], 0); err != nil {
			break
		}
		if n%2000 == 1999 {
			must(t, f.Commit())
		}
	}
	must(t, f.Commit())
	// deletes free space that stays pinned until the next commit
	for i := 0; i < n/2; i++ {
		must(t, f.Unlink(dir, fmt.Sprintf("m%05d", i)))
	}
	before := f.CommittedGeneration()
	// a write that needs a commit to find its metadata space
	var written bool
	for i := 0; i < 200 && !written; i++ {
		start := f.CommittedGeneration()
		_, err := f.WriteAt(x, uint64(i)*4096, bytes.Repeat([]byte("new "), 1024))
		must(t, err)
		written = f.CommittedGeneration() != start
	}
	if !written {
		t.Skipf("no write needed a commit for its reservation (committed generation %d)", before)
	}
	gen := f.CommittedGeneration()
	v := f.tx.View()
	if v == nil {
		t.Fatal("no view after commits")
	}
	defer v.Done()
	if v.Generation() != gen {
		t.Fatalf("view of generation %d, last commit %d", v.Generation(), gen)
	}
	if f.changes.committed(x, v.Generation()) {
		f.changes.mu.Lock()
		last := f.changes.last[ondisk.InodeRef(x)]
		f.changes.mu.Unlock()
		t.Errorf("after a write whose reservation committed generation %d, the change log takes x as unchanged since (last change recorded: %d)", gen, last)
	}
}
