package txn_test

import (
	"flag"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

var seedFlag = flag.Int64("seed", 0, "seed for random tests (0: time-based)")

func testSeed(t *testing.T) int64 {
	s := *seedFlag
	if s == 0 {
		s = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

func needProgs(t testing.TB) {
	t.Helper()
	for _, p := range []string{"mkfs.btrfs", "btrfs"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (btrfs-progs)", p)
		}
	}
}

// mkfs makes a sparse image of size bytes with mkfs.btrfs and args. It
// skips the test when mkfs rejects an option this btrfs-progs lacks.
func mkfs(t testing.TB, size int64, args ...string) string {
	t.Helper()
	needProgs(t)
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mkfs.btrfs", append(append([]string{"-q", "-f"}, args...), img)...).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "unrecognized") || strings.Contains(string(out), "invalid") ||
			strings.Contains(string(out), "unknown") {
			t.Skipf("mkfs.btrfs %v: not supported by this btrfs-progs: %s", args, out)
		}
		t.Fatalf("mkfs.btrfs %v: %v\n%s", args, err, out)
	}
	checktest.AtEnd(t, img)
	return img
}

// image is an image opened for writing.
type image struct {
	path string
	dev  blockdev.Device
	fi   *fsinfo.FSInfo
	fs   *txn.Engine
}

func openImage(t testing.TB, path string) *image {
	t.Helper()
	dev, err := blockdev.OpenFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return openDev(t, path, dev)
}

func openDev(t testing.TB, path string, dev blockdev.Device) *image {
	t.Helper()
	fi, err := fsinfo.Open(dev, fsinfo.Options{})
	if err != nil {
		dev.Close()
		t.Fatalf("fsinfo.Open: %v", err)
	}
	fs, err := txn.Open(fi)
	if err != nil {
		dev.Close()
		t.Fatalf("txn.Open: %v", err)
	}
	return &image{path: path, dev: dev, fi: fi, fs: fs}
}

func (m *image) close(t testing.TB) {
	t.Helper()
	if err := m.fs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := m.fs.Groups().Check(); err != nil {
		t.Fatalf("space accounting after close: %v", err)
	}
	m.dev.Close()
}

// begin starts a handle or fails the test.
func (m *image) begin(t testing.TB) *txn.Handle {
	t.Helper()
	h, err := m.fs.Begin()
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	return h
}

func (m *image) commit(t testing.TB) {
	t.Helper()
	if err := m.fs.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func xattrKey(ino ondisk.ObjectID, name string) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey, Offset: item.NameHash([]byte(name))}
}

// setXattr inserts a user xattr on ino of tree (no hash collisions expected).
func setXattr(t testing.TB, h *txn.Handle, tree *ctree.Tree, ino ondisk.ObjectID, name string, value []byte) {
	t.Helper()
	d := item.DirItems{{Type: item.FTXattr, Transid: uint64(h.Transid()), Name: []byte(name), Data: value}}
	if err := tree.InsertItem(h.Alloc(), xattrKey(ino, name), d.Bytes()); err != nil {
		t.Fatalf("insert xattr %s: %v", name, err)
	}
}

func delXattr(t testing.TB, h *txn.Handle, tree *ctree.Tree, ino ondisk.ObjectID, name string) {
	t.Helper()
	if err := tree.DeleteItem(h.Alloc(), xattrKey(ino, name)); err != nil {
		t.Fatalf("delete xattr %s: %v", name, err)
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	r.Read(b)
	return b
}

func xattrBytes(transid ondisk.Generation, name string) []byte {
	d := item.DirItems{{Type: item.FTXattr, Transid: uint64(transid), Name: []byte(name), Data: []byte("v")}}
	return d.Bytes()
}
