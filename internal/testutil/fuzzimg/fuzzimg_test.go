package fuzzimg

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestBaseImage: the base image is clean for our checker and for btrfs
// check, and has what the targets need (every tree, internal nodes, DUP
// copies, data sectors).
func TestBaseImage(t *testing.T) {
	img, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tree blocks, %d data sectors, nodesize %d", len(img.Blocks), len(img.DataPages), img.NodeSize)
	trees := map[ondisk.ObjectID]bool{}
	internal := 0
	for _, b := range img.Blocks {
		trees[b.Tree] = true
		if b.Level > 0 {
			internal++
		}
		if len(b.Physical) != 2 {
			t.Errorf("block %d of tree %d has %d copies, want 2 (DUP)", b.Logical, b.Tree, len(b.Physical))
		}
	}
	for _, id := range []ondisk.ObjectID{ondisk.RootTreeObjectID, ondisk.ChunkTreeObjectID, ondisk.ExtentTreeObjectID,
		ondisk.FSTreeObjectID, ondisk.CsumTreeObjectID, 256, 257} {
		if !trees[id] {
			t.Errorf("no block of tree %d", id)
		}
	}
	if internal == 0 {
		t.Error("no internal node: key pointer operations have nothing to change")
	}
	if len(img.DataPages) == 0 {
		t.Error("no data sectors")
	}
	path := filepath.Join(t.TempDir(), "base.img")
	if err := img.Apply(nil).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	rep, err := check.ImageWith(path, check.Options{CheckDataCsum: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("our checker: %v", rep.Problems)
	}
	if _, err := exec.LookPath("btrfs"); err == nil {
		testutil.CheckImage(t, path)
	}
}

// TestApply: each operation changes the image where it says, checksums
// are recomputed unless asked not to, and the base image never changes.
func TestApply(t *testing.T) {
	img, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	orig := append([]byte(nil), img.Bytes...)
	b := img.Blocks[3]
	read := func(o *Overlay, off int64, n int) []byte {
		p := make([]byte, n)
		o.ReadAt(p, off)
		return p
	}
	// set, checksum fixed, both copies
	o := img.Apply(Script(0, Op(OpSet, 3, 0x30, 1, 2, 3, 4)))
	for _, p := range b.Physical {
		blk := read(o, p, img.NodeSize)
		if !bytes.Equal(blk[0x30:0x34], []byte{1, 2, 3, 4}) {
			t.Errorf("copy at %d: bytenr bytes %x", p, blk[0x30:0x34])
		}
		if !img.info.Csum.VerifyBlock(blk) {
			t.Errorf("copy at %d: checksum not recomputed", p)
		}
	}
	// raw xor on the first copy only
	o = img.Apply(Script(0, Op(OpXorRaw|OpFirstCopy, 3, 0x60, 0xff)))
	if img.info.Csum.VerifyBlock(read(o, b.Physical[0], img.NodeSize)) {
		t.Error("raw xor: checksum still valid")
	}
	if !bytes.Equal(read(o, b.Physical[1], img.NodeSize), orig[b.Physical[1]:b.Physical[1]+int64(img.NodeSize)]) {
		t.Error("first-copy op changed the second copy")
	}
	if !bytes.Equal(img.Bytes, orig) {
		t.Fatal("Apply changed the base image")
	}
}

var _ blockdev.Device = (*Overlay)(nil)
var _ blockdev.Device = (*memDev)(nil)

// TestTempDirSweeps: the directory of a process that is gone (a fuzz
// worker killed by go test) is removed by the next TempDir.
func TestTempDirSweeps(t *testing.T) {
	if _, err := os.Stat(shmDir); err != nil {
		t.Skipf("no %s: TempDir uses the test's own temporary directory", shmDir)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot start a process:", err)
	}
	stale := filepath.Join(shmDir, fmt.Sprintf("gobtrfs-fuzz-%d-1", cmd.Process.Pid))
	if err := os.MkdirAll(filepath.Join(stale, "ro"), 0o755); err != nil {
		t.Skip(err)
	}
	os.Chmod(filepath.Join(stale, "ro"), 0o500)
	dir := TempDir(t)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		os.RemoveAll(stale)
		t.Fatalf("stale %s not removed: %v", stale, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
