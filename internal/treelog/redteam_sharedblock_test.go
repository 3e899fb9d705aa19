package treelog_test

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/treelog"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestFsyncSharedCsumLeaves: a 40 MiB extent written in the transaction is
// reflinked into a file of another subvolume and both files are fsync'd:
// each subvolume's log tree carries the extent's checksums, packed one
// checksum item per leaf, so both trees have byte-identical leaves. The
// next fsync rebuilds the log and finds, for the leaves of both trees, the
// same block on disk: one block in two log trees. Our replay then failed
// to pin the block a second time ("log tree block ... is not free space:
// corrupt": the image does not mount with gobtrfs), and the kernel's
// pinned it twice (space_info pinned bytes left at unmount: WARNING in
// btrfs_put_block_group / check_removing_space_info).
func TestFsyncSharedCsumLeaves(t *testing.T) {

	testutil.NeedProgs(t)
	img, f, a := newLoggedImage(t)
	big := make([]byte, 40<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i], big[i+1] = byte(i>>12), byte(i>>20)
	}
	x := create(t, f, topDir, "x", big)
	sv := lookupPath(t, f, "sv")
	y := create(t, f, ondisk.InodeRef{Root: sv.Root, Ino: fsops.RootDirIno}, "y", nil)
	mustT(t, f.Clone(x, 0, y, 0, 0))
	mustT(t, f.Fsync(x))
	mustT(t, f.Fsync(y))
	write(t, f, a, 0, []byte("A"))
	mustT(t, f.Fsync(a))
	logStats(t, f)
	noSharedLogBlocks(t, img)
	crashCheck(t, img, map[string]string{"x": fileDesc(0o644, 1, big), "d/a": fileDesc(0o644, 1, append([]byte("A"), original[1:]...))})
}

// noSharedLogBlocks fails when a block belongs to two log trees of img.
func noSharedLogBlocks(t *testing.T, img string) {
	t.Helper()
	dev, err := blockdev.OpenFile(copyFile(t, img), true)
	mustT(t, err)
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	mustT(t, err)
	logs, err := treelog.Read(fi)
	mustT(t, err)
	if logs == nil {
		t.Fatal("no log on disk")
	}
	owner := map[ondisk.LogicalAddr]ondisk.ObjectID{}
	for _, l := range logs.Subvols {
		tr := &ctree.Tree{R: fi.R, ID: ondisk.TreeLogObjectID, Root: l.Root.Bytenr, Level: int(l.Root.Level), Gen: l.Root.Generation}
		err := tr.Walk(func(n *diskio.Node, err error) error {
			if err != nil {
				return err
			}
			if o, ok := owner[n.Addr]; ok {
				t.Errorf("log block %d is in the log trees of subvolumes %d and %d", uint64(n.Addr), o, l.Subvol)
			}
			owner[n.Addr] = l.Subvol
			return nil
		})
		mustT(t, err)
	}
}
