package scrub_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/scrub"
	"github.com/gobtrfs/gobtrfs/internal/testimg/multidev"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// openSet opens the devices of a multi-device filesystem.
func openSet(t *testing.T, imgs []string, write bool) *fsinfo.FSInfo {
	t.Helper()
	var devs []blockdev.Device
	for _, p := range imgs {
		d, err := blockdev.OpenFile(p, !write)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		devs = append(devs, d)
	}
	fi, err := fsinfo.OpenDevices(devs, fsinfo.Options{ReadOnly: true, DeviceNames: imgs})
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// copyOn is the physical offset of the copy of [logical, +n) on devid.
func copyOn(t *testing.T, fi *fsinfo.FSInfo, logical ondisk.LogicalAddr, n uint64, devid ondisk.DevID) ondisk.PhysicalAddr {
	t.Helper()
	copies, _, err := fi.Chunks.Map(logical, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if c.DevID == devid {
			return c.Physical
		}
	}
	t.Fatalf("logical %d has no copy on devid %d: %+v", logical, devid, copies)
	return 0
}

// largestDataExtent is the start of the largest data extent.
func largestDataExtent(t *testing.T, fi *fsinfo.FSInfo) ondisk.LogicalAddr {
	t.Helper()
	et, err := fi.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	var data ondisk.Key
	et.Range(ondisk.Key{}, ondisk.Key{ObjectID: ^ondisk.ObjectID(0), Type: 255, Offset: ^uint64(0)}, func(k ondisk.Key, b []byte) bool {
		if k.Type == ondisk.ExtentItemKey {
			if e, err := item.DecodeExtentItem(b); err == nil && e.Flags&item.ExtentFlagData != 0 && k.Offset > data.Offset {
				data = k
			}
		}
		return true
	})
	if data.Offset < 16384 {
		t.Fatalf("no data extent of 16 KiB or more (largest %v)", data)
	}
	return ondisk.LogicalAddr(data.ObjectID)
}

// TestScrubRAID1 damages the devid 2 copy of a data extent and of a tree
// block of a kernel-made two-device RAID1 filesystem: scrub of both
// images finds both on devid 2, --repair rewrites them from devid 1, and
// both checkers are clean.
func TestScrubRAID1(t *testing.T) {
	k := multidev.Make(t, t.TempDir(), multidev.Spec{Devices: 2, Data: "raid1", Meta: "raid1"})
	if err := k.Detach(); err != nil {
		t.Fatal(err)
	}
	fi := openSet(t, k.Images, false)
	ri, _, err := fi.RootItem(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	data := largestDataExtent(t, fi)
	dataPhys := copyOn(t, fi, data+8192, 4096, 2)
	metaPhys := copyOn(t, fi, ri.Bytenr, uint64(fi.Super.NodeSize), 2)
	flipAt(t, k.Images[1], int64(dataPhys)+17)
	flipAt(t, k.Images[1], int64(metaPhys)+900)

	run := func(repair bool) *scrub.Report {
		rep, err := scrub.Run(openSet(t, k.Images, repair), scrub.Options{Repair: repair})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := run(false)
	if rep.CsumErrors != 1 || rep.VerifyErrors != uint64(fi.Super.NodeSize/fi.Super.SectorSize) || rep.Uncorrectable != 0 {
		t.Fatalf("damaged RAID1: %s, uncorrectable %d: %v", rep.Summary(), rep.Uncorrectable, rep.Errors)
	}
	for _, e := range rep.Errors {
		if e.DevID != 2 || e.Copies != 2 {
			t.Errorf("error on devid %d (copy %d of %d), want devid 2: %s", e.DevID, e.Mirror, e.Copies, e)
		}
		if !e.Metadata && (len(e.Files) == 0 || e.Files[0].Path == "") {
			t.Errorf("data error names no file: %s", e)
		}
	}
	if rep = run(true); !rep.OK() || rep.Corrected != uint64(rep.CsumErrors+rep.VerifyErrors) {
		t.Fatalf("repair: %s, corrected %d: %v", rep.Summary(), rep.Corrected, rep.Errors)
	}
	if rep = run(false); rep.NumErrors != 0 {
		t.Fatalf("after repair: %s: %v", rep.Summary(), rep.Errors)
	}
	if r, err := check.ImagesWith(k.Images, check.Options{CheckDataCsum: true}); err != nil || !r.OK() {
		t.Fatalf("our checker after repair: %v %v", err, r.Problems)
	}
	if testutil.HaveProgs() {
		var loops []string
		for _, img := range k.Images {
			loops = append(loops, testutil.Loop(t, img))
		}
		exec.Command("btrfs", "device", "scan").Run()
		out, err := exec.Command("btrfs", "check", "--readonly", "--check-data-csum", loops[0]).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "no error found") {
			t.Fatalf("btrfs check --check-data-csum after repair: %v\n%s", err, out)
		}
	}
}
