package fuzzimg

import (
	"os"
	"testing"
)

// TempDir is a directory removed when tb ends, in memory (/dev/shm) when
// that is available: the targets write an image and restore trees for
// every input, and the commands fsync, which on a disk shared with other
// jobs costs more than the work being fuzzed.
func TempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "gobtrfs-fuzz-")
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() {
		// restore may leave directories without write permission
		chmodTree(dir)
		os.RemoveAll(dir)
	})
	return dir
}

func chmodTree(dir string) {
	ents, _ := os.ReadDir(dir)
	os.Chmod(dir, 0o700)
	for _, e := range ents {
		if e.IsDir() {
			chmodTree(dir + "/" + e.Name())
		}
	}
}
