package treelog_test

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestFsyncReusedInodeNumber: after a mount, the highest inodes of the
// last commit (directory D holding file c) are deleted and new files are
// created: fsops gives them the numbers just freed (it computes the next
// free number from the running tree at the first allocation of a mount).
// The planner took such an inode as new (generation of this transaction)
// though the last commit has another inode of that number, so the log's
// inode item of file n2 replaced directory D's: btrfs check (which
// overlays the log on the subvolume) found "odd dir item" for the inode on
// the image as left, and replay kept D's DIR_INDEX items under a file.
// fsops now never hands out a number of the last commit (the planner's
// inode-reused check stays as a safety net); the fsync is logged.
func TestFsyncReusedInodeNumber(t *testing.T) {

	testutil.NeedProgs(t)
	img, f, _ := newLoggedImage(t)
	c := create(t, f, topDir, "c", []byte("c"))
	D := mkdir(t, f, topDir, "D")
	mustT(t, f.Rename(topDir, "c", D, "c", 0))
	mustT(t, f.Commit())
	mustT(t, f.Close())
	f, err := fsops.OpenImage(img, fsops.Options{})
	mustT(t, err)
	t.Cleanup(func() { f.Close() })
	mustT(t, f.Unlink(D, "c"))
	mustT(t, f.Rmdir(topDir, "D"))
	n1 := create(t, f, topDir, "n1", []byte("n1"))
	n2 := create(t, f, topDir, "n2", []byte("n2"))
	// fsops remembers the highest inode number before it deletes one
	// (noteIno): numbers of the last commit are never handed out again.
	if n1.Ino <= D.Ino || n2.Ino <= D.Ino {
		t.Errorf("new inodes n1=%d n2=%d reuse numbers of the last commit (c=%d D=%d)", n1.Ino, n2.Ino, c.Ino, D.Ino)
	}
	mustT(t, f.Fsync(n2))
	logStats(t, f)
	if st := f.FsyncStats(); st.Logged != 1 {
		t.Errorf("fsync of n2: stats %+v, want it logged", st)
	}
	// D's removal was not fsync'd: it may or may not be there; both
	// replays must agree and btrfs check must pass (crashCheck).
	crashCheck(t, img, map[string]string{"n2": fileDesc(0o644, 1, []byte("n2"))})
}
