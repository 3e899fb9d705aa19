package main

// Restore's own guards, reached with a fake tree behind rsFile: the library
// refuses most of this damage before restore sees it (entries naming their
// own directory, an ancestor or the root; names with '/' or NUL), so only
// a fake tree shows that restore stays safe without that help.

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
)

type fakeNode struct {
	st      gobtrfs.Stat
	data    []byte // regular file content (then a hole up to st.Size)
	target  string // symlink target
	ents    []fakeEnt
	readErr error // every read fails with it
}

type fakeEnt struct {
	name string
	n    *fakeNode
}

func fakeDir(ino uint64, ents ...fakeEnt) *fakeNode {
	n := &fakeNode{st: gobtrfs.Stat{Ino: ino, Subvol: 5, Nlink: 1, Mode: unix.S_IFDIR | 0o755}, ents: ents}
	for _, e := range ents {
		n.st.Size += 2 * int64(len(e.name))
	}
	return n
}

func fakeReg(ino uint64, data string) *fakeNode {
	return &fakeNode{st: gobtrfs.Stat{Ino: ino, Subvol: 5, Nlink: 1, Mode: unix.S_IFREG | 0o644, Size: int64(len(data))},
		data: []byte(data)}
}

type fakeFile struct{ n *fakeNode }

func (f fakeFile) Sys() *gobtrfs.Stat { st := f.n.st; return &st }
func (f fakeFile) Entries() ([]rsEntry, error) {
	out := make([]rsEntry, len(f.n.ents))
	for i, e := range f.n.ents {
		out[i] = e
	}
	return out, nil
}
func (f fakeFile) ReadAt(p []byte, off int64) (int, error) {
	if f.n.readErr != nil {
		return 0, f.n.readErr
	}
	if off >= f.n.st.Size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.n.st.Size-off)]
	clear(p)
	if off < int64(len(f.n.data)) {
		copy(p, f.n.data[off:])
	}
	return len(p), nil
}
func (f fakeFile) SeekData(off int64) (int64, error) {
	if off < int64(len(f.n.data)) {
		return off, nil
	}
	return 0, syscall.ENXIO
}
func (f fakeFile) SeekHole(off int64) (int64, error) { return max(off, int64(len(f.n.data))), nil }
func (f fakeFile) ReadLink() (string, error)         { return f.n.target, nil }
func (f fakeFile) Xattrs() ([]gobtrfs.Xattr, error)  { return nil, nil }
func (f fakeFile) Close() error                      { return nil }
func (e fakeEnt) Name() string                       { return e.name }
func (e fakeEnt) Open() (rsFile, error)              { return fakeFile{e.n}, nil }
func (e fakeEnt) Subvolume() (uint64, bool)          { return 0, false }
func fakeEntry(name string, n *fakeNode) fakeEnt     { return fakeEnt{name, n} }
func fakeErr(msg string) error                       { return errors.New(msg) }
func fakeBigUnreadable(ino uint64, size int64) *fakeNode {
	n := fakeReg(ino, "")
	n.data = make([]byte, size) // one data run of size bytes
	n.st.Size = size
	n.readErr = fakeErr("simulated media error")
	return n
}

// rdRunFake restores the fake tree root into dest in this process; a
// broken guard loops, so it fails after rdHostileTimeout.
func rdRunFake(t *testing.T, root *fakeNode, dest string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	o := defaultRestoreOptions()
	r := newRestorer(o, &stdout, &stderr)
	done := make(chan error, 1)
	go func() { done <- r.run(fakeFile{root}, dest) }()
	select {
	case err := <-done:
		return stderr.String(), err
	case <-time.After(rdHostileTimeout):
		t.Fatalf("restore of the fake tree did not end within %v", rdHostileTimeout)
		return "", nil
	}
}

// TestRestoreGuards: directory cycles (an entry naming its own directory,
// the root, an ancestor), a directory reached twice, unsafe and duplicate
// names, a directory whose size says entries are missing, an i_size of
// 2^62, and a data run that cannot be read, all end promptly with errors
// naming what is wrong, and the rest is restored.
func TestRestoreGuards(t *testing.T) {
	root := fakeDir(256)
	a := fakeDir(257)
	b := fakeDir(258)
	deep := fakeDir(259)
	huge := fakeReg(260, "xyz")
	huge.st.Size = 1 << 62
	lossy := fakeDir(262, fakeEntry("only", fakeReg(263, "only")))
	lossy.st.Size += 2 * int64(len("gone"))
	deep.ents = []fakeEnt{fakeEntry("to-a", a)}
	deep.st.Size = 2 * int64(len("to-a"))
	a.ents = []fakeEnt{
		fakeEntry("self", a), fakeEntry("up", root), fakeEntry("deep", deep),
		fakeEntry("f", fakeReg(261, "data")),
		fakeEntry("dup", fakeReg(264, "first")), fakeEntry("dup", fakeReg(265, "second")),
		fakeEntry("bad/name", fakeReg(266, "x")), fakeEntry("..", fakeReg(267, "x")), fakeEntry(".", fakeReg(268, "x")),
		fakeEntry("nul\x00", fakeReg(269, "x")), fakeEntry("", fakeReg(270, "x")),
		fakeEntry("huge", huge), fakeEntry("lossy", lossy),
		fakeEntry("unreadable", fakeBigUnreadable(271, 64<<20)),
	}
	for _, e := range a.ents {
		a.st.Size += 2 * int64(len(e.name))
	}
	b.ents = []fakeEnt{fakeEntry("again", a)}
	b.st.Size = 2 * int64(len("again"))
	root.ents = []fakeEnt{fakeEntry("a", a), fakeEntry("b", b)}
	root.st.Size = 2 * int64(len("a")+len("b"))

	dest := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	out, err := rdRunFake(t, root, dest)
	t.Logf("restore after %v: %v\n%s", time.Since(start).Round(time.Millisecond), err, out)
	if err == nil {
		t.Error("restore of a damaged tree succeeded")
	}
	for _, want := range []string{
		"out/a/self: directory cycle: the entry names directory inode 257",
		"out/a/up: directory cycle: the entry names directory inode 256",
		"out/a/deep/to-a: directory cycle: the entry names directory inode 257",
		"out/b/again: the entry names directory inode 257 (subvol 5), already restored as",
		`duplicate entry "dup" (inode 265)`, "(inode 264) is the one restored",
		`entry "bad/name"`, `entry ".."`, `entry "."`, `entry "nul\x00"`, `entry ""`,
		"i_size 4611686018427387904", "(inode 262, subvol 5) has size 16",
		"file offsets [0, 16777216) unreadable", "gave up on the rest of the data run: [16777216, 67108864)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q", want)
		}
	}
	for p, want := range map[string]string{"a/f": "data", "a/dup": "first", "a/huge": "xyz", "a/lossy/only": "only"} {
		if got := rdReadString(t, filepath.Join(dest, p)); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dest, "a/unreadable")); err != nil || fi.Size() != 64<<20 {
		t.Errorf("a/unreadable: %v, want a file of its size with holes for the unreadable data", err)
	}
	n := 0
	filepath.WalkDir(dest, func(string, fs.DirEntry, error) error { n++; return nil })
	if n > 12 {
		t.Errorf("restore made %d entries from a tree of 12", n)
	}
}
