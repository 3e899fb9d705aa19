package testimg

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// RepoRoot is the module root (for scripts/).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// MakeKernelImages puts the kernel-made test image of scripts/mkimages.sh
// at img (root + loop) and returns what the script printed. The script
// runs once per version of it (about 80 s): its image, checked with btrfs
// check, is kept under the temporary directory keyed by the script's hash
// and copied for every caller; test binaries of several packages that
// want it at once wait for the first one (a file lock).
func MakeKernelImages(t testing.TB, img string) string {
	t.Helper()
	script := filepath.Join(RepoRoot(), "scripts", "mkimages.sh")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	dir := filepath.Join(os.TempDir(), "gobtrfs-kernel-images")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, hex.EncodeToString(sum[:8]))
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(base + ".img"); err != nil {
		tmp := base + ".tmp"
		out := testutil.Run(t, "bash", script, tmp)
		testutil.CheckImage(t, tmp)
		if err := os.WriteFile(base+".out", []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, base+".img"); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, "cp", "--sparse=always", base+".img", img)
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
