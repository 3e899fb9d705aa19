package fsinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestOpenMkfsImage opens an image made by mkfs.btrfs and checks that every
// tree btrfs-progs lists is readable and the fs tree holds the source files.
func TestOpenMkfsImage(t *testing.T) {
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil {
		t.Skip("mkfs.btrfs not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "f"), make([]byte, 65536), 0o644)
	img := filepath.Join(dir, "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Truncate(img, 256<<20)
	if out, err := exec.Command("mkfs.btrfs", "-q", "-f", "--rootdir", src, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	dev, err := blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	f, err := Open(dev, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []ondisk.ObjectID{ondisk.RootTreeObjectID, ondisk.ExtentTreeObjectID, ondisk.ChunkTreeObjectID,
		ondisk.DevTreeObjectID, ondisk.FSTreeObjectID, ondisk.CsumTreeObjectID, ondisk.FreeSpaceTreeObjectID} {
		tr, err := f.Tree(id)
		if err != nil {
			t.Fatalf("tree %s: %v", ondisk.TreeName(id), err)
		}
		n := 0
		p, ok, err := tr.SearchForward(ondisk.Key{})
		for ; ok && err == nil; ok, err = p.Next() {
			n++
		}
		if err != nil || n == 0 {
			t.Fatalf("tree %s: %d items, err %v", ondisk.TreeName(id), n, err)
		}
	}
	fs, _ := f.Tree(ondisk.FSTreeObjectID)
	found := 0
	fs.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, data []byte) bool {
		if k.Type == ondisk.DirIndexKey {
			found++
		}
		return true
	})
	if found != 2 {
		t.Fatalf("fs tree has %d DIR_INDEX items, want 2 (d and d/f)", found)
	}
}
