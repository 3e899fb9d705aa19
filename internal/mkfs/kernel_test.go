package mkfs

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kernelAvailable reports whether tests may mount images: root, loop
// devices, and btrfs in the kernel.
func kernelAvailable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	for _, p := range []string{"/dev/loop-control", "/sys/fs/btrfs"} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	for _, tool := range []string{"losetup", "mount", "umount", "btrfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false
		}
	}
	return true
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// mountImage attaches img to a loop device and mounts it; cleanups unmount
// and detach even when the test fails. It returns the mount point and a
// function that unmounts early.
func mountImage(t *testing.T, img string, opts ...string) (string, func()) {
	t.Helper()
	mnt := t.TempDir()
	loop := run(t, "losetup", "--find", "--show", img)
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() })
	args := append([]string{"-t", "btrfs"}, opts...)
	if out, err := exec.Command("mount", append(args, loop, mnt)...).CombinedOutput(); err != nil {
		dmesg, _ := exec.Command("sh", "-c", "dmesg | tail -20").Output()
		t.Fatalf("mount %s: %v\n%s\ndmesg:\n%s", img, err, out, dmesg)
	}
	mounted := true
	unmount := func() {
		if !mounted {
			return
		}
		mounted = false
		// A child another parallel test forks may briefly hold a copy of a
		// descriptor we had open on the mount (until its exec closes it),
		// so "target is busy" is retried for a while.
		var out []byte
		var err error
		for i := 0; i < 50; i++ {
			if out, err = exec.Command("umount", mnt).CombinedOutput(); err == nil {
				if i > 0 {
					t.Logf("umount %s succeeded after %d retries", mnt, i)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		holders, _ := exec.Command("sh", "-c", "grep -l "+mnt+" /proc/[0-9]*/mountinfo | head -3; ls -l /proc/[0-9]*/fd 2>/dev/null | grep "+mnt).CombinedOutput()
		t.Errorf("umount %s: %v\n%s\n%s", mnt, err, out, holders)
	}
	t.Cleanup(unmount)
	return mnt, unmount
}

// kernelRoundTrip mounts img, makes a directory, a 10 MiB file and a
// subvolume with a file in it, unmounts, runs btrfs check, and mounts again
// read-only to read the data back.
func kernelRoundTrip(t *testing.T, img string) {
	t.Helper()
	data := make([]byte, 10<<20)
	rand.New(rand.NewSource(int64(len(img)))).Read(data)
	small := []byte("hello from a subvolume\n")

	mnt, unmount := mountImage(t, img)
	if err := os.MkdirAll(filepath.Join(mnt, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "d", "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "btrfs", "subvolume", "create", filepath.Join(mnt, "sv"))
	if err := os.WriteFile(filepath.Join(mnt, "sv", "g"), small, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(mnt, "d", "f"), filepath.Join(mnt, "d", "e", "f2")); err != nil {
		t.Fatal(err)
	}
	run(t, "sync")
	unmount()
	t.Logf("kernel: wrote 10 MiB, a hard link and a subvolume")
	btrfsCheck(t, img)

	mnt, unmount = mountImage(t, img, "-o", "ro")
	defer unmount()
	got, err := os.ReadFile(filepath.Join(mnt, "d", "e", "f2"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back 10 MiB file: %d bytes, err %v, equal %v", len(got), err, bytes.Equal(got, data))
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "sv", "g")); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read back subvolume file: %q, %v", got, err)
	}
}
