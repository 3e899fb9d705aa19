package gobtrfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
)

// newImage makes an empty 256 MiB image with one file in it.
func newImage(t *testing.T) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("/hello", []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return img
}

// flipByte inverts the byte at off of the file at path.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestErrNotBtrfs: files holding no btrfs (another content, too short,
// empty) fail to open with ErrNotBtrfs, for readers and writers; a btrfs
// image whose superblocks are all damaged is corrupt, not "not btrfs".
func TestErrNotBtrfs(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int64{"empty": 0, "short": 4096, "zeros": 128 << 20} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		_, err := gobtrfs.Open(p, nil)
		if !errors.Is(err, gobtrfs.ErrNotBtrfs) {
			t.Errorf("Open %s: %v, want ErrNotBtrfs", name, err)
		} else if !strings.Contains(err.Error(), p) {
			t.Errorf("Open %s: %v does not name the file", name, err)
		}
		if _, err := gobtrfs.OpenRW(p, nil); !errors.Is(err, gobtrfs.ErrNotBtrfs) {
			t.Errorf("OpenRW %s: %v, want ErrNotBtrfs", name, err)
		}
		if _, err := gobtrfs.OpenReaderAt(strings.NewReader(strings.Repeat("x", int(min(size, 1<<20)))), min(size, 1<<20), nil); !errors.Is(err, gobtrfs.ErrNotBtrfs) {
			t.Errorf("OpenReaderAt %s: %v, want ErrNotBtrfs", name, err)
		}
	}

	bad := newImage(t)
	flipByte(t, bad, 64<<10+0x100) // primary checksum fails
	flipByte(t, bad, 64<<20+0x100) // so does the first mirror's
	_, err := gobtrfs.Open(bad, nil)
	if err == nil || errors.Is(err, gobtrfs.ErrNotBtrfs) || !errors.Is(err, gobtrfs.ErrCorrupt) {
		t.Errorf("Open with damaged superblocks: %v, want ErrCorrupt and not ErrNotBtrfs", err)
	}
}

// TestSuperMirror: SuperMirror counts from 0 as btrfs-progs' -s/-u do.
func TestSuperMirror(t *testing.T) {
	img := newImage(t)
	flipByte(t, img, 64<<10+0x100) // the primary's checksum fails
	open := func(o gobtrfs.Options) (warnings []string, err error) {
		o.Warn = func(s string) { warnings = append(warnings, s) }
		f, err := gobtrfs.Open(img, &o)
		if err == nil {
			_, err = f.ReadFile("hello")
			f.Close()
		}
		return warnings, err
	}
	w, err := open(gobtrfs.Options{})
	if err != nil || !strings.Contains(strings.Join(w, "\n"), "using mirror 1") {
		t.Errorf("default: %v, warnings %q; want the fallback to mirror 1 told", err, w)
	}
	if _, err := open(gobtrfs.Options{SuperMirror: 0, ForceSuperMirror: true}); err == nil {
		t.Errorf("forced primary: opened a damaged primary superblock")
	}
	w, err = open(gobtrfs.Options{SuperMirror: 1})
	if err != nil || len(w) != 0 {
		t.Errorf("mirror 1: %v, warnings %q; want a quiet open", err, w)
	}
	if _, err := open(gobtrfs.Options{SuperMirror: 2}); err == nil {
		t.Errorf("mirror 2 (256 GiB) of a 256 MiB image opened")
	}
	for _, n := range []int{-1, 3} {
		if _, err := open(gobtrfs.Options{SuperMirror: n}); err == nil || !strings.Contains(err.Error(), "only 0..2") {
			t.Errorf("mirror %d: %v, want a clear error", n, err)
		}
	}
}

// TestFSClosed: every call on an FS or its files after Close fails with
// fs.ErrClosed instead of reading a closed device.
func TestFSClosed(t *testing.T) {
	img := newImage(t)
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile("hello")
	if err != nil {
		t.Fatal(err)
	}
	d, err := fsys.OpenFile(".")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := fsys.ReadDir(".")
	if err != nil || len(ents) == 0 {
		t.Fatal(err, ents)
	}
	if err := fsys.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	calls := map[string]func() error{
		"Open":      func() error { _, err := fsys.Open("hello"); return err },
		"Stat":      func() error { _, err := fsys.Stat("hello"); return err },
		"Lstat":     func() error { _, err := fsys.Lstat("hello"); return err },
		"ReadDir":   func() error { _, err := fsys.ReadDir("."); return err },
		"ReadFile":  func() error { _, err := fsys.ReadFile("hello"); return err },
		"fs.Read":   func() error { _, err := fs.ReadFile(fsys, "hello"); return err },
		"ReadLink":  func() error { _, err := fsys.ReadLink("hello"); return err },
		"Xattrs":    func() error { _, err := fsys.Xattrs("hello"); return err },
		"GetXattr":  func() error { _, err := fsys.GetXattr("hello", "user.x"); return err },
		"Subvols":   func() error { _, err := fsys.Subvolumes(); return err },
		"Close":     fsys.Close,
		"f.Read":    func() error { _, err := f.Read(buf); return err },
		"f.ReadAt":  func() error { _, err := f.ReadAt(buf, 0); return err },
		"f.Seek":    func() error { _, err := f.Seek(0, io.SeekStart); return err },
		"f.Stat":    func() error { _, err := f.Stat(); return err },
		"d.ReadDir": func() error { _, err := d.ReadDir(-1); return err },
		"e.Info":    func() error { _, err := ents[0].Info(); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s after Close: %v, want fs.ErrClosed", name, err)
		}
	}
}

// TestMkfsOptions: every MkfsOptions field reaches the superblock, bad
// values are refused before anything is written, and an existing
// filesystem is overwritten only with Force.
func TestMkfsOptions(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	o := gobtrfs.MkfsOptions{Size: 200 << 20, NodeSize: 8192, SectorSize: 4096, Csum: "sha256",
		MetadataProfile: "single", DataProfile: "single", Features: "^free-space-tree", Label: "lbl",
		UUID: "0123-4567-89ab-cdef-0123-4567-89ab-cdef"}
	if err := gobtrfs.Mkfs(img, o); err != nil {
		t.Fatal(err)
	}
	sb := testimg.OpenFS(t, img).Super
	if got := strings.TrimRight(string(sb.Label[:]), "\x00"); got != "lbl" {
		t.Errorf("label %q", got)
	}
	if sb.TotalBytes != 200<<20 || sb.NodeSize != 8192 || sb.SectorSize != 4096 || csum.Type(sb.CsumType) != csum.SHA256 {
		t.Errorf("superblock: total %d nodesize %d sectorsize %d csum %d", sb.TotalBytes, sb.NodeSize, sb.SectorSize, sb.CsumType)
	}
	if got := sb.FSID.String(); got != "01234567-89ab-cdef-0123-456789abcdef" {
		t.Errorf("fsid %s", got)
	}
	if sb.CompatROFlags&ondisk.CompatROFreeSpaceTree != 0 {
		t.Errorf("^free-space-tree: the feature is on")
	}

	if err := gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{}); err == nil || !strings.Contains(err.Error(), "Force") {
		t.Errorf("Mkfs over a filesystem without Force: %v", err)
	}
	if err := gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{Force: true, Label: "again"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(img); st.Size() != 200<<20 {
		t.Errorf("forced mkfs changed the file size to %d", st.Size())
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	fsys.Close()

	for _, bad := range []gobtrfs.MkfsOptions{{Csum: "md5"}, {UUID: "xyz"}, {Features: "no-such"},
		{MetadataProfile: "raid1"}, {NodeSize: 3000}, {Size: 1 << 20}, {Rootdir: filepath.Join(dir, "none")}} {
		p := filepath.Join(dir, "bad")
		if err := gobtrfs.Mkfs(p, bad); err == nil {
			t.Errorf("Mkfs %+v succeeded", bad)
		}
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Mkfs %+v left the file behind", bad)
		}
	}
	var warned []string
	o = gobtrfs.MkfsOptions{SectorSize: 8192, NodeSize: 16384, Warn: func(s string) { warned = append(warned, s) }}
	if err := gobtrfs.Mkfs(filepath.Join(dir, "8k"), o); err != nil || len(warned) != 1 || !strings.Contains(warned[0], "not be mountable") {
		t.Errorf("sectorsize 8192: %v, warnings %q; want one about mounting", err, warned)
	}
	if err := gobtrfs.Mkfs(dir, gobtrfs.MkfsOptions{}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Mkfs of a directory: %v", err)
	}
	if err := gobtrfs.CreateImage(img, 256<<20); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateImage over an existing file: %v", err)
	}
}
