package testimg

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

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
