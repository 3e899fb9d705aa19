package fsops

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestOrphanLifecycle: an inode in use when its last name goes stays with
// nlink 0 and an ORPHAN_ITEM (checks clean); fsync of it is a no-op, as on
// the kernel; DropOrphan deletes it; an O_TMPFILE linked in loses its
// ORPHAN_ITEM; CleanOrphans deletes what is left after a "crash".
func TestOrphanLifecycle(t *testing.T) {
	img := newImage(t, imageOpts{})
	f := openImage(t, img, Options{})
	root := ondisk.InodeRef{Root: ondisk.FSTreeObjectID, Ino: RootDirIno}
	busy := map[ondisk.InodeRef]bool{}
	f.SetInUse(func(id ondisk.InodeRef) bool { return busy[id] })

	a, err := f.Create(root, "a", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(a, 0, []byte("orphan data"))
	must(t, err)
	busy[a] = true
	must(t, f.Unlink(root, "a"))
	x, err := f.Stat(a)
	if err != nil || x.NLink != 0 {
		t.Fatalf("unlinked open inode: %+v %v, want it kept with nlink 0", x, err)
	}
	before := f.FsyncStats()
	must(t, f.Fsync(a))
	after := f.FsyncStats()
	if after.Logged != before.Logged || len(after.Commits) != len(before.Commits) {
		t.Errorf("fsync of an orphan logged or committed: %+v -> %+v", before, after)
	}
	tmp, err := f.CreateTmpfile(root, 0o600, 0, 0)
	must(t, err)
	must(t, f.Link(tmp, root, "fromtmp"))
	gone, err := f.CreateTmpfile(root, 0o600, 0, 0)
	must(t, err)
	must(t, f.Commit())
	dump := dumpTree(t, img, "fs")
	for _, id := range []ondisk.InodeRef{a, gone} {
		if !strings.Contains(dump, "key (ORPHAN ORPHAN_ITEM "+strconv.FormatUint(uint64(id.Ino), 10)+")") {
			t.Errorf("no ORPHAN_ITEM for %v after commit", id)
		}
	}
	if strings.Contains(dump, "key (ORPHAN ORPHAN_ITEM "+strconv.FormatUint(uint64(tmp.Ino), 10)+")") {
		t.Errorf("linked O_TMPFILE %v kept its ORPHAN_ITEM", tmp)
	}
	checktest.Image(t, img)

	must(t, f.DropOrphan(a))
	busy[a] = false
	if _, err := f.Stat(a); err == nil {
		t.Errorf("DropOrphan left inode %v", a)
	}
	n, err := f.CleanOrphans() // gone: what a crash would leave
	must(t, err)
	if n != 1 {
		t.Errorf("CleanOrphans deleted %d inodes, want 1", n)
	}
	must(t, f.Close())
	dump = dumpTree(t, img, "fs")
	if strings.Contains(dump, "ORPHAN_ITEM") {
		t.Errorf("ORPHAN_ITEMs left after cleanup:\n%s", dump)
	}
	checktest.Image(t, img)
}
