package gobtrfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/testimg/multidev"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestMultiDeviceKernel reads kernel-made filesystems of several devices
// (mkfs.btrfs over loop devices, files written by a kernel mount): with
// every device given, in either order, our view equals the kernel's and
// both checkers are clean; with a device left out, what has another copy
// still reads in full (RAID1, RAID10, RAID1C3: equal to the kernel's
// degraded mount), and what has none fails naming the missing device.
func TestMultiDeviceKernel(t *testing.T) {
	testutil.NeedRootLoop(t)
	for _, s := range []struct {
		name      string
		spec      multidev.Spec
		redundant bool // every block group survives one device missing
	}{
		{"raid1", multidev.Spec{Devices: 2, Data: "raid1", Meta: "raid1"}, true},
		{"raid0", multidev.Spec{Devices: 2, Data: "raid0", Meta: "raid1"}, false},
		{"single", multidev.Spec{Devices: 2, Data: "single", Meta: "raid1"}, false},
		{"meta-raid0", multidev.Spec{Devices: 2, Data: "single", Meta: "raid0"}, false},
		{"raid10", multidev.Spec{Devices: 4, Data: "raid10", Meta: "raid10"}, true},
		{"raid1c3", multidev.Spec{Devices: 3, Data: "raid1c3", Meta: "raid1c3"}, true},
		// a missing device's stripes are rebuilt from the others and P
		{"raid5", multidev.Spec{Devices: 3, Data: "raid5", Meta: "raid5"}, true},
		{"raid6", multidev.Spec{Devices: 3, Data: "raid6", Meta: "raid6"}, true},
		{"raid5-data", multidev.Spec{Devices: 3, Data: "raid5", Meta: "raid1"}, true}, // btrfs-progs fsck-tests/056
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			k := multidev.Make(t, t.TempDir(), s.spec)
			if len(k.Kernel) < 10 {
				t.Fatalf("kernel view has %d entries: %v", len(k.Kernel), k.Kernel)
			}
			// all devices, in devid order and reversed
			rev := slices.Clone(k.Images)
			slices.Reverse(rev)
			for _, imgs := range [][]string{k.Images, rev} {
				view, warns := multiView(t, imgs)
				if d := testutil.DiffMaps(k.Kernel, view); len(d) > 0 {
					t.Fatalf("devices %v: our view differs from the kernel's:\n%s", imgs, strings.Join(d, "\n"))
				}
				if len(warns) > 0 {
					t.Errorf("devices %v: warnings with every device given: %q", imgs, warns)
				}
			}
			rep, err := check.ImagesWith(k.Images, check.Options{CheckDataCsum: true})
			if err != nil || !rep.OK() {
				t.Fatalf("our check: %v %v", err, rep)
			}
			if rep.DataBytesVerified == 0 {
				t.Fatalf("our check verified no data")
			}
			progsCheck(t, k.Loops[0], true) // btrfs-progs finds the other loop devices by scanning
			if strings.HasPrefix(s.name, "raid5") {
				// (not raid6 of 3 devices: one data stripe per row, P holds the same bytes)
				parityRepair(t, k)
			}
			if s.name == "raid1" {
				// the kernel's degraded view equals ours
				mnt := k.MountDegraded(t, 0)
				kv, err := multidev.View(mnt)
				if err != nil {
					t.Fatal(err)
				}
				testutil.Unmount(t, mnt)
				view, _ := multiView(t, k.Images[:1])
				if d := testutil.DiffMaps(kv, view); len(d) > 0 {
					t.Fatalf("degraded: our view differs from the kernel's degraded mount:\n%s", strings.Join(d, "\n"))
				}
			}
			if err := k.Detach(); err != nil {
				t.Fatal(err)
			}
			if w, err := gobtrfs.OpenRW(k.Images[0], nil); err == nil || !strings.Contains(err.Error(), "multi-device filesystem is not supported") {
				if w != nil {
					w.Close()
				}
				t.Fatalf("OpenRW of a device of a %d-device filesystem: %v, want a refusal", len(k.Images), err)
			}
			// one device left out: the last, then the first
			for _, gone := range []int{len(k.Images) - 1, 0} {
				degraded(t, k, gone, s.redundant)
			}
		})
	}
}

// TestMultiDeviceStale reads a RAID1 whose first device is a copy taken
// before the last commits (it missed them, as a device that was away): the
// newest superblock is used, the stale device's copies are read only after
// the fresh ones, so the view is the kernel's after those commits; our
// check is clean with a warning naming the stale device.
func TestMultiDeviceStale(t *testing.T) {
	testutil.NeedRootLoop(t)
	dir := t.TempDir()
	k := multidev.Make(t, dir, multidev.Spec{Devices: 2, Data: "raid1", Meta: "raid1"})
	stale := filepath.Join(dir, "stale.img")
	testutil.Run(t, "cp", "--sparse=always", k.Images[0], stale) // devid 1: its copies come first in each chunk
	mnt := k.Mount(t)
	if err := os.WriteFile(filepath.Join(mnt, "later"), []byte("written after the copy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "mid")); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "sync")
	kv, err := multidev.View(mnt)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Unmount(t, mnt)
	if err := k.Detach(); err != nil {
		t.Fatal(err)
	}
	for _, imgs := range [][]string{{k.Images[1], stale}, {stale, k.Images[1]}} {
		view, warns := multiView(t, imgs)
		if d := testutil.DiffMaps(kv, view); len(d) > 0 {
			t.Fatalf("%v: our view differs from the kernel's after the last commits:\n%s", imgs, strings.Join(d, "\n"))
		}
		if !slices.ContainsFunc(warns, func(s string) bool { return strings.Contains(s, "missed the last commits") }) {
			t.Errorf("%v: no warning about the stale device: %q", imgs, warns)
		}
		rep, err := check.ImagesWith(imgs, check.Options{CheckDataCsum: true})
		if err != nil || !rep.OK() {
			t.Fatalf("our check of %v: %v %v", imgs, err, rep)
		}
	}
}

// TestMultiDeviceSeed reads a filesystem sprouted from a seed (btrfs-progs
// fsck-tests/057: btrfstune -S 1, then btrfs device add): with the seed
// given too, our view equals the kernel's and both checkers are clean; the
// seed alone is a clean filesystem of its own; the sprouted device alone
// cannot be checked without its seed, for btrfs check either.
func TestMultiDeviceSeed(t *testing.T) {
	k := multidev.MakeSprouted(t, t.TempDir())
	progsCheck(t, k.Loops[1], true) // btrfs-progs finds the seed by scanning
	if err := k.Detach(); err != nil {
		t.Fatal(err)
	}
	seed, sprout := k.Images[0], k.Images[1]
	for _, imgs := range [][]string{{sprout, seed}, {seed, sprout}} {
		view, warns := multiView(t, imgs)
		if d := testutil.DiffMaps(k.Kernel, view); len(d) > 0 {
			t.Fatalf("%v: our view differs from the kernel's:\n%s", imgs, strings.Join(d, "\n"))
		}
		if len(warns) > 0 {
			t.Errorf("%v: warnings: %q", imgs, warns)
		}
		rep, err := check.ImagesWith(imgs, check.Options{CheckDataCsum: true})
		if err != nil || !rep.OK() || len(rep.Warnings) > 0 && !onlyMkfsLeftovers(rep.Warnings) {
			t.Fatalf("our check of %v: %v %v", imgs, err, rep)
		}
	}
	rep, err := check.ImagesWith([]string{seed}, check.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("our check of the seed alone: %v %v", err, rep)
	}
	progsCheck(t, seed, true)
	rep, err = check.ImagesWith([]string{sprout}, check.Options{})
	if err == nil && rep.OK() {
		t.Fatalf("our check of the sprouted device without its seed is clean")
	}
	if !strings.Contains(fmt.Sprint(err, rep), "device devid 1 (uuid ") {
		t.Errorf("our check of the sprouted device alone does not name the seed device: %v %v", err, rep)
	}
	progsCheck(t, sprout, false)
}

// onlyMkfsLeftovers reports whether every warning is about the free space
// tree entries mkfs.btrfs 6.2 leaves behind.
func onlyMkfsLeftovers(w []string) bool {
	return !slices.ContainsFunc(w, func(s string) bool { return !strings.Contains(s, "leftover of the temporary chunks") })
}

// parityRepair damages one sector of a RAID5/6 data stripe (in a copy of
// its device) and reads it back: the checksum fails, the sector is rebuilt
// from the other stripes and P, and the file reads as the kernel wrote it.
func parityRepair(t *testing.T, k *multidev.FS) {
	t.Helper()
	fsys, err := gobtrfs.OpenDevices(k.Images, nil)
	if err != nil {
		t.Fatal(err)
	}
	big, err := fs.ReadFile(fsys, "big")
	fsys.Close()
	if err != nil {
		t.Fatal(err)
	}
	sector := big[64<<10 : 68<<10] // the second stripe's first sector
	imgs := slices.Clone(k.Images)
	found := false
	for i, img := range imgs {
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+len(sector) <= len(b); off += 4096 {
			if bytes.Equal(b[off:off+len(sector)], sector) {
				for j := off; j < off+len(sector); j++ {
					b[j] ^= 0x5a
				}
				imgs[i] = filepath.Join(t.TempDir(), "damaged.img")
				if err := os.WriteFile(imgs[i], b, 0o644); err != nil {
					t.Fatal(err)
				}
				found = true
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		t.Fatal("the sector of big is on no device")
	}
	view, warns := multiView(t, imgs)
	if d := testutil.DiffMaps(k.Kernel, view); len(d) > 0 {
		t.Fatalf("one data sector damaged: our view differs from the kernel's:\n%s", strings.Join(d, "\n"))
	}
	if !slices.ContainsFunc(warns, func(s string) bool {
		return strings.Contains(s, "used copy 2") || strings.Contains(s, "every sector good in one of 2 copies")
	}) {
		t.Errorf("one data sector damaged: no warning that it was rebuilt: %q", warns)
	}
	rep, err := check.ImagesWith(imgs, check.Options{CheckDataCsum: true})
	if err != nil || !rep.OK() || !slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.Contains(s, "copy 2 is good") }) {
		t.Fatalf("our check with one data sector damaged: %v %v (warnings %q)", err, rep, rep.Warnings)
	}
}

// degraded opens k without device gone (an index of k.Images). With two
// devices, btrfs check of the one image left (it finds no other device once
// k is detached) gives the verdict ours must agree with.
func degraded(t *testing.T, k *multidev.FS, gone int, redundant bool) {
	t.Helper()
	imgs := slices.Delete(slices.Clone(k.Images), gone, gone+1)
	devid := gone + 1
	missing := fmt.Sprintf("device devid %d (uuid ", devid)
	rep, cerr := check.ImagesWith(imgs, check.Options{CheckDataCsum: true})
	ourClean := cerr == nil && rep.OK()
	if len(imgs) == 1 {
		progsCheck(t, imgs[0], ourClean)
	}
	fsys, err := gobtrfs.OpenDevices(imgs, &gobtrfs.Options{})
	if err != nil {
		if redundant {
			t.Fatalf("without devid %d: %v", devid, err)
		}
		// metadata without a copy on the other devices: the open fails, naming the device
		if !errors.Is(err, gobtrfs.ErrMissingDevice) || !strings.Contains(err.Error(), missing) {
			t.Fatalf("without devid %d: open error %q does not name the missing device (errors.Is ErrMissingDevice: %v)",
				devid, err, errors.Is(err, gobtrfs.ErrMissingDevice))
		}
		if ourClean || !strings.Contains(fmt.Sprint(cerr), missing) {
			t.Fatalf("our check without devid %d, which the metadata needs: %v, report %v", devid, cerr, rep)
		}
		t.Logf("without devid %d: open fails: %v", devid, err)
		return
	}
	defer fsys.Close()
	if w := fsys.Warnings(); !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, missing) }) {
		t.Errorf("without devid %d: no warning names it: %q", devid, w)
	}
	view, verr := multidev.ViewFS(fsys, fsys.ReadLink)
	if !ourClean && !redundant && verr != nil {
		// a tree only on the missing device: both checkers fail to open the
		// filesystem, and what needs that tree names the device
		if !strings.Contains(fmt.Sprint(cerr), missing) {
			t.Fatalf("our check without devid %d, which the metadata needs: %v, report %v", devid, cerr, rep)
		}
		if !errors.Is(verr, gobtrfs.ErrMissingDevice) || !strings.Contains(verr.Error(), missing) {
			t.Fatalf("without devid %d: walk: %v, want an error naming the missing device", devid, verr)
		}
		t.Logf("without devid %d: check fails (%v), walk fails: %v", devid, cerr, verr)
		return
	}
	// a missing device is no damage: our check is clean and says which device is missing
	if !ourClean {
		t.Fatalf("our check without devid %d: %v %v", devid, cerr, rep)
	}
	if !slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.Contains(s, missing) }) {
		t.Errorf("our check without devid %d: no warning names it: %q", devid, rep.Warnings)
	}
	if redundant {
		if verr != nil {
			t.Fatalf("without devid %d: %v", devid, verr)
		}
		if d := testutil.DiffMaps(k.Kernel, view); len(d) > 0 {
			t.Fatalf("without devid %d: our view differs from the kernel's:\n%s", devid, strings.Join(d, "\n"))
		}
		t.Logf("without devid %d: %d entries equal to the kernel's, check clean", devid, len(view))
		// the device given but wiped (btrfs-progs fsck-tests/060 wipefs's it): not used, the same view
		wiped := filepath.Join(t.TempDir(), "wiped.img")
		testutil.SparseFile(t, wiped, 128<<20)
		withWiped := slices.Insert(slices.Clone(imgs), gone, wiped)
		wv, warns := multiView(t, withWiped)
		if d := testutil.DiffMaps(k.Kernel, wv); len(d) > 0 {
			t.Fatalf("devid %d wiped: our view differs from the kernel's:\n%s", devid, strings.Join(d, "\n"))
		}
		if !slices.ContainsFunc(warns, func(s string) bool { return strings.Contains(s, "wiped.img: ") && strings.Contains(s, "not used") }) {
			t.Errorf("devid %d wiped: no warning about the wiped image: %q", devid, warns)
		}
		if rep, err := check.ImagesWith(withWiped, check.Options{}); err != nil || !rep.OK() {
			t.Fatalf("our check with devid %d wiped: %v %v", devid, err, rep)
		}
		return
	}
	// data without a copy: each file reads as the kernel's or fails naming the device
	lost := 0
	for name, want := range k.Kernel {
		if !strings.HasPrefix(want, "-") {
			continue // not a regular file
		}
		b, err := fs.ReadFile(fsys, name)
		if err == nil {
			if got := multidev.FileDesc(0o644, b); got != want {
				t.Errorf("without devid %d: %s: %q, kernel %q", devid, name, got, want)
			}
			continue
		}
		lost++
		var de *gobtrfs.DataError
		if !errors.Is(err, gobtrfs.ErrMissingDevice) || !strings.Contains(err.Error(), missing) || !errors.As(err, &de) {
			t.Fatalf("without devid %d: reading %s: %v, want a *DataError naming the missing device", devid, name, err)
		}
		if name == "big" {
			t.Logf("without devid %d: big: %v", devid, err)
		}
	}
	if strings.HasPrefix(k.Kernel["big"], "-") && rep.DataBytesVerified == 0 && lost == 0 {
		t.Errorf("without devid %d: nothing verified and nothing lost", devid)
	}
	if lost > 0 && !slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.Contains(s, "not verified") }) {
		t.Errorf("our check without devid %d: %d files unreadable but no data said unverified: %q", devid, lost, rep.Warnings)
	}
	t.Logf("without devid %d: check clean, %d data bytes verified; %d files unreadable", devid, rep.DataBytesVerified, lost)
}

var viewMu sync.Mutex

// multiView opens imgs and describes the tree as multidev.View does.
func multiView(t *testing.T, imgs []string) (map[string]string, []string) {
	t.Helper()
	var warns []string
	fsys, err := gobtrfs.OpenDevices(imgs, &gobtrfs.Options{Warn: func(s string) {
		viewMu.Lock()
		warns = append(warns, s)
		viewMu.Unlock()
	}})
	if err != nil {
		t.Fatalf("open %v: %v", imgs, err)
	}
	defer fsys.Close()
	v, err := multidev.ViewFS(fsys, fsys.ReadLink)
	if err != nil {
		t.Fatalf("walk %v: %v", imgs, err)
	}
	return v, warns
}

// progsCheck runs btrfs check on the loop device (btrfs-progs finds the
// other devices by scanning) and wants its verdict to be clean.
func progsCheck(t *testing.T, loop string, clean bool) {
	t.Helper()
	out, err := exec.Command("btrfs", "check", "--readonly", loop).CombinedOutput()
	if ok := err == nil && strings.Contains(string(out), "no error found"); ok != clean {
		t.Fatalf("btrfs check %s: %v (want clean=%v)\n%s", loop, err, clean, out)
	}
}
