package hostile_test

// Attack: a NODATACOW file whose one file extent is moved to file offset K
// with extent offset K (so its data ref offset key.off-offset stays 0 and
// still matches the extent item's EXTENT_DATA_REF). The tree-checker only
// checks alignment; fsops' write path decodes the item with
// item.DecodeFileExtentItem and never checks offset+num_bytes <=
// disk_num_bytes, canNoCow finds the (genuine) extent item with a single
// matching ref, and writeInPlace writes at disk_bytenr+K: any logical address
// above the extent, here the DEV tree's root block.
//
// Run:
//   go test -overlay /work/notes/attack/overlay.json -count=1 -run TestAttackNocowOffsetEscape ./internal/testimg/hostile
import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

func TestAttackNocowOffsetEscape(t *testing.T) {
	img := filepath.Join(t.TempDir(), "nocow.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("/victim", bytes.Repeat([]byte("v"), 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := fsys.Lstat("victim")
	ino := fi.Sys().(*gobtrfs.Stat).Ino
	fsys.Close()

	var target, k uint64
	func() {
		p := hostile.Open(t, img)
		defer p.Close()
		fs5, err := p.Info().Tree(ondisk.FSTreeObjectID)
		if err != nil {
			t.Fatal(err)
		}
		ekey := ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.ExtentDataKey}
		path, exact, err := fs5.Search(ekey)
		if err != nil || !exact {
			t.Fatalf("extent item: %v %v", exact, err)
		}
		fe, err := item.DecodeFileExtentItem(path.Data())
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []ondisk.ObjectID{ondisk.DevTreeObjectID, ondisk.ChunkTreeObjectID, ondisk.CsumTreeObjectID} {
			tr, err := p.Info().Tree(id)
			if err == nil && uint64(tr.Root) > uint64(fe.DiskBytenr) {
				target = uint64(tr.Root)
				t.Logf("target: tree %s root block %d; victim extent at %d", ondisk.TreeName(id), target, fe.DiskBytenr)
				break
			}
		}
		if target == 0 {
			t.Skip("no tree root above the data extent in this layout")
		}
		k = target - uint64(fe.DiskBytenr)
		leaf, slot := path.Leaf().Addr, path.Slots[0]
		p.EditBlock(leaf, func(b []byte) {
			kb := b[ondisk.HeaderSize+slot*ondisk.ItemHeaderSize:]
			nk := ekey
			nk.Offset = k
			nk.Encode(kb)
			it := ondisk.DecodeItemHeader(b, slot)
			d := b[ondisk.HeaderSize+int(it.Offset):]
			binary.LittleEndian.PutUint64(d[37:], k)    // extent offset
			binary.LittleEndian.PutUint64(d[45:], 4096) // num_bytes
		})
		p.EditItem(ondisk.FSTreeObjectID, ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.InodeItemKey}, func(d []byte) {
			binary.LittleEndian.PutUint64(d[64:], binary.LittleEndian.Uint64(d[64:])|item.InodeNoDataCow|item.InodeNoDataSum)
		})
	}()
	if r, _ := testutil.ProgsCheck(img); !r.Clean() {
		t.Logf("btrfs check of the crafted image (before the write): %s", r)
	}
	w, err = gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := w.WriteAt("/victim", bytes.Repeat([]byte{0xAA}, 4096), int64(k))
	cerr := w.Close()
	t.Logf("WriteAt at %d: %v; Close: %v", k, werr, cerr)
	r, _ := testutil.ProgsCheck(img)
	t.Logf("btrfs check after the write: %s", r)
	out, err := []byte(r.Output), r.Err
	// RW.WriteAt may gather the write and report its refusal at Close.
	accepted := werr == nil && cerr == nil
	if accepted && bytes.Contains(out, []byte("csum mismatch")) || bytes.Contains(out, []byte("bad tree block")) || err != nil && accepted {
		t.Fatalf("a write through the RW path into a file of a crafted image overwrote tree block %d (exit 0)", target)
	}
}
