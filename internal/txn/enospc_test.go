package txn_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// TestENOSPC fills a 128 MiB filesystem with files until allocation fails
// with ENOSPC, commits, checks, deletes everything, commits, checks, and
// fills it again to about the same amount.
func TestENOSPC(t *testing.T) {
	for _, args := range [][]string{{}, {"-m", "single"}, {"-R", "^free-space-tree"}} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			img := mkfs(t, 128<<20, args...)
			enospcFillDeleteRefill(t, img)
		})
	}
}

// enospcFillDeleteRefill fills img with files until allocation fails with
// ENOSPC, commits, checks, deletes everything, commits, checks, and fills
// it again to about the same amount.
func enospcFillDeleteRefill(t *testing.T, img string) {
	t.Helper()
	r := rand.New(rand.NewSource(11))
	fill := func() (uint64, []ondisk.ObjectID) {
		im := openImage(t, img)
		var total uint64
		var inos []ondisk.ObjectID
		ino := ondisk.ObjectID(1000)
		for full := false; !full; {
			h := im.begin(t)
			o := newOp(t, h)
			ino++
			o.createFile(5, ino, fmt.Sprintf("fill%d", ino))
			inos = append(inos, ino)
			for j := 0; j < 4; j++ {
				data := randBytes(r, 256<<10)
				if _, err := o.writeNew(5, ino, uint64(j)<<18, data); err != nil {
					if !isNoSpace(err) {
						t.Fatalf("write: %v", err)
					}
					full = true
					break
				}
				total += uint64(len(data))
			}
			h.End()
			if ino%20 == 0 {
				im.commit(t)
			}
		}
		s := im.fs.Groups().Space(ondisk.BlockGroupData)
		t.Logf("wrote %d MiB in %d files; data groups %d MiB, used %d MiB; device unallocated %d MiB",
			total>>20, len(inos), s.Total>>20, s.Used>>20, im.fs.Groups().Device().Unallocated()>>20)
		im.close(t)
		checktest.Image(t, img)
		return total, inos
	}
	first, inos := fill()
	im := openImage(t, img)
	for _, ino := range inos {
		h := im.begin(t)
		if err := h.ReserveForDelete(4); err != nil {
			t.Fatalf("reserve for delete on a full filesystem: %v", err)
		}
		newOp(t, h).deleteFile(5, ino, fmt.Sprintf("fill%d", ino))
		h.End()
	}
	im.close(t)
	checktest.Image(t, img)
	second, _ := fill()
	if second < first*9/10 {
		t.Errorf("refilled %d bytes, first fill %d", second, first)
	}
}

// TestMetadataENOSPC fills the metadata space with xattrs, each operation
// reserving first, until Reserve refuses; the commit then still works (it
// uses the global reserve), and deleting everything works too.
func TestMetadataENOSPC(t *testing.T) {
	img := mkfs(t, 128<<20)
	im := openImage(t, img)
	names := fillXattrs(t, im)
	s := im.fs.Groups().Space(ondisk.BlockGroupMetadata)
	t.Logf("%d xattrs; metadata %d MiB, free %d KiB, pinned %d KiB; device unallocated %d MiB", len(names),
		s.Total>>20, s.Free>>10, s.Pinned>>10, im.fs.Groups().Device().Unallocated()>>20)
	im.close(t)
	checktest.Image(t, img)
	im = openImage(t, img)
	for i := 0; i < len(names); i += 2 {
		h := im.begin(t)
		if err := h.ReserveForDelete(2); err != nil {
			t.Fatalf("reserve for delete: %v", err)
		}
		tree, _ := h.Tree(5)
		for _, n := range names[i:min(i+2, len(names))] {
			delXattr(t, h, tree, 256, n)
		}
		h.End()
	}
	t.Logf("deleted in %d commits", im.fs.Stats().Commits)
	im.close(t)
	checktest.Image(t, img)
}

// TestAbortOnMetadataExhaustion fills the metadata space without
// reserving: the allocation that finds nothing left fails with ENOSPC, the
// filesystem refuses further work, and the image stays at its last commit.
func TestAbortOnMetadataExhaustion(t *testing.T) {
	img := mkfs(t, 128<<20)
	im := openImage(t, img)
	r := rand.New(rand.NewSource(9))
	var lastGen ondisk.Generation
	var failed error
	for i := 0; failed == nil; i++ {
		h, err := im.fs.Begin()
		if err != nil {
			failed = err
			break
		}
		tree, _ := h.Tree(5)
		name := fmt.Sprintf("user.%06d", i)
		d := item.DirItems{{Type: item.FTXattr, Transid: uint64(h.Transid()), Name: []byte(name), Data: randBytes(r, 3000)}}
		failed = tree.InsertItem(h.Alloc(), xattrKey(256, name), d.Bytes())
		h.End()
		if failed == nil && i%3000 == 2999 {
			if failed = im.fs.Commit(); failed == nil {
				lastGen = im.fs.Transid() - 1
			}
		}
	}
	if !isNoSpace(failed) {
		t.Fatalf("filling metadata ended with %v, want ENOSPC", failed)
	}
	if _, err := im.fs.Begin(); err == nil {
		t.Fatal("Begin works after an abort")
	}
	im.fs.Close()
	im.dev.Close()
	checktest.Image(t, img)
	im = openImage(t, img)
	if g := im.fi.Super.Generation; g != lastGen {
		t.Errorf("reopened at generation %d, last commit was %d", g, lastGen)
	}
	im.close(t)
}

// fillXattrs adds 3000-byte xattrs to inode 256 of the top tree, each
// reserving first, until Reserve refuses; it returns their names.
func fillXattrs(t *testing.T, im *image) []string {
	t.Helper()
	r := rand.New(rand.NewSource(5))
	var names []string
	for i := 0; ; i++ {
		h := im.begin(t)
		if err := h.Reserve(1); err != nil {
			if !isNoSpace(err) {
				t.Fatal(err)
			}
			h.End()
			return names
		}
		tree, err := h.Tree(5)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("user.%06d", i)
		setXattr(t, h, tree, 256, name, randBytes(r, 3000))
		names = append(names, name)
		h.End()
		if i%2000 == 1999 {
			im.commit(t)
		}
	}
}
