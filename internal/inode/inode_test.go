package inode

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

func openFSTree(t *testing.T, img string) *ctree.Tree {
	tr, err := testimg.OpenFS(t, img).Tree(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestNameHashMatchesProgs checks NameHash against the DIR_ITEM keys
// btrfs-progs wrote, as printed by dump-tree.
func TestNameHashMatchesProgs(t *testing.T) {
	_, img := testimg.MkfsSource(t, testimg.SourceOptions{Seed: 7, ManyFiles: 50}, 256<<20, "-n", "4096")
	out := []byte(testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", "fs", img))
	re := regexp.MustCompile(`key \(\d+ (?:DIR_ITEM|XATTR_ITEM) (\d+)\)[^\n]*\n[^\n]*\n[^\n]*\n\s+name: ([^\n]*)`)
	ms := re.FindAllSubmatch(out, -1)
	if len(ms) < 50 {
		t.Fatalf("only %d DIR_ITEM/XATTR_ITEM entries parsed", len(ms))
	}
	for _, m := range ms {
		want, _ := strconv.ParseUint(string(m[1]), 10, 64)
		if got := item.NameHash(m[2]); got != want {
			t.Errorf("NameHash(%q) = %d, progs %d", m[2], got, want)
		}
	}
	t.Logf("%d hashes match", len(ms))
}

// TestDirectoryWalk lists every directory, looks every name up through the
// hash, and checks back references, paths, xattrs and extents.
func TestDirectoryWalk(t *testing.T) {
	src, img := testimg.MkfsSource(t, testimg.SourceOptions{Seed: 3, ManyFiles: 500}, 256<<20, "-n", "4096", "-m", "single")
	tr := openFSTree(t, img)
	var walk func(ino ondisk.ObjectID, rel string)
	n := 0
	walk = func(ino ondisk.ObjectID, rel string) {
		var ents []DirEntry
		if err := ReadDir(tr, ino, 0, func(e DirEntry) bool { ents = append(ents, e); return true },
			func(err error) { t.Errorf("clean image: %v", err) }); err != nil {
			t.Fatal(err)
		}
		srcEnts, _ := os.ReadDir(filepath.Join(src, rel))
		if len(ents) != len(srcEnts) {
			t.Fatalf("%s: %d entries, source has %d", rel, len(ents), len(srcEnts))
		}
		for _, e := range ents {
			n++
			got, err := Lookup(tr, ino, e.Name)
			if err != nil || got.Location != e.Location || got.Type != e.Type {
				t.Fatalf("lookup %s/%s: %+v %v, readdir says %+v", rel, e.Name, got, err, e)
			}
			child := e.Location.ObjectID
			refs, err := Refs(tr, child)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range refs {
				found = found || (r.Parent == ino && r.Name == e.Name && r.Index == e.Index)
			}
			if !found {
				t.Fatalf("%s/%s: no back reference among %+v", rel, e.Name, refs)
			}
			p := filepath.Join(rel, e.Name)
			if _, err := Read(tr, child); err != nil {
				t.Fatal(err)
			}
			if e.Type == item.FTDir {
				if err := CheckDirLink(tr, ino, e); err != nil {
					t.Fatalf("clean image: %v", err)
				}
				if got, err := Path(tr, child, ondisk.FirstFreeObjectID); err != nil || got != p {
					t.Fatalf("Path(%d) = %q %v, want %q", child, got, err, p)
				}
				walk(child, p)
			}
			if e.Type == item.FTRegFile {
				fi, _ := os.Stat(filepath.Join(src, p))
				var end uint64
				Extents(tr, child, func(fe FileExtent) bool { end = fe.End(); return true })
				if fi.Size() > 0 && end < uint64(fi.Size()) {
					t.Fatalf("%s: extents end at %d, size %d", p, end, fi.Size())
				}
				spans, err := MapAt(tr, child, 0, 100)
				if err != nil || (fi.Size() > 0 && spans[0].Extent == nil) {
					t.Fatalf("%s: MapAt 0: %+v %v", p, spans, err)
				}
			}
		}
	}
	walk(ondisk.FirstFreeObjectID, "")
	t.Logf("%d entries", n)

	if _, err := Lookup(tr, ondisk.FirstFreeObjectID, "no such name"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing name: %v", err)
	}
	if _, err := Read(tr, 1<<40); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing inode: %v", err)
	}
	// xattrs of files/size-1 via list and via hash
	e, _ := Lookup(tr, ondisk.FirstFreeObjectID, "files")
	f, _ := Lookup(tr, e.Location.ObjectID, "size-1")
	xs, err := Xattrs(tr, f.Location.ObjectID)
	if err != nil || len(xs) != 2 {
		t.Fatalf("xattrs: %+v %v", xs, err)
	}
	for _, x := range xs {
		v, err := GetXattr(tr, f.Location.ObjectID, x.Name)
		if err != nil || string(v) != string(x.Value) {
			t.Fatalf("getxattr %s: %q %v", x.Name, v, err)
		}
	}
	// a hole past the last extent of a file
	spans, err := MapAt(tr, f.Location.ObjectID, 1<<30, 0)
	if err != nil || len(spans) != 1 || spans[0].Extent != nil || spans[0].Start != 1 {
		t.Fatalf("hole after a 1-byte inline file: %+v %v", spans, err)
	}
}

func TestDecodeDamaged(t *testing.T) {
	// every truncation of a valid dir item must error, never panic
	le := binary.LittleEndian
	di := make([]byte, item.DirItemHeaderSize+5+3)
	le.PutUint16(di[25:], 3)
	le.PutUint16(di[27:], 5)
	for i := range di {
		if _, err := dirItems(di[:i]); i > 0 && err == nil {
			t.Fatalf("truncated to %d: no error", i)
		}
	}
	if d, err := dirItems(di); err != nil || len(d) != 1 || len(d[0].Name) != 5 || len(d[0].Data) != 3 {
		t.Fatalf("valid item: %+v %v", d, err)
	}
	for _, b := range [][]byte{nil, make([]byte, 20), append(make([]byte, 20), 9)} {
		if _, err := decodeFileExtent(0, b); err == nil {
			t.Fatalf("file extent %x: no error", b)
		}
	}
	fe := make([]byte, item.FileExtentItemSize)
	fe[20] = ExtentRegular
	le.PutUint64(fe[21:], 4096)
	if _, err := decodeFileExtent(0, fe); err == nil {
		t.Fatal("num_bytes 0 accepted")
	}
}
