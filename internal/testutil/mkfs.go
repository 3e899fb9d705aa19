package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// NeedProgs skips the test unless btrfs-progs (mkfs.btrfs and btrfs) is
// installed.
func NeedProgs(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"mkfs.btrfs", "btrfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (btrfs-progs): run scripts/deps.sh as root", tool)
		}
	}
}

// SparseFile creates (or truncates) path as an empty file of size bytes.
func SparseFile(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// Mkfs makes path a btrfs image of size bytes (sparse) with
// `mkfs.btrfs -q -f args... path`, or skips the test without btrfs-progs.
func Mkfs(t testing.TB, path string, size int64, args ...string) {
	t.Helper()
	NeedProgs(t)
	SparseFile(t, path, size)
	Run(t, "mkfs.btrfs", append(append([]string{"-q", "-f"}, args...), path)...)
}

// MkfsRootdir makes path (size bytes) from the tree at src with
// mkfs.btrfs --rootdir and extra arguments, then checks it (CheckImage).
func MkfsRootdir(t testing.TB, src, path string, size int64, args ...string) {
	t.Helper()
	Mkfs(t, path, size, append([]string{"--rootdir", src}, args...)...)
	CheckImage(t, path)
}
