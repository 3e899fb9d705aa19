package blockdev

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// loopBacking returns the loop device (such as /dev/loop3) that has the
// file at path as its backing file, or "". The kernel may have that loop
// device mounted: writing the file under it corrupts both views.
func loopBacking(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	ents, err := os.ReadDir("/sys/block")
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err != nil {
			continue
		}
		if strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)") == abs {
			return "/dev/" + e.Name()
		}
	}
	return ""
}

// loopBackingFile returns the backing file of the loop block device at
// devPath, or "" when devPath is not a loop device with one.
func loopBackingFile(devPath string) string {
	var st unix.Stat_t
	if unix.Stat(devPath, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/loop/backing_file", unix.Major(st.Rdev), unix.Minor(st.Rdev)))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
}
