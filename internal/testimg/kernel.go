package testimg

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// NeedKernel skips unless running as root with loop devices and btrfs.
func NeedKernel(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for loop devices and mount")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skip("no /dev/loop-control: loop devices unavailable")
	}
	for _, c := range []string{"losetup", "mount", "umount", "mkfs.btrfs", "btrfs"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed", c)
		}
	}
	if b, _ := os.ReadFile("/proc/filesystems"); !strings.Contains(string(b), "btrfs") {
		exec.Command("modprobe", "btrfs").Run()
		if b, _ := os.ReadFile("/proc/filesystems"); !strings.Contains(string(b), "btrfs") {
			t.Skip("kernel has no btrfs")
		}
	}
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Loop attaches img to a loop device, detached in t.Cleanup.
func Loop(t testing.TB, img string) string {
	t.Helper()
	dev := strings.TrimSpace(run(t, "losetup", "-f", "--show", img))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	return dev
}

// Mounted is a kernel mount made by Mount.
type Mounted struct {
	Dir  string
	t    testing.TB
	done bool
}

// Mount mounts dev (btrfs) at a new directory with options; t.Cleanup
// unmounts it unless Unmount already did (cleanups run last-in first-out,
// so the unmount precedes the loop detach registered before it).
func Mount(t testing.TB, dev, opts string) *Mounted {
	t.Helper()
	m := &Mounted{Dir: t.TempDir(), t: t}
	args := []string{"-t", "btrfs"}
	if opts != "" {
		args = append(args, "-o", opts)
	}
	run(t, "mount", append(args, dev, m.Dir)...)
	t.Cleanup(func() {
		if !m.done {
			if out, err := exec.Command("umount", m.Dir).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v\n%s", m.Dir, err, out)
			}
		}
	})
	return m
}

// Unmount unmounts now.
func (m *Mounted) Unmount() {
	m.t.Helper()
	if m.done {
		return
	}
	run(m.t, "umount", m.Dir)
	m.done = true
}

// NewKernelImage makes an empty btrfs image of size bytes with mkfs.btrfs
// and extra arguments.
func NewKernelImage(t testing.TB, img string, size int64, args ...string) {
	t.Helper()
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	run(t, "mkfs.btrfs", append(append([]string{"-q", "-f"}, args...), img)...)
}

// RepoRoot is the module root (for scripts/).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// MakeKernelImages runs scripts/mkimages.sh to build the kernel-made test
// image at img (root + loop), then checks it with btrfs check.
func MakeKernelImages(t testing.TB, img string) string {
	t.Helper()
	out := run(t, "bash", filepath.Join(RepoRoot(), "scripts", "mkimages.sh"), img)
	Check(t, img)
	return out
}

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
