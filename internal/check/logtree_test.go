package check

import (
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// logTreeOf opens the log tree of subvolume 5 of a pending log.
func (e *editor) logTreeOf() *ctree.Tree {
	e.t.Helper()
	sb := e.fi.Super
	lr := &ctree.Tree{R: e.fi.R, ID: ondisk.TreeLogObjectID, Root: sb.LogRoot, Level: int(sb.LogRootLevel)}
	f := e.findIn(lr, func(k ondisk.Key, d []byte) bool {
		return k.Type == ondisk.RootItemKey && k.Offset == uint64(ondisk.FSTreeObjectID)
	})
	ri, err := item.DecodeRootItem(f.data)
	if err != nil {
		e.t.Fatal(err)
	}
	return &ctree.Tree{R: e.fi.R, ID: ondisk.TreeLogObjectID, Root: ri.Bytenr, Level: int(ri.Level)}
}

func isCsumItem(k ondisk.Key, d []byte) bool {
	return k.ObjectID == ondisk.ExtentCsumObjectID && k.Type == ondisk.ExtentCsumKey
}

// TestKernelLogTreeCsums: a pending log must carry the checksums of the
// data it logs (btrfs-progs fsck-tests/063, which btrfs check 6.2 misses),
// unless the csum tree has them already; and checksums in the csum tree
// for data only the log refers to are not strays (fsck-tests/065
// already-present: clean for btrfs check).
func TestKernelLogTreeCsums(t *testing.T) {
	needProgs(t)
	testutil.NeedRootLoop(t)
	dir := t.TempDir()
	img0, _ := kernelLogImage(t, dir)
	mustBeClean(t, img0, Options{})

	t.Run("missing-csum", func(t *testing.T) {
		img := filepath.Join(t.TempDir(), "img")
		copyImage(t, img0, img)
		e := openEditor(t, img)
		tr := e.logTreeOf()
		deleted := 0
		for {
			f, ok := e.tryFindIn(tr, func(k ondisk.Key, d []byte) bool { return isCsumItem(k, d) })
			if !ok || f.slot == 0 {
				break
			}
			e.deleteItem(f)
			deleted++
		}
		e.dev.Close()
		if deleted == 0 {
			t.Fatal("no checksum item to delete in the log tree")
		}
		rep := ourCheck(t, img, Options{})
		if !hasProblem(rep, ClassCsum, target{tree: ondisk.TreeLogObjectID}) {
			t.Errorf("logged data without checksums not reported: %s", describe(rep))
		} else {
			t.Logf("ours: %s", rep.Find(ClassCsum, ondisk.TreeLogObjectID, nil)[0])
		}
		clean, out := progsCheck(t, img)
		t.Logf("btrfs check 6.2 (no log checks; fsck-tests/063 needs a newer one): clean=%v\n%s", clean, out)
	})

	t.Run("csum-already-present", func(t *testing.T) {
		img := filepath.Join(t.TempDir(), "img")
		copyImage(t, img0, img)
		e := openEditor(t, img)
		tr := e.logTreeOf()
		var f found
		for {
			x, ok := e.tryFindIn(tr, func(k ondisk.Key, d []byte) bool { return isCsumItem(k, d) && k.Offset > f.key.Offset })
			if !ok {
				t.Fatal("no checksum item to move in the log tree")
			}
			if f = x; f.slot > 0 {
				break
			}
		}
		// move the checksums from the log to the csum tree: the extents
		// they cover still have no extent item (the log is not replayed)
		e.insertItem(ondisk.CsumTreeObjectID, f.key, f.data)
		e.deleteItem(f)
		e.dev.Close()
		mustBeClean(t, img, Options{})
	})
}
