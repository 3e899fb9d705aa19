package check

import (
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestKernelSpaceCacheV1: a kernel-made image with a v1 free space cache
// is clean; a cache inode with the wrong mode is found by both checkers
// (btrfs-progs fsck-tests/039 bad_free_space_cache_imode), and so is a
// header pointing to an inode that does not exist.
func TestKernelSpaceCacheV1(t *testing.T) {
	needProgs(t)
	testutil.NeedRootLoop(t)
	img0 := filepath.Join(t.TempDir(), "v1.img")
	kernelImage(t, img0, "space_cache=v1", "", "-R", "^free-space-tree")
	mustBeClean(t, img0, Options{})
	cacheInode := func(k ondisk.Key, d []byte) bool {
		return k.Type == ondisk.InodeItemKey && k.ObjectID >= ondisk.FirstFreeObjectID && k.ObjectID <= ondisk.LastFreeObjectID
	}
	root := ondisk.RootTreeObjectID
	runCorruptions(t, img0, []corruption{
		{name: "mode-0644", class: ClassSpaceCache, apply: func(e *editor) target {
			f := e.find(root, cacheInode)
			e.editItem(f, func(d []byte) { le64.PutUint32(d[52:], sIFREG|0o644) })
			return target{tree: root, key: &f.key}
		}},
		{name: "mode-00", class: ClassTree, apply: func(e *editor) target {
			// the exact case of fsck-tests/039: the tree-checker refuses the
			// leaf (as the kernel's check_inode_item does)
			f := e.find(root, cacheInode)
			e.editItem(f, func(d []byte) { le64.PutUint32(d[52:], 0) })
			return target{tree: root, block: f.leaf, msgKey: &f.key}
		}},
		{name: "header-to-nowhere", class: ClassSpaceCache, progsBlind: "btrfs check 6.2 does not follow the header to its inode", apply: func(e *editor) target {
			f := e.find(root, func(k ondisk.Key, d []byte) bool { return k.ObjectID == ondisk.FreeSpaceObjectID })
			e.editItem(f, func(d []byte) { le64.PutUint64(d[0:], le64.Uint64(d[0:])+1000000) })
			return target{tree: root, key: &f.key}
		}},
	})
}
