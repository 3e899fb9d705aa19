package testimg

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// NeedKernel skips unless running as root with loop devices and btrfs.
//
// Deprecated: use testutil.NeedRootLoop (this stays until internal/check
// switches).
func NeedKernel(t testing.TB) {
	t.Helper()
	testutil.NeedRootLoop(t)
}

// Loop attaches img to a loop device, detached in t.Cleanup.
//
// Deprecated: use testutil.Loop.
func Loop(t testing.TB, img string) string {
	t.Helper()
	return testutil.Loop(t, img)
}

// Mounted is a kernel mount made by Mount.
//
// Deprecated: use testutil.Mount and testutil.Unmount.
type Mounted struct {
	Dir string
	t   testing.TB
}

// Mount mounts dev (btrfs) at a new directory with options; t.Cleanup
// unmounts it unless Unmount already did.
//
// Deprecated: use testutil.Mount.
func Mount(t testing.TB, dev, opts string) *Mounted {
	t.Helper()
	return &Mounted{Dir: testutil.Mount(t, dev, opts), t: t}
}

// Unmount unmounts now.
func (m *Mounted) Unmount() {
	m.t.Helper()
	testutil.Unmount(m.t, m.Dir)
}

// RepoRoot is the module root (for scripts/).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// MakeKernelImages runs scripts/mkimages.sh to build the kernel-made test
// image at img (root + loop), then checks it with btrfs check.
func MakeKernelImages(t testing.TB, img string) string {
	t.Helper()
	out := testutil.Run(t, "bash", filepath.Join(RepoRoot(), "scripts", "mkimages.sh"), img)
	testutil.CheckImage(t, img)
	return out
}
