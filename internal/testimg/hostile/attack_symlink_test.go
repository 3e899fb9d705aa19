package hostile_test

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// TestAttackSymlinkSize: a symlink inode whose i_size says 1 TiB (or 0)
// is corruption for the read-write path's readlink, not an allocation of
// i_size bytes (the mount's daemon died of it) nor a target of NUL bytes.
func TestAttackSymlinkSize(t *testing.T) {
	for _, size := range []uint64{1 << 40, 0} {
		img := filepath.Join(t.TempDir(), "sym.img")
		if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
			t.Fatal(err)
		}
		w, err := gobtrfs.OpenRW(img, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Symlink("target/of/the/link", "/l"); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		fsys, err := gobtrfs.Open(img, nil)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := fsys.Lstat("l")
		ino := fi.Sys().(*gobtrfs.Stat).Ino
		fsys.Close()
		p := hostile.Open(t, img)
		p.EditItem(ondisk.FSTreeObjectID, ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.InodeItemKey}, func(d []byte) {
			binary.LittleEndian.PutUint64(d[16:], size)
		})
		p.Close()
		w, err = gobtrfs.OpenRW(img, nil)
		if err != nil {
			t.Fatal(err)
		}
		target, err := w.Readlink("/l")
		if err == nil || !errors.Is(err, gobtrfs.ErrCorrupt) {
			t.Errorf("i_size %d: Readlink = %q, %v; want a corruption error", size, target, err)
		}
		w.Close()
	}
}
