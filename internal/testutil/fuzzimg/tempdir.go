package fuzzimg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// shmDir holds the temporary directories when it is a writable memory
// filesystem.
const shmDir = "/dev/shm"

// TempDir is a directory removed when tb ends, in memory (/dev/shm) when
// that is available: the targets write an image and restore trees for
// every input, and the commands fsync, which on a disk shared with other
// jobs costs more than the work being fuzzed. `go test -fuzz` kills its
// workers without running cleanups, so the directory names the process,
// and the directories of processes that are gone are removed here.
func TempDir(tb testing.TB) string {
	tb.Helper()
	sweepShm()
	dir, err := os.MkdirTemp(shmDir, fmt.Sprintf("gobtrfs-fuzz-%d-", os.Getpid()))
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { removeTree(dir) })
	return dir
}

// sweepShm removes the directories of dead processes.
func sweepShm() {
	ents, _ := os.ReadDir(shmDir)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "gobtrfs-fuzz-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-") // PID-RANDOM
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			removeTree(filepath.Join(shmDir, e.Name()))
		}
	}
}

// removeTree removes dir, also where restore left directories without
// write permission.
func removeTree(dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
