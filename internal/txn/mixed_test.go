package txn_test

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Images with mixed block groups (mkfs.btrfs --mixed): data and metadata
// share DATA|METADATA groups.

const mixedBGFlags = ondisk.BlockGroupData | ondisk.BlockGroupMetadata

// mixedBGKinds fails the test unless every block group of im but the
// SYSTEM ones is DATA|METADATA with profile (0 single, or DUP).
func mixedBGKinds(t *testing.T, im *image, profile uint64) {
	t.Helper()
	for _, g := range im.fs.Groups().Groups() {
		if g.Flags&ondisk.BlockGroupSystem != 0 {
			continue
		}
		if g.Flags != mixedBGFlags|profile {
			t.Fatalf("%v on a mixed filesystem: want flags %#x", g, mixedBGFlags|profile)
		}
	}
}

// TestMixedBGAllocChunk asks for a DATA and for a METADATA chunk on mixed
// images: both come out DATA|METADATA with the image's profile, the first
// sized as the kernel sizes data chunks (a tenth of the device, rounded
// up to 16 MiB), tree blocks and data extents are allocated from them, and the
// commit records them (both checkers clean, Linux mounts it).
func TestMixedBGAllocChunk(t *testing.T) {
	for _, l := range []struct {
		args    []string
		size    int64
		profile uint64
	}{
		{[]string{"--mixed"}, 128 << 20, 0},
		{[]string{"--mixed", "-m", "dup", "-d", "dup"}, 256 << 20, ondisk.BlockGroupDup},
	} {
		t.Run(fmt.Sprint(l.args), func(t *testing.T) {
			img := mkfs(t, l.size, l.args...)
			im := openImage(t, img)
			before := len(im.fs.Groups().Groups())
			h := im.begin(t)
			for _, kind := range []uint64{ondisk.BlockGroupData, ondisk.BlockGroupMetadata} {
				if err := h.AllocChunk(kind); err != nil {
					t.Fatalf("allocate a chunk for %#x: %v", kind, err)
				}
			}
			h.End()
			gs := im.fs.Groups().Groups()
			if len(gs) != before+2 {
				t.Fatalf("%d groups after two chunk allocations, %d before", len(gs), before)
			}
			mixedBGKinds(t, im, l.profile)
			want := uint64(l.size/10+16<<20-1) / (16 << 20) * (16 << 20)
			if g := gs[before]; g.Length != want {
				t.Errorf("new chunk %v: want %d MiB (a tenth of the device, rounded up to 16 MiB)", g, want>>20)
			}
			// tree blocks and data land in the new groups too
			h = im.begin(t)
			o := newOp(t, h)
			r := rand.New(rand.NewSource(1))
			for i := 0; i < 40; i++ {
				ino := ondisk.ObjectID(300 + i)
				o.createFile(5, ino, fmt.Sprintf("f%d", i))
				if _, err := o.writeNew(5, ino, 0, randBytes(r, 1<<20)); err != nil {
					t.Fatal(err)
				}
			}
			h.End()
			im.close(t)
			checktest.Image(t, img)
			if testutil.HaveRootLoop() {
				dir := testutil.LoopMount(t, img, "ro")
				if ents, err := os.ReadDir(dir); err != nil || len(ents) != 40 {
					t.Errorf("Linux lists %d entries (%v), want 40", len(ents), err)
				}
				testutil.Unmount(t, dir)
			}
		})
	}
}

// TestMixedBGFillDeleteRefill is TestENOSPC on mixed images: files fill
// the shared groups until a data allocation fails with ENOSPC (never a
// tree block allocation: data leaves the global reserve), the commit works,
// deleting everything on the full filesystem works, and refilling stores
// about as much; every new chunk is DATA|METADATA.
func TestMixedBGFillDeleteRefill(t *testing.T) {
	for _, l := range []struct {
		args    []string
		size    int64
		profile uint64
	}{
		{[]string{"--mixed"}, 128 << 20, 0},
		{[]string{"--mixed"}, 1 << 30, 0},
		{[]string{"--mixed", "-m", "dup", "-d", "dup"}, 256 << 20, ondisk.BlockGroupDup},
		{[]string{"--mixed", "-R", "^free-space-tree"}, 128 << 20, 0},
	} {
		t.Run(fmt.Sprint(l.size>>20, "MiB", l.args), func(t *testing.T) {
			img := mkfs(t, l.size, l.args...)
			enospcFillDeleteRefill(t, img)
			im := openImage(t, img)
			mixedBGKinds(t, im, l.profile)
			im.close(t)
		})
	}
}

// TestMixedBGMetadataFill fills a mixed image with xattrs, each operation
// reserving first, until Reserve refuses: the commit then still works (it
// uses the global reserve, which data could not take either), and
// deleting everything works too.
func TestMixedBGMetadataFill(t *testing.T) {
	img := mkfs(t, 128<<20, "--mixed")
	im := openImage(t, img)
	names := fillXattrs(t, im)
	s := im.fs.Groups().Space(ondisk.BlockGroupMetadata)
	t.Logf("%d xattrs; data+metadata %d MiB, free %d KiB, pinned %d KiB; device unallocated %d MiB", len(names),
		s.Total>>20, s.Free>>10, s.Pinned>>10, im.fs.Groups().Device().Unallocated()>>20)
	// data cannot have what metadata keeps
	h := im.begin(t)
	if _, err := h.AllocData(1 << 20); !isNoSpace(err) {
		t.Errorf("1 MiB data extent on a metadata-full mixed filesystem: %v, want ENOSPC", err)
	}
	h.End()
	mixedBGKinds(t, im, 0)
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
	im.close(t)
	checktest.Image(t, img)
}
