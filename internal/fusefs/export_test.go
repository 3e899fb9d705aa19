package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// handleReport takes file handles of files and directories, drops the
// kernel's dentry and inode caches, and opens them by handle again: those
// still linked open, deleted ones give ESTALE.
func handleReport(t *testing.T, dir string) string {
	var b strings.Builder
	names := []string{"f", "g", "d", "d/sub", "d/sub/h"}
	os.MkdirAll(filepath.Join(dir, "d/sub"), 0o755)
	for _, f := range []string{"f", "g", "d/sub/h"} {
		os.WriteFile(filepath.Join(dir, f), []byte("content of "+f), 0o644)
	}
	handles := map[string]unix.FileHandle{}
	for _, name := range names {
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, filepath.Join(dir, name), 0)
		if err != nil {
			t.Skipf("name_to_handle_at %s: %v", name, err)
		}
		handles[name] = h
	}
	os.Remove(filepath.Join(dir, "g"))
	// The kernel forgets FUSE inodes asynchronously (FORGET): drop the
	// caches a few times so that a loaded machine gets there too.
	for i := 0; i < 3; i++ {
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
			t.Skipf("cannot drop the kernel's caches: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(mfd)
	for _, name := range names {
		fd, err := unix.OpenByHandleAt(mfd, handles[name], unix.O_RDONLY)
		if err != nil {
			fmt.Fprintf(&b, "%s: %s\n", name, errName(err))
			continue
		}
		buf := make([]byte, 100)
		k, _ := unix.Read(fd, buf)
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		fmt.Fprintf(&b, "%s: ok, mode %#o, read %q\n", name, st.Mode, buf[:max(k, 0)])
		unix.Close(fd)
	}
	return b.String()
}

// TestFileHandlesLikeKernel: generic/426. open_by_handle_at works after
// the inode left the kernel's cache (EXPORT_SUPPORT, node IDs = st_ino),
// and gives ESTALE for a deleted file, as on kernel btrfs.
func TestFileHandlesLikeKernel(t *testing.T) {
	sideBySide(t, "", Options{}, handleReport)
}
