package check

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// dirEntryName is the name of a DIR_ITEM/DIR_INDEX item's (first) entry.
func dirEntryName(d []byte) []byte {
	if len(d) < 30 {
		return nil
	}
	n := int(le64.Uint16(d[27:]))
	return d[30:min(len(d), 30+n)]
}

// inodeRefName is the name of an INODE_REF item's (first) entry.
func inodeRefName(d []byte) []byte {
	if len(d) < 10 {
		return nil
	}
	n := int(le64.Uint16(d[8:]))
	return d[10:min(len(d), 10+n)]
}

// orphanDirImage makes the state of btrfs-progs fsck-tests/054: directory
// d was removed with its children bar and baz while they were open; the
// orphan cleanup has not run: d and its children have nlink 0 and an
// ORPHAN_ITEM, their names and back references are gone except d's
// DIR_INDEX entries. withDirOrphan false leaves out d's ORPHAN_ITEM.
func orphanDirImage(t *testing.T, withDirOrphan bool) string {
	t.Helper()
	needProgs(t)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(filepath.Join(src, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"bar", "baz"} {
		if err := os.WriteFile(filepath.Join(src, "d", n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := filepath.Join(t.TempDir(), "orphan.img")
	mkfsImage(t, img, src, 256<<20)
	e := openEditor(t, img)
	defer e.dev.Close()
	fs := ondisk.FSTreeObjectID
	named := func(typ ondisk.ItemType, name string, nameOf func([]byte) []byte) func(ondisk.Key, []byte) bool {
		return func(k ondisk.Key, d []byte) bool { return k.Type == typ && bytes.Equal(nameOf(d), []byte(name)) }
	}
	dirIno := ondisk.DecodeKey(e.find(fs, named(ondisk.DirIndexKey, "d", dirEntryName)).data).ObjectID
	var unlinked []ondisk.ObjectID
	for _, name := range []string{"d", "bar", "baz"} {
		ref := e.find(fs, named(ondisk.InodeRefKey, name, inodeRefName))
		unlinked = append(unlinked, ref.key.ObjectID)
		e.deleteItem(ref)
		if name == "d" { // the root directory loses both entries
			e.delete(fs, named(ondisk.DirItemKey, name, dirEntryName))
			e.delete(fs, named(ondisk.DirIndexKey, name, dirEntryName))
			root := e.find(fs, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.InodeItemKey && k.ObjectID == ondisk.FirstFreeObjectID
			})
			e.editItem(root, func(d []byte) { le64.PutUint64(d[16:], le64.Uint64(d[16:])-2) })
		} else { // d keeps the DIR_INDEX entries
			e.delete(fs, named(ondisk.DirItemKey, name, dirEntryName))
		}
	}
	for _, ino := range unlinked {
		f := e.find(fs, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.InodeItemKey && k.ObjectID == ino })
		e.editItem(f, func(d []byte) {
			le64.PutUint32(d[40:], 0) // nlink
			le64.PutUint64(d[16:], 0) // isize: btrfs_rmdir sets it to 0
		})
		if ino != dirIno || withDirOrphan {
			e.insertItem(fs, ondisk.Key{ObjectID: ondisk.OrphanObjectID, Type: ondisk.OrphanItemKey, Offset: uint64(ino)}, nil)
		}
	}
	return img
}

// TestOrphanDirectory: a directory awaiting orphan cleanup keeps entries
// for children that lost their names: no name rule applies to it, both
// checkers find the image clean; without the ORPHAN_ITEM it is damage.
func TestOrphanDirectory(t *testing.T) {
	t.Run("orphan", func(t *testing.T) {
		mustBeClean(t, orphanDirImage(t, true), Options{})
	})
	t.Run("no-orphan-item", func(t *testing.T) {
		img := orphanDirImage(t, false)
		rep := ourCheck(t, img, Options{})
		if len(rep.Find(ClassInode, ondisk.FSTreeObjectID, nil)) == 0 {
			t.Errorf("directory with nlink 0 and no ORPHAN_ITEM not reported: %s", describe(rep))
		} else {
			t.Logf("ours: %s", rep.Problems[0])
		}
		if clean, out := progsCheck(t, img); clean {
			t.Errorf("btrfs check --readonly found no error:\n%s", out)
		}
	})
}
