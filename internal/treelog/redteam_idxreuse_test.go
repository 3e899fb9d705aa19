package treelog_test

import (
	"bytes"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// reopen closes f (a commit) and opens img again: a new mount, whose
// caches (next inode number, next DIR_INDEX of each directory) start
// empty.
func reopen(t *testing.T, img string, f *fsops.FS) *fsops.FS {
	t.Helper()
	mustT(t, f.Close())
	g, err := fsops.OpenImage(img, fsops.Options{})
	mustT(t, err)
	t.Cleanup(func() { g.Close() })
	return g
}

// TestFsyncReusedDirIndex: in a new mount, d/h (the highest DIR_INDEX of
// d) is renamed to e/h, then d/z is created: fsops computes d's next index
// from the running tree, so z gets h's committed index 3. A log saying "z
// at index 3 of d" (z's INODE_REF, or d's DIR_INDEX when d is fsync'd)
// made the kernel's replay fail (EEXIST inserting the DIR_INDEX: mount
// fails), and our replay unlinked h (what the committed tree has at that
// index) leaving it without any name (gone after the replay). h must be
// there, as d/h or e/h. fsops now never hands out an index of the last
// commit (noteDirIndex; the planner's index-reused check stays as a safety
// net), so the fsync is logged.
func TestFsyncReusedDirIndex(t *testing.T) {
	testutil.NeedProgs(t)
	t.Run("unlink-create", func(t *testing.T) {
		// the common case: the highest entry removed, a new one made
		img, f, _ := newLoggedImage(t)
		f = reopen(t, img, f)
		d := lookupPath(t, f, "d")
		mustT(t, f.Unlink(d, "h"))
		z := create(t, f, d, "z", []byte("z"))
		mustT(t, f.Fsync(z))
		logStats(t, f)
		if st := f.FsyncStats(); st.Logged != 1 {
			t.Errorf("fsync: stats %+v, want it logged (no committed index handed out again)", st)
		}
		// h's unlink was not fsync'd: d/h may be there; both replays
		// agree and btrfs check passes (crashCheck)
		crashCheck(t, img, map[string]string{"d/z": fileDesc(0o644, 1, []byte("z"))})
	})
	for _, dirSync := range []bool{false, true} {
		name := "file-fsync"
		if dirSync {
			name = "dir-fsync"
		}
		t.Run(name, func(t *testing.T) {
			img, f, _ := newLoggedImage(t)
			f = reopen(t, img, f)
			d, e := lookupPath(t, f, "d"), lookupPath(t, f, "e")
			mustT(t, f.Rename(d, "h", e, "h", 0))
			z := create(t, f, d, "z", []byte("z"))
			if dirSync {
				mustT(t, f.Fsync(d))
			} else {
				mustT(t, f.Fsync(z))
			}
			logStats(t, f)
			if st := f.FsyncStats(); st.Logged != 1 {
				t.Errorf("fsync: stats %+v, want it logged (no committed index handed out again)", st)
			}
			ours, kern := crashCheck(t, img, map[string]string{"d/z": fileDesc(0o644, 1, []byte("z"))})
			hd := fileDesc(0o644, 1, bytes.Repeat([]byte("h"), 64<<10))
			for who, v := range map[string]map[string]string{"our replay": ours, "kernel replay": kern} {
				if v == nil {
					continue
				}
				if _, ok := v["d/h"]; ok {
					checkWant(t, who, v, map[string]string{"d/h": hd, "e/h": ""})
				} else {
					checkWant(t, who, v, map[string]string{"e/h": hd})
				}
			}
		})
	}
}
