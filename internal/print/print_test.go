package print

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

func TestKeyString(t *testing.T) {
	for _, c := range []struct {
		k    ondisk.Key
		want string
	}{
		{ondisk.Key{ObjectID: 256, Type: ondisk.InodeItemKey}, "(256 INODE_ITEM 0)"},
		{ondisk.Key{ObjectID: 1, Type: ondisk.DevItemKey, Offset: 1}, "(DEV_ITEMS DEV_ITEM 1)"},
		{ondisk.Key{ObjectID: 256, Type: ondisk.ChunkItemKey, Offset: 22020096}, "(FIRST_CHUNK_TREE CHUNK_ITEM 22020096)"},
		{ondisk.Key{ObjectID: 5, Type: ondisk.RootItemKey, Offset: ^uint64(0)}, "(FS_TREE ROOT_ITEM 18446744073709551615)"},
		{ondisk.Key{ObjectID: 256, Type: ondisk.DirIndexKey, Offset: ^uint64(0)}, "(256 DIR_INDEX -1)"},
		{ondisk.Key{ObjectID: ondisk.TreeRelocObjectID, Type: ondisk.RootItemKey, Offset: 5}, "(TREE_RELOC ROOT_ITEM FS_TREE)"},
		{ondisk.Key{ObjectID: 0, Type: ondisk.QgroupInfoKey, Offset: 1<<48 | 100}, "(0 QGROUP_INFO 1/100)"},
		{ondisk.Key{ObjectID: 256, Type: ondisk.QgroupRelationKey, Offset: 1<<48 | 100}, "(0/256 QGROUP_RELATION 1/100)"},
		{ondisk.Key{ObjectID: 0x1234, Type: ondisk.UUIDKeySubvol, Offset: 0xabc}, "(0x0000000000001234 UUID_KEY_SUBVOL 0x0000000000000abc)"},
		{ondisk.Key{ObjectID: 0, Type: ondisk.PersistentItemKey, Offset: 1}, "(DEV_STATS PERSISTENT_ITEM 1)"},
		{ondisk.Key{ObjectID: ondisk.FreeSpaceObjectID, Type: 0, Offset: 1 << 20}, "(FREE_SPACE UNTYPED 1048576)"},
		{ondisk.Key{ObjectID: 300, Type: ondisk.ExtentOwnerRefKey}, "(300 UNKNOWN.172 0)"},
		{ondisk.Key{ObjectID: 12, Type: ondisk.RootItemKey}, "(12 ROOT_ITEM 0)"},
	} {
		if got := KeyString(c.k); got != c.want {
			t.Errorf("KeyString(%+v) = %q, want %q", c.k, got, c.want)
		}
	}
}

func TestFlagStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{bgFlagsString(ondisk.BlockGroupData), "DATA|single"},
		{bgFlagsString(ondisk.BlockGroupData | ondisk.BlockGroupMetadata), "DATA|METADATA|single"},
		{bgFlagsString(ondisk.BlockGroupMetadata | ondisk.BlockGroupDup), "METADATA|DUP"},
		{bgFlagsString(ondisk.BlockGroupSystem | ondisk.BlockGroupRaid1C3), "SYSTEM|RAID1C3"},
		{extentFlagsString(2 | 256), "TREE_BLOCK|FULL_BACKREF"},
		{extentFlagsString(256), "|FULL_BACKREF"},
		{inodeFlagsString(0), "none"},
		{inodeFlagsString(3 | 1<<31), "NODATASUM|NODATACOW"},
		{qgroupStatusFlagsString(5), "ON|INCONSISTENT"},
		{string(cString([]byte("ab\x00cd"), -1)), "ab"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func mkfsImage(t *testing.T, args ...string) string {
	t.Helper()
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	for i := 0; i < 200; i++ {
		os.WriteFile(filepath.Join(src, "d", strings.Repeat("f", i%50+1)+string(rune('a'+i%26))), bytes.Repeat([]byte{byte(i)}, i*37), 0o644)
	}
	os.Symlink("d", filepath.Join(src, "link"))
	img := filepath.Join(dir, "img")
	testutil.MkfsRootdir(t, src, img, 256<<20, args...)
	return img
}

// TestDumpTreeAndSuperMatchProgs compares DumpTree and DumpSuper with
// btrfs-progs on a small mkfs image (the CLI tests in cmd/gobtrfs cover many
// more images and options). The first line of dump-tree, the program banner,
// is the only thing dropped.
func TestDumpTreeAndSuperMatchProgs(t *testing.T) {
	img := mkfsImage(t, "-n", "4096")
	fs := testimg.OpenFS(t, img)
	var got bytes.Buffer
	if err := DumpTree(&got, fs, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	want, err := exec.Command("btrfs", "inspect-internal", "dump-tree", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	want = want[bytes.IndexByte(want, '\n')+1:]
	if !bytes.Equal(want, got.Bytes()) {
		t.Errorf("dump-tree differs:\n%s", firstDiff(string(want), got.String()))
	}
	got.Reset()
	if err := DumpSuper(&got, fs.Super, true); err != nil {
		t.Fatal(err)
	}
	want, err = exec.Command("btrfs", "inspect-internal", "dump-super", "-f", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	// drop the command's "superblock: bytenr=..." and dashes lines and its final blank line
	lines := strings.SplitN(string(want), "\n", 3)
	wantBody := strings.TrimSuffix(lines[2], "\n")
	if wantBody != got.String() {
		t.Errorf("dump-super differs:\n%s", firstDiff(wantBody, got.String()))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %q\n+ %q", i+1, x, y)
		}
	}
	return "(equal)"
}

// TestDumpTreeCorruptBlock damages one leaf of the fs tree: the dump must
// go on with the other trees and report the bad block through Warn.
func TestDumpTreeCorruptBlock(t *testing.T) {
	img := mkfsImage(t, "-n", "4096", "-m", "single")
	fs := testimg.OpenFS(t, img)
	ri, _, err := fs.RootItem(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	copies, _, err := fs.Chunks.Map(ri.Bytenr, 4096)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xde, 0xad}, int64(copies[0].Physical)+200)
	f.Close()
	fs = testimg.OpenFS(t, img)
	var warnings []string
	var out bytes.Buffer
	err = DumpTree(&out, fs, TreeOptions{Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) == 0 || !strings.Contains(strings.Join(warnings, "\n"), "checksum") {
		t.Errorf("no checksum warning for the damaged block: %q", warnings)
	}
	for _, s := range []string{"extent tree key", "checksum tree key", "total bytes"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q after the damaged fs tree", s)
		}
	}
}

// FuzzPrintLeaf prints leaves whose items have arbitrary types and bytes
// (the tree-checker validates layout, not item contents): printing must
// never panic, whatever the items hold.
func FuzzPrintLeaf(f *testing.F) {
	f.Add([]byte{1, 5, 160}, []byte{})
	f.Add([]byte{228, 0, 80, 168, 1, 60, 84, 2, 40, 249, 0, 48}, bytes.Repeat([]byte{0xff, 1, 0}, 100))
	f.Add([]byte{128, 7, 200, 169, 3, 33, 248, 250, 200, 108, 1, 21}, []byte{2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, layout, payload []byte) {
		const nodeSize = 4096
		leaf := make([]byte, nodeSize)
		h := ondisk.Header{Level: 0, Owner: 5, Bytenr: 1 << 20}
		end := diskio.LeafDataSize(nodeSize)
		nr := 0
		for i := 0; i+2 < len(layout) && (nr+1)*ondisk.ItemHeaderSize <= end-int(layout[i+2])*4; i += 3 {
			size := int(layout[i+2]) * 4
			end -= size
			k := ondisk.Key{ObjectID: ondisk.ObjectID(layout[i+1]), Type: ondisk.ItemType(layout[i]), Offset: uint64(i)}
			if layout[i+1] > 200 {
				k.ObjectID = ^ondisk.ObjectID(0) - ondisk.ObjectID(255-layout[i+1])
			}
			ondisk.ItemHeader{Key: k, Offset: uint32(end), Size: uint32(size)}.Encode(leaf, nr)
			for j := 0; j < size && len(payload) > 0; j++ {
				leaf[ondisk.HeaderSize+end+j] = payload[(j+i)%len(payload)]
			}
			nr++
		}
		h.NumItems = uint32(nr)
		h.Encode(leaf)
		for _, ct := range []csum.Type{csum.CRC32C, csum.SHA256} {
			p := &printer{w: bufio.NewWriter(io.Discard), nodeSize: nodeSize, sectorSize: 4096, csumType: ct,
				csumItems: true, csumHeaders: true}
			p.printLeaf(&diskio.Node{Addr: 1 << 20, Data: leaf})
			p.w.Flush()
		}
	})
}
