package mountcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyUnmountMessage: a read-only foreground mount says only that
// it unmounted: nothing was written back or committed.
func TestReadOnlyUnmountMessage(t *testing.T) {
	needFuse(t)
	bin := gobtrfsBin(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "m")
	if err := CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(mnt, 0o755)
	fg := exec.Command(bin, "mount", "-o", "ro", img, mnt)
	stderr := &lockedBuffer{}
	fg.Stderr = stderr
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mounted(mnt) {
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	waitFor(t, "mount", func() bool { return mounted(mnt) })
	fg.Process.Signal(syscall.SIGTERM)
	if err := fg.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, "(read-only)") || !strings.Contains(out, img+" unmounted\n") {
		t.Errorf("no read-only mount and plain unmount message:\n%s", out)
	}
	if strings.Contains(out, "written back") || strings.Contains(out, "committed") {
		t.Errorf("a read-only mount claims to have written back:\n%s", out)
	}
}
