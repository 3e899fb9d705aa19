package fusefs

import (
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// sideBySide runs report on a fresh kernel btrfs loop mount (mount options
// kopts) and on a fresh mount of ours (o), and fails where the two reports
// differ, then checks our image with btrfs check. It skips without root, loop devices, kernel btrfs or FUSE.
func sideBySide(t *testing.T, kopts string, o Options, report func(t *testing.T, dir string) string) {
	t.Helper()
	sideBySideMkfs(t, nil, kopts, o, report)
}

// sideBySideMkfs is sideBySide on images made with mkfs.btrfs mkfsArgs.
func sideBySideMkfs(t *testing.T, mkfsArgs []string, kopts string, o Options, report func(t *testing.T, dir string) string) {
	t.Helper()
	testutil.NeedRootLoop(t)
	needFuse(t)
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20, mkfsArgs...)
	kdir := testutil.LoopMount(t, kimg, kopts)
	oimg := filepath.Join(t.TempDir(), "ours.img")
	testutil.Mkfs(t, oimg, 256<<20, mkfsArgs...)
	tm := mountImage(t, oimg, o)
	krep := report(t, kdir)
	orep := report(t, tm.dir)
	if krep != orep {
		t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's report:\n%s", diffLines(krep, orep), krep)
	}
	tm.unmount()
	checktest.Image(t, oimg)
}
