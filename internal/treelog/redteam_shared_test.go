package treelog_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestRedteamIdenticalLeaves: a subvolume and its snapshot get the same
// change (a rename of f, with a clock that does not move): their log
// trees hold byte-identical leaves, and a rebuilt log finds the block of
// the first on disk for both (one block in two trees). Exploratory:
// GOBTRFS_REDTEAM=1.
func TestRedteamIdenticalLeaves(t *testing.T) {
	if os.Getenv("GOBTRFS_REDTEAM") == "" {
		t.Skip("exploratory: set GOBTRFS_REDTEAM=1")
	}
	testutil.NeedProgs(t)
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 512<<20)
	now := time.Unix(1700000000, 0)
	f, err := fsops.OpenImage(img, fsops.Options{Now: func() time.Time { return now }})
	mustT(t, err)
	t.Cleanup(func() { f.Close() })
	sv, err := f.CreateSubvolume(topDir, "sv", 0o40755, 0, 0)
	mustT(t, err)
	svRoot := ondisk.InodeRef{Root: sv, Ino: fsops.RootDirIno}
	create(t, f, svRoot, "f", []byte("same"))
	mustT(t, f.Commit())
	snap, err := f.Snapshot(sv, topDir, "snap", false)
	mustT(t, err)
	snapRoot := ondisk.InodeRef{Root: snap, Ino: fsops.RootDirIno}
	mustT(t, f.Close())
	f, err = fsops.OpenImage(img, fsops.Options{Now: func() time.Time { return now }})
	mustT(t, err)
	t.Cleanup(func() { f.Close() })
	x := create(t, f, topDir, "x", []byte("x"))
	mustT(t, f.Rename(svRoot, "f", svRoot, "g", 0))
	mustT(t, f.Rename(snapRoot, "f", snapRoot, "g", 0))
	a, _, err := f.Lookup(svRoot, "g")
	mustT(t, err)
	b, _, err := f.Lookup(snapRoot, "g")
	mustT(t, err)
	mustT(t, f.Fsync(a))
	mustT(t, f.Fsync(b))
	write(t, f, x, 0, []byte("y"))
	mustT(t, f.Fsync(x))
	logStats(t, f)
	crash := copyFile(t, img)
	if out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "18446744073709551610", crash).CombinedOutput(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "bytenr") || strings.Contains(l, "ROOT_ITEM") {
				t.Logf("%s", l)
			}
		}
	}
	testutil.CheckImage(t, crash)
	g, err := fsops.OpenImage(copyFile(t, crash), fsops.Options{})
	if err != nil {
		t.Fatalf("our replay: %v", err)
	}
	mustT(t, g.Close())
	if testutil.HaveRootLoop() {
		mnt := testutil.LoopMount(t, crash, "")
		for _, p := range []string{"sv/g", "snap/g", "x"} {
			if _, err := os.Stat(filepath.Join(mnt, p)); err != nil {
				t.Errorf("kernel replay: %v", err)
			}
		}
		testutil.Unmount(t, mnt)
		testutil.CheckImage(t, crash)
	}
}
