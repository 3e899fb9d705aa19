package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// devSuidReport makes /dev/null's device node and a set-user-ID copy of
// id(1), then writes to the node and runs the copy as nobody.
func devSuidReport(t *testing.T, dir string) string {
	var b strings.Builder
	openUp(t, dir)
	null := filepath.Join(dir, "null")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	os.Chmod(null, 0o666)
	err := os.WriteFile(null, []byte("fred\n"), 0)
	fmt.Fprintf(&b, "write to the device node: %s\n", errName(err))
	src, err := exec.LookPath("id")
	if err != nil {
		t.Skip("no id(1)")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	id := filepath.Join(dir, "id")
	if err := os.WriteFile(id, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(id, 0o4755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "./id", "-u")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(&b, "set-user-ID id -u as nobody: %s %v\n", strings.TrimSpace(string(out)), err)
	var sf unix.Statfs_t
	unix.Statfs(dir, &sf)
	fmt.Fprintf(&b, "statfs nosuid %v nodev %v noexec %v\n", sf.Flags&unix.ST_NOSUID != 0, sf.Flags&unix.ST_NODEV != 0, sf.Flags&unix.ST_NOEXEC != 0)
	return b.String()
}

// TestDevSuidLikeKernel: generic/184. A mount made by root uses device
// nodes and set-user-ID bits as kernel btrfs does; nodev, nosuid and
// noexec are honoured.
func TestDevSuidLikeKernel(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	t.Run("defaults", func(t *testing.T) { sideBySide(t, "", Options{AllowOther: true}, devSuidReport) })
	t.Run("nodev,nosuid", func(t *testing.T) {
		sideBySide(t, "nodev,nosuid", Options{AllowOther: true, NoDev: true, NoSuid: true}, devSuidReport)
	})
	t.Run("noexec", func(t *testing.T) {
		sideBySide(t, "noexec", Options{AllowOther: true, NoExec: true}, devSuidReport)
	})
}
