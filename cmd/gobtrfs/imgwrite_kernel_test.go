package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// wtMount loop-mounts img; cleanup unmounts and detaches the loop device.
func wtMount(t *testing.T, img string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel mount tests need root")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("losetup not installed")
	}
	if fss, _ := os.ReadFile("/proc/filesystems"); !bytes.Contains(fss, []byte("btrfs")) {
		exec.Command("modprobe", "btrfs").Run()
		if fss, _ = os.ReadFile("/proc/filesystems"); !bytes.Contains(fss, []byte("btrfs")) {
			t.Skip("the kernel has no btrfs")
		}
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "btrfs", "-o", "loop,noatime", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { wtUmount(t, img, mnt) })
	return mnt
}

func wtUmount(t *testing.T, img, mnt string) {
	t.Helper()
	if data, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(data, []byte(" "+mnt+" ")) {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount: %v\n%s", err, out)
			exec.Command("umount", "-l", mnt).Run()
		}
	}
	out, _ := exec.Command("losetup", "-j", img).Output()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if dev, _, ok := strings.Cut(l, ":"); ok && dev != "" {
			exec.Command("losetup", "-d", dev).Run()
		}
	}
}

// TestKernelImageEditedByCommands: a kernel-made image changed by put, rm,
// mv, mkdir, ln and subvolume, then mounted by the kernel again.
func TestKernelImageEditedByCommands(t *testing.T) {
	img := wtMkfsBtrfs(t)
	mnt := wtMount(t, img)
	w := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mnt, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mnt, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("kdir/a", "kernel a")
	w("kdir/big", strings.Repeat("kernel big ", 20000))
	w("kfile", "k")
	w("kfile2", "gone soon")
	os.Link(filepath.Join(mnt, "kfile"), filepath.Join(mnt, "kdir/kfile-link"))
	unix.Setxattr(filepath.Join(mnt, "kfile"), "user.k", []byte("v"), 0)
	if out, err := exec.Command("btrfs", "subvolume", "create", filepath.Join(mnt, "sv")).CombinedOutput(); err != nil {
		t.Fatalf("subvolume create: %v\n%s", err, out)
	}
	w("sv/inside", "in the subvolume")
	wtUmount(t, img, mnt)
	wtCheckImage(t, img)

	src := wtMakeSource(t)
	runW(t, img, putMain, img, src, "/")
	runW(t, img, rmMain, img, "/kfile2")
	runW(t, img, mvMain, img, "/kdir", "/kdir-moved")
	runW(t, img, putMain, img, filepath.Join(src, "small"), "/kdir-moved/a") // replaces
	runW(t, img, lnMain, "-s", img, "kdir-moved/big", "/biglink")
	runW(t, img, mkdirMain, "-p", img, "/new/deep/dir")
	runW(t, img, wtSubvolumeMain2, "snapshot", img, "/sv", "/sv-snap")
	runW(t, img, rmMain, "-r", img, "/sv")

	mnt = wtMount(t, img)
	wtCompareTrees(t, "kernel view of put", wtDescribeHostTree(t, src), wtDescribeHostTree(t, filepath.Join(mnt, "src")))
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(mnt, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("kdir-moved/a") != "hello\n" || read("biglink") != strings.Repeat("kernel big ", 20000) ||
		read("sv-snap/inside") != "in the subvolume" || read("kdir-moved/kfile-link") != "k" {
		t.Fatal("kernel sees wrong content")
	}
	for _, gone := range []string{"kfile2", "kdir", "sv"} {
		if _, err := os.Lstat(filepath.Join(mnt, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", gone, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(mnt, "new/deep/dir")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir -p: %v", err)
	}
	// the kernel writes on top
	if err := os.WriteFile(filepath.Join(mnt, "src/dir/big"), []byte("overwritten by the kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(mnt, "src/dir/deeper"))
	wtUmount(t, img, mnt)
	wtCheckImage(t, img)
	var out bytes.Buffer
	if err := subvolumeMain([]string{"list", img}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "path sv-snap") {
		t.Fatalf("subvolume list: %v\n%s", err, out.String())
	}
}
