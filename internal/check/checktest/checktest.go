// Package checktest runs the filesystem checkers at the end of a test
// that wrote an image: ours (internal/check) and, when btrfs-progs is
// installed, btrfs check --readonly.
package checktest

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Image fails t unless both checkers find the image at path clean.
func Image(t testing.TB, path string) {
	t.Helper()
	rep, err := check.Image(path)
	if err != nil {
		t.Fatalf("check %s: %v", path, err)
	}
	if !rep.OK() {
		t.Fatalf("check %s:\n%s", path, rep)
	}
	testutil.CheckImage(t, path)
}

// FS fails t unless our checker finds fi's device clean (as written on
// the device, not as cached in fi).
func FS(t testing.TB, fi *fsinfo.FSInfo) {
	t.Helper()
	rep, err := check.FS(fi)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("check:\n%s", rep)
	}
}
