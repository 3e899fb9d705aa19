package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// go-fuse's fs.Mount (and mountFS) can fail after the kernel made the
// mount: the INIT exchange, or the first access through the mount point
// (which fails when the mount point is not a directory), and leave the
// mount behind. New counts the mounts on the mount point before mounting
// and, on failure, undoFailedMount removes what is new: a mount that fails
// leaves nothing mounted.

// mountsBefore is the number of mounts on mountpoint before mounting.
func mountsBefore(mountpoint string) int {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return 0
	}
	return mountCount(abs)
}

// undoFailedMount detaches the mount a failed mount left on mountpoint (if
// there are more mounts than before) and returns mountErr, noting an
// unmount that failed too.
func undoFailedMount(mountpoint string, before int, mountErr error) error {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return mountErr
	}
	for try := 0; try < 3 && mountCount(abs) > before; try++ {
		if err := forceUnmount(abs); err != nil {
			// the cause is mountErr; the cleanup's failure is only reported
			return fmt.Errorf("%w (and the failed mount could not be removed: %v)", mountErr, err)
		}
	}
	return mountErr
}

// forceUnmount detaches the topmost mount on dir: directly as root,
// through fusermount3 otherwise.
func forceUnmount(dir string) error {
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	if err == nil {
		return nil
	}
	for _, prog := range []string{"fusermount3", "fusermount"} {
		if out, ferr := exec.Command(prog, "-u", "-z", dir).CombinedOutput(); ferr == nil {
			return nil
		} else if len(out) > 0 {
			err = fmt.Errorf("%w; %s: %s", err, prog, strings.TrimSpace(string(out)))
		}
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// mountCount is how many mounts /proc/self/mountinfo lists on dir.
func mountCount(dir string) int {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && unescapeMountinfo(f[4]) == dir {
			n++
		}
	}
	return n
}

// unescapeMountinfo undoes the octal escapes (\040 for a space...) of
// /proc/self/mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
