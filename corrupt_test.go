package gobtrfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
)

// treeBlock is one tree block of an image and where its copies are.
type treeBlock struct {
	tree     ondisk.ObjectID
	logical  ondisk.LogicalAddr
	level    int
	physical []int64
}

// treeBlocks lists every block of every tree of img, read with our reader.
func treeBlocks(t testing.TB, img string) ([]treeBlock, *fsinfo.FSInfo) {
	t.Helper()
	info := testimg.OpenFS(t, img)
	ids := []ondisk.ObjectID{ondisk.RootTreeObjectID, ondisk.ChunkTreeObjectID}
	info.RootTree.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, _ []byte) bool {
		if k.Type == ondisk.RootItemKey {
			ids = append(ids, k.ObjectID)
		}
		return true
	})
	var out []treeBlock
	for _, id := range ids {
		tr, err := info.Tree(id)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.Walk(func(n *diskio.Node, err error) error {
			if err != nil {
				return err // the image is clean: every block must read
			}
			copies, _, err := info.Chunks.Map(n.Addr, uint64(info.Super.NodeSize))
			if err != nil {
				return err
			}
			b := treeBlock{tree: id, logical: n.Addr, level: n.Level()}
			for _, c := range copies {
				b.physical = append(b.physical, int64(c.Physical))
			}
			out = append(out, b)
			return nil
		})
		if err != nil {
			t.Fatalf("walk tree %d: %v", id, err)
		}
	}
	return out, info
}

// walkAll reads everything reachable: entries, stats, file data, link
// targets, xattrs, subvolumes. It returns every error met.
func walkAll(fsys *gobtrfs.FS) []error {
	var errs []error
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if _, err := fsys.Xattrs(p); err != nil {
			errs = append(errs, err)
		}
		switch {
		case fi.Mode().IsRegular():
			f, err := fsys.OpenFile(p)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			// bounded: a damaged size field can make a file of exabytes of holes
			if _, err := io.CopyN(io.Discard, f, 64<<20); err != nil && err != io.EOF {
				errs = append(errs, err)
			}
			for off, i := int64(0), 0; i < 10000; i++ {
				d, err := f.SeekData(off)
				if err != nil {
					break
				}
				h, err := f.SeekHole(d)
				if err != nil || h <= d {
					break
				}
				off = h
			}
			f.Close()
		case fi.Mode()&fs.ModeSymlink != 0:
			if _, err := fsys.ReadLink(p); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	if _, err := fsys.Subvolumes(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func patch(t testing.TB, img string, off int64, fn func([]byte), n int) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatal(err)
	}
	fn(buf)
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatal(err)
	}
}

func flip(b []byte) {
	for i := 200; i < 216 && i < len(b); i++ {
		b[i] ^= 0x5a
	}
}

func TestCorruptTreeBlock(t *testing.T) {
	for _, profile := range []string{"single", "dup"} {
		t.Run(profile, func(t *testing.T) {
			_, img := mkfsSource(t, "-m", profile, "-n", "4096")
			blocks, info := treeBlocks(t, img)
			var leaf treeBlock
			for _, b := range blocks {
				if b.tree == ondisk.FSTreeObjectID && b.level == 0 {
					leaf = b
				}
			}
			if leaf.logical == 0 {
				t.Fatal("no FS tree leaf found")
			}
			ns := int(info.Super.NodeSize)
			bad := filepath.Join(t.TempDir(), "bad")
			copyFile(t, img, bad)
			patch(t, bad, leaf.physical[0], flip, ns)
			var warnings []string
			fsys, err := gobtrfs.Open(bad, &gobtrfs.Options{Warn: func(s string) { warnings = append(warnings, s) }})
			if err != nil {
				t.Fatal(err)
			}
			errs := walkAll(fsys)
			fsys.Close()
			if profile == "dup" {
				if len(errs) > 0 {
					t.Fatalf("DUP metadata: the good copy should be used, got %v", errs[0])
				}
				if len(warnings) == 0 || !strings.Contains(strings.Join(warnings, "\n"), fmt.Sprint(leaf.logical)) {
					t.Fatalf("no warning naming block %d: %q", leaf.logical, warnings)
				}
				t.Logf("warning: %s", warnings[0])
				// now both copies
				patch(t, bad, leaf.physical[1], flip, ns)
				fsys, _ = gobtrfs.Open(bad, nil)
				errs = walkAll(fsys)
				fsys.Close()
			}
			if len(errs) == 0 {
				t.Fatal("corrupt leaf read without error")
			}
			msg := errs[0].Error()
			t.Logf("error: %s", msg)
			for _, want := range []string{fmt.Sprint(leaf.logical), "FS_TREE", "checksum mismatch"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if !errors.Is(errs[0], gobtrfs.ErrCorrupt) {
				t.Errorf("error is not ErrCorrupt: %v", errs[0])
			}
		})
	}
}

func TestCorruptRootTree(t *testing.T) {
	_, img := mkfsSource(t, "-m", "single")
	blocks, info := treeBlocks(t, img)
	for _, b := range blocks {
		if b.tree != ondisk.RootTreeObjectID {
			continue
		}
		bad := filepath.Join(t.TempDir(), "bad")
		copyFile(t, img, bad)
		patch(t, bad, b.physical[0], flip, int(info.Super.NodeSize))
		_, err := gobtrfs.Open(bad, nil)
		if err == nil {
			t.Fatal("open with a corrupt root tree succeeded")
		}
		t.Logf("error: %v", err)
		if !strings.Contains(err.Error(), "ROOT_TREE") || !strings.Contains(err.Error(), fmt.Sprint(b.logical)) {
			t.Errorf("error does not name the tree and address: %v", err)
		}
		return
	}
}

func TestCorruptData(t *testing.T) {
	src, img := mkfsSource(t, "-m", "single", "--csum", "xxhash")
	_, info := treeBlocks(t, img)
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := fsys.Stat("files/size-1048576")
	ino := st.Sys().(*gobtrfs.Stat).Ino
	fsys.Close()
	// find the file's first data extent through dump-tree's view of our reader
	var logical ondisk.LogicalAddr
	tr, _ := info.Tree(ondisk.FSTreeObjectID)
	tr.Range(ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.ExtentDataKey},
		ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.ExtentDataKey, Offset: 0},
		func(k ondisk.Key, data []byte) bool {
			fe, err := item.DecodeFileExtentItem(data)
			if err == nil {
				logical = fe.DiskBytenr + ondisk.LogicalAddr(fe.Offset)
			}
			return false
		})
	if logical == 0 {
		t.Fatal("no extent found")
	}
	copies, _, err := info.Chunks.Map(logical+8192, 4096)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	copyFile(t, img, bad)
	patch(t, bad, int64(copies[0].Physical), flip, 4096)

	fsys, err = gobtrfs.Open(bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.ReadFile("files/size-1048576")
	fsys.Close()
	var de *gobtrfs.DataError
	if !errors.As(err, &de) || !errors.Is(err, gobtrfs.ErrCorrupt) {
		t.Fatalf("want a DataError that is ErrCorrupt, got %v", err)
	}
	t.Logf("error: %v", err)
	if de.Ino != ino || de.FileOffset != 8192 || de.Logical != uint64(logical)+8192 {
		t.Errorf("error names inode %d offset %d logical %d; want %d, 8192, %d", de.Ino, de.FileOffset,
			de.Logical, ino, uint64(logical)+8192)
	}
	// without verification the (damaged) data reads, differing only there
	fsys, _ = gobtrfs.Open(bad, &gobtrfs.Options{NoVerifyDataCsum: true})
	got, err := fsys.ReadFile("files/size-1048576")
	fsys.Close()
	want, _ := os.ReadFile(filepath.Join(src, "files/size-1048576"))
	if err != nil || len(got) != len(want) || bytes.Equal(got[8192:12288], want[8192:12288]) ||
		!bytes.Equal(got[:8192], want[:8192]) {
		t.Fatalf("--no-verify read: err %v", err)
	}
}

func TestTruncatedImage(t *testing.T) {
	_, img := mkfsSource(t, "-m", "single")
	fi, _ := os.Stat(img)
	for _, size := range []int64{0, 4096, 65536 + 2048, 1 << 20, 8 << 20, 32 << 20, fi.Size() / 2} {
		bad := filepath.Join(t.TempDir(), "bad")
		copyFile(t, img, bad)
		if err := os.Truncate(bad, size); err != nil {
			t.Fatal(err)
		}
		fsys, err := gobtrfs.Open(bad, nil)
		if err != nil {
			t.Logf("size %d: open: %v", size, err)
			continue
		}
		errs := walkAll(fsys)
		fsys.Close()
		if len(errs) > 0 {
			t.Logf("size %d: %d errors, first: %v", size, len(errs), errs[0])
		} else {
			t.Logf("size %d: read everything (data lies before the cut)", size)
		}
	}
}

// TestCorruptSweep damages every tree block in turn, with the checksum
// recomputed so the damage reaches the tree-checker and the item decoders,
// and reads the whole filesystem: errors are fine, panics are not.
func TestCorruptSweep(t *testing.T) {
	_, img := mkfsSource(t, "-m", "single", "-n", "4096")
	blocks, info := treeBlocks(t, img)
	base, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	ns := int(info.Super.NodeSize)
	ct := info.Csum
	offsets := []int{0x60, 101 + 17, 101 + 25 + 10, ns - 60, ns - 1}
	if testing.Short() {
		offsets = offsets[:2]
	}
	n := 0
	for _, b := range blocks {
		for _, o := range offsets {
			img := &overlay{base: base, off: b.physical[0], patch: mutate(base[b.physical[0]:b.physical[0]+int64(ns)], o, ct)}
			fsys, err := gobtrfs.OpenReaderAt(img, int64(len(base)), nil)
			if err != nil {
				continue
			}
			walkAll(fsys)
			n++
		}
	}
	t.Logf("%d corrupted images read without panic (%d blocks)", n, len(blocks))
}

// TestCorruptDataDupFallback: with DUP data, a damaged first copy is read
// from the second with a warning; both damaged is an error.
func TestCorruptDataDupFallback(t *testing.T) {
	src, img := mkfsSource(t, "-m", "dup", "-d", "dup")
	want, _ := os.ReadFile(filepath.Join(src, "files/size-1048576"))
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	var at []int
	for off := 0; ; {
		i := bytes.Index(raw[off:], want[:65536])
		if i < 0 {
			break
		}
		at = append(at, off+i)
		off += i + 1
	}
	if len(at) != 2 {
		t.Fatalf("found the file's data %d times in the image, want 2 (DUP)", len(at))
	}
	raw[at[0]+100] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, raw, 0o644)
	var warnings []string
	fsys, err := gobtrfs.Open(bad, &gobtrfs.Options{Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fsys.ReadFile("files/size-1048576")
	fsys.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("DUP fallback read: %v", err)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "used copy 2") {
		t.Fatalf("no fallback warning: %q", warnings)
	}
	t.Logf("warning: %s", warnings[0])
	raw[at[1]+100] ^= 0xff
	os.WriteFile(bad, raw, 0o644)
	fsys, _ = gobtrfs.Open(bad, nil)
	_, err = fsys.ReadFile("files/size-1048576")
	fsys.Close()
	if !errors.Is(err, gobtrfs.ErrCorrupt) {
		t.Fatalf("both copies damaged: %v", err)
	}
	t.Logf("error: %v", err)
}
