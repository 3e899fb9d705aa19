package scrub_test

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/scrub"
	"github.com/gobtrfs/gobtrfs/internal/testimg/multidev"
)

// TestScrubCleanProfiles: kernel-made filesystems of every multi-device
// profile scrub without an error (RAID5/6 copies rebuilt from parity
// agree with the data stripes) and every data extent is read.
func TestScrubCleanProfiles(t *testing.T) {
	for _, s := range []multidev.Spec{
		{Devices: 2, Data: "raid0", Meta: "raid1"},
		{Devices: 4, Data: "raid10", Meta: "raid10"},
		{Devices: 3, Data: "raid5", Meta: "raid1"},
		{Devices: 4, Data: "raid6", Meta: "raid1c3"},
	} {
		t.Run(s.Data, func(t *testing.T) {
			k := multidev.Make(t, t.TempDir(), s)
			if err := k.Detach(); err != nil {
				t.Fatal(err)
			}
			rep, err := scrub.Run(openSet(t, k.Images, false), scrub.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.NumErrors != 0 || !rep.OK() || rep.DataExtents == 0 || rep.DataBytes == 0 {
				t.Fatalf("%s: %s, %d data extents, %d data bytes: %v %v", s.Data, rep.Summary(), rep.DataExtents, rep.DataBytes, rep.Errors, rep.WalkErrors)
			}
		})
	}
}

// TestScrubRAID5Repair damages a RAID5 data stripe: scrub finds it (the
// copy rebuilt from parity is good) and --repair writes the rebuilt data
// back to the stripe.
func TestScrubRAID5Repair(t *testing.T) {
	k := multidev.Make(t, t.TempDir(), multidev.Spec{Devices: 3, Data: "raid5", Meta: "raid1"})
	if err := k.Detach(); err != nil {
		t.Fatal(err)
	}
	fi := openSet(t, k.Images, false)
	logical := largestDataExtent(t, fi) + 4096
	copies, _, err := fi.Chunks.Map(logical, 4096)
	if err != nil || len(copies) != 2 || len(copies[1].Rebuild) == 0 {
		t.Fatalf("RAID5 sector: copies %+v, %v", copies, err)
	}
	flipAt(t, k.Images[copies[0].DevID-1], int64(copies[0].Physical)+3)
	run := func(repair bool) *scrub.Report {
		rep, err := scrub.Run(openSet(t, k.Images, repair), scrub.Options{Repair: repair})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(false); rep.CsumErrors != 1 || rep.Uncorrectable != 0 || rep.Errors[0].Logical != logical {
		t.Fatalf("damaged stripe: %s: %v", rep.Summary(), rep.Errors)
	}
	if rep := run(true); rep.Corrected != 1 || !rep.OK() {
		t.Fatalf("repair: %s, corrected %d: %v", rep.Summary(), rep.Corrected, rep.Errors)
	}
	if rep := run(false); rep.NumErrors != 0 {
		t.Fatalf("after repair: %s: %v", rep.Summary(), rep.Errors)
	}
	if r, err := check.ImagesWith(k.Images, check.Options{CheckDataCsum: true}); err != nil || !r.OK() {
		t.Fatalf("our checker after repair: %v %v", err, r.Problems)
	}
}
