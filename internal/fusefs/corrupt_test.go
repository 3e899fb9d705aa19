package fusefs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"golang.org/x/sys/unix"
)

// leafOf returns the logical address of the fs tree leaf holding ino's
// inode item, and the physical offsets of its copies.
func leafOf(t *testing.T, img string, ino uint64) (uint64, []int64, uint32) {
	t.Helper()
	dev, err := blockdev.OpenFile(img, true)
	must(t, err)
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	must(t, err)
	tr, err := fi.Tree(ondisk.FSTreeObjectID)
	must(t, err)
	p, ok, err := tr.Search(ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.InodeItemKey})
	if err != nil || !ok {
		t.Fatalf("inode %d: %v %v", ino, ok, err)
	}
	addr := p.Nodes[0].Addr
	copies, _, err := fi.Chunks.Map(addr, uint64(fi.Super.NodeSize))
	must(t, err)
	var phys []int64
	for _, c := range copies {
		phys = append(phys, int64(c.Physical))
	}
	return uint64(addr), phys, fi.Super.NodeSize
}

// TestCorruptBlockGivesEIO: a tree block that fails its checksum fails the
// operation that reads it with EIO and a log line naming the block; the
// rest of the mount keeps working.
func TestCorruptBlockGivesEIO(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	must(t, os.Mkdir(tm.path("d"), 0o755))
	for i := 0; i < 3000; i++ {
		must(t, os.WriteFile(tm.path("d", fmt.Sprintf("f%04d", i)), []byte("some data"), 0o644))
	}
	var bad, good unix.Stat_t
	must(t, unix.Stat(tm.path("d", "f2500"), &bad))
	must(t, unix.Stat(tm.path("d", "f0100"), &good))
	tm.unmount()
	checktest.Image(t, img)

	addr, phys, nodesize := leafOf(t, img, bad.Ino)
	if a2, _, _ := leafOf(t, img, good.Ino); a2 == addr {
		t.Fatalf("both files in one leaf; the test needs two")
	}
	checktest.Damaged(img) // on purpose: no end-of-test check
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	must(t, err)
	junk := []byte(strings.Repeat("\xde\xad", 64))
	for _, p := range phys {
		_, err := f.WriteAt(junk, p+int64(nodesize)/2)
		must(t, err)
	}
	f.Close()

	tm = mountImage(t, img, Options{})
	_, err = os.Stat(tm.path("d", "f2500"))
	wantErrno(t, "stat of a file in the corrupt leaf", err, syscall.EIO)
	if b, err := os.ReadFile(tm.path("d", "f0100")); err != nil || string(b) != "some data" {
		t.Errorf("file in a good leaf: %q %v", b, err)
	}
	if _, err := os.ReadDir(tm.path()); err != nil {
		t.Errorf("mount went down: %v", err)
	}
	logs := tm.logBuf.String()
	if !strings.Contains(logs, strconv.FormatUint(addr, 10)) || !strings.Contains(logs, "EIO") {
		t.Errorf("no log line naming block %d:\n%s", addr, logs)
	}
	t.Logf("log: %s", strings.TrimSpace(logs))
	tm.unmount()
}
