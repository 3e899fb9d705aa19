package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// NeedRootLoop skips the test unless it can make loop devices and mount
// btrfs images: root, /dev/loop-control, util-linux's losetup, mount and
// umount, btrfs-progs, and btrfs in the kernel (loaded with modprobe if
// needed).
func NeedRootLoop(t testing.TB) {
	t.Helper()
	if why := rootLoopMissing(); why != "" {
		t.Skip(why)
	}
}

// HaveRootLoop reports whether NeedRootLoop would let a test run, for tests
// whose kernel part is optional.
func HaveRootLoop() bool { return rootLoopMissing() == "" }

func rootLoopMissing() string {
	if os.Geteuid() != 0 {
		return "needs root for loop devices and mount"
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return "no /dev/loop-control: loop devices unavailable"
	}
	for _, c := range []string{"losetup", "mount", "umount", "mkfs.btrfs", "btrfs"} {
		if _, err := exec.LookPath(c); err != nil {
			return c + " not installed"
		}
	}
	if !kernelHasBtrfs() {
		exec.Command("modprobe", "btrfs").Run()
		if !kernelHasBtrfs() {
			return "the kernel has no btrfs"
		}
	}
	return ""
}

func kernelHasBtrfs() bool {
	b, _ := os.ReadFile("/proc/filesystems")
	return bytes.Contains(b, []byte("\tbtrfs\n"))
}

// NeedFuse skips the test unless FUSE mounts can be made: /dev/fuse opens,
// and without root a fusermount3 (or fusermount) helper is installed.
func NeedFuse(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE unavailable: cannot open /dev/fuse: %v", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				t.Skip("FUSE unavailable: not root and no fusermount3")
			}
		}
	}
}

// loopDev is a loop device attached by this package. It is detached once:
// after an early detach the device number may already belong to another
// test, so the cleanup must not detach it again.
type loopDev struct {
	name string
	mu   sync.Mutex
	done bool
}

func (l *loopDev) detach() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	l.done = true
	if out, err := exec.Command("losetup", "-d", l.name).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -d %s: %w: %s", l.name, err, bytes.TrimSpace(out))
	}
	return nil
}

func attach(t testing.TB, img string) *loopDev {
	t.Helper()
	l := &loopDev{name: strings.TrimSpace(Run(t, "losetup", "--find", "--show", img))}
	t.Cleanup(func() {
		if err := l.detach(); err != nil {
			t.Error(err)
		}
	})
	return l
}

// Loop attaches img to a free loop device and returns its name; t.Cleanup
// detaches it (after the cleanups of mounts made later, as cleanups run
// last-in first-out).
func Loop(t testing.TB, img string) string {
	t.Helper()
	return attach(t, img).name
}

// mountLoops maps each mount point LoopMount made to the loop device it
// attached for it, which Unmount detaches.
var (
	mountMu    sync.Mutex
	mountLoops = map[string]*loopDev{}
)

// Mount mounts the btrfs on dev at a new directory with options opts
// ("" for none) and returns the directory; t.Cleanup unmounts it unless
// Unmount already did. A failed mount shows the tail of the kernel log.
func Mount(t testing.TB, dev, opts string) string {
	t.Helper()
	args := []string{"-t", "btrfs"}
	if opts != "" {
		args = append(args, "-o", opts)
	}
	dir := t.TempDir()
	args = append(args, dev, dir)
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		dmesg, _ := exec.Command("dmesg").Output()
		lines := strings.Split(strings.TrimSpace(string(dmesg)), "\n")
		t.Fatalf("mount %s: %v\n%s\nkernel log tail:\n%s", strings.Join(args, " "), err, out,
			strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// LoopMount attaches img to a loop device and mounts it with options opts
// at a new directory, which it returns. Unmount, or else t.Cleanup,
// unmounts it and detaches the loop device.
func LoopMount(t testing.TB, img, opts string) string {
	t.Helper()
	l := attach(t, img)
	dir := Mount(t, l.name, opts)
	mountMu.Lock()
	mountLoops[dir] = l
	mountMu.Unlock()
	return dir
}

// Unmount unmounts dir (made by Mount or LoopMount) now, retrying while it
// is busy, and detaches the loop device LoopMount attached for it. The
// test fails if it stays mounted.
func Unmount(t testing.TB, dir string) {
	t.Helper()
	if err := unmount(dir); err != nil {
		t.Fatal(err)
	}
}

func unmount(dir string) error {
	var err error
	if isMounted(dir) {
		err = umountRetry(dir)
	}
	mountMu.Lock()
	l := mountLoops[dir]
	delete(mountLoops, dir)
	mountMu.Unlock()
	if l != nil {
		if derr := l.detach(); err == nil {
			err = derr
		}
	}
	return err
}

// umountRetry unmounts dir. "target is busy" is retried for ten seconds: a
// process forked by a parallel test may briefly hold a descriptor of the
// mount, and a background balance holds it until paused (a pause can come
// before the balance starts, so it is repeated). It falls back to a lazy
// unmount and reports who holds the mount.
func umountRetry(dir string) error {
	var out []byte
	var err error
	for i := 0; i < 100; i++ {
		if out, err = exec.Command("umount", dir).CombinedOutput(); err == nil {
			return nil
		}
		exec.Command("btrfs", "balance", "pause", dir).Run()
		time.Sleep(100 * time.Millisecond)
	}
	holders, _ := exec.Command("sh", "-c", "ls -l /proc/[0-9]*/fd 2>/dev/null | grep -F -- "+shellQuote(dir)+" | head").CombinedOutput()
	exec.Command("umount", "-l", dir).Run()
	return fmt.Errorf("umount %s: %w\n%s\nopen files under it:\n%s", dir, err, out, holders)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// isMounted reports whether dir is a mount point in this mount namespace.
func isMounted(dir string) bool {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	esc := strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`).Replace(dir)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == esc {
			return true
		}
	}
	return false
}
