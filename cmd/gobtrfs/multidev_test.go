package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testimg/multidev"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestMultiDeviceCLI runs ls, cat, restore, check and inspect dump-tree on
// kernel-made two-device filesystems, the second device given with -d (or
// as a second IMAGE for check and dump-tree): what they show equals the
// kernel's view and btrfs-progs' dump; with a device left out, a RAID1
// still restores in full with a warning naming the device, and a RAID0
// restore fails naming it.
func TestMultiDeviceCLI(t *testing.T) {
	testutil.NeedRootLoop(t)
	r1 := multidev.Make(t, t.TempDir(), multidev.Spec{Devices: 2, Data: "raid1", Meta: "raid1"})
	r0 := multidev.Make(t, t.TempDir(), multidev.Spec{Devices: 2, Data: "raid0", Meta: "raid1"})
	a, b := r1.Images[0], r1.Images[1]

	var out, errb bytes.Buffer
	run := func(f func([]string, *bytes.Buffer, *bytes.Buffer) error, args ...string) error {
		out.Reset()
		errb.Reset()
		return f(args, &out, &errb)
	}
	ls := func(args []string, o, e *bytes.Buffer) error { return lsMain(args, o, e) }
	cat := func(args []string, o, e *bytes.Buffer) error { return catMain(args, o, e) }
	chk := func(args []string, o, e *bytes.Buffer) error { return checkMain(args, o, e) }
	restore := func(args []string, o, e *bytes.Buffer) error { return restoreMainIO(args, o, e) }
	inspect := func(args []string, o, e *bytes.Buffer) error { return inspectMain(args, o, e) }

	// dump-tree of both devices equals btrfs-progs' (before the loop devices go)
	if err := run(inspect, "dump-tree", a, b); err != nil {
		t.Fatalf("dump-tree: %v\n%s", err, errb.String())
	}
	progs, err := exec.Command("btrfs", "inspect-internal", "dump-tree", a, b).Output()
	if err != nil {
		t.Fatalf("btrfs inspect-internal dump-tree: %v", err)
	}
	ours := out.String()
	ours = ours[strings.Index(ours, "\n")+1:] // our banner line
	theirs := string(progs)
	theirs = theirs[strings.Index(theirs, "\n")+1:]
	if ours != theirs {
		t.Fatalf("dump-tree of both devices differs from btrfs-progs' (%d vs %d bytes)", len(ours), len(theirs))
	}
	for _, k := range []*multidev.FS{r1, r0} {
		if err := k.Detach(); err != nil {
			t.Fatal(err)
		}
	}

	// ls -R with -d lists what the kernel shows
	if err := run(ls, "-R", "-d", b, a); err != nil {
		t.Fatalf("ls -R -d: %v\n%s", err, errb.String())
	}
	var want []string
	for name := range r1.Kernel {
		want = append(want, name)
	}
	slices.Sort(want)
	got := strings.Fields(out.String())
	slices.Sort(got)
	if !slices.Equal(got, want) || errb.Len() > 0 {
		t.Fatalf("ls -R -d: %q (stderr %q), kernel %q", got, errb.String(), want)
	}
	// cat over both devices, in the other order
	if err := run(cat, "--device", a, b, "big"); err != nil {
		t.Fatalf("cat: %v\n%s", err, errb.String())
	}
	if d := multidev.FileDesc(0o644, out.Bytes()); d != r1.Kernel["big"] {
		t.Fatalf("cat big: %s, kernel %s", d, r1.Kernel["big"])
	}
	// restore with every device, and with one left out (RAID1: in full)
	for _, c := range []struct {
		name string
		args []string
		warn bool
	}{{"all", []string{"-d", b, a}, false}, {"without devid 2", []string{a}, true}, {"without devid 1", []string{b}, true}} {
		dest := filepath.Join(t.TempDir(), "dest")
		if err := run(restore, append(append([]string{"-q"}, c.args...), dest)...); err != nil {
			t.Fatalf("restore %s: %v\n%s", c.name, err, errb.String())
		}
		v, err := multidev.View(dest)
		if err != nil {
			t.Fatal(err)
		}
		if d := testutil.DiffMaps(multidev.WithoutDirSizes(r1.Kernel), multidev.WithoutDirSizes(v)); len(d) > 0 {
			t.Fatalf("restore %s differs from the kernel's view:\n%s", c.name, strings.Join(d, "\n"))
		}
		if named := strings.Contains(errb.String(), "is missing"); named != c.warn {
			t.Fatalf("restore %s: stderr %q (want a missing-device warning: %v)", c.name, errb.String(), c.warn)
		}
	}
	// check: both devices as IMAGEs, or -d; one left out is a warning, as for btrfs check
	for _, args := range [][]string{{a, b}, {"-d", a, b}, {b}} {
		if err := run(chk, args...); err != nil {
			t.Fatalf("check %v: %v\n%s", args, err, errb.String())
		}
		if degraded := len(args) == 1; degraded != strings.Contains(errb.String(), "WARNING: device devid 1 (uuid ") {
			t.Fatalf("check %v: stderr %q", args, errb.String())
		}
	}
	// RAID0 data with a device left out: restore fails, naming it
	dest := filepath.Join(t.TempDir(), "dest")
	err = run(restore, "-q", r0.Images[0], dest)
	if err == nil || !strings.Contains(errb.String()+err.Error(), "device devid 2 (uuid ") {
		t.Fatalf("restore of RAID0 without devid 2: %v\n%s", err, errb.String())
	}
}
