package volume

import (
	"errors"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func stripes(n int) []ondisk.Stripe {
	var s []ondisk.Stripe
	for i := 0; i < n; i++ {
		s = append(s, ondisk.Stripe{DevID: ondisk.DevID(i + 1), Offset: ondisk.PhysicalAddr(1 << 20 * (i + 1))})
	}
	return s
}

// TestMapRaid5 follows the RAID5 layout row by row: data stripes in order
// starting one device further each row, P after them; the second copy of
// every range is the XOR of the row's other stripes.
func TestMapRaid5(t *testing.T) {
	const sl = 64 << 10
	cm := &ChunkMap{}
	if err := cm.Insert(0, ondisk.Chunk{Length: 6 * sl, StripeLen: sl, Type: ondisk.BlockGroupData | ondisk.BlockGroupRaid5,
		NumStripes: 3, Stripes: stripes(3)}); err != nil {
		t.Fatal(err)
	}
	// logical stripe -> (device of the data, device of P) for 3 devices, 2 data per row
	for _, c := range []struct {
		nr          uint64
		data, p     ondisk.DevID
		row         uint64
		otherData   ondisk.DevID
		inStripeOff uint64
	}{
		{0, 1, 3, 0, 2, 100}, {1, 2, 3, 0, 1, 0}, // row 0: D0 D1 P
		{2, 2, 1, 1, 3, 4096}, {3, 3, 1, 1, 2, 0}, // row 1: P D0 D1
		{4, 3, 2, 2, 1, 0}, {5, 1, 2, 2, 3, sl - 1}, // row 2: D1 P D0
	} {
		logical := ondisk.LogicalAddr(c.nr*sl + c.inStripeOff)
		copies, n, err := cm.Map(logical, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		phys := func(dev ondisk.DevID) ondisk.PhysicalAddr {
			return ondisk.PhysicalAddr(1<<20*uint64(dev) + c.row*sl + c.inStripeOff)
		}
		if len(copies) != 2 || n != sl-c.inStripeOff {
			t.Fatalf("stripe %d: %d copies, %d bytes", c.nr, len(copies), n)
		}
		if d := copies[0]; d.DevID != c.data || d.Physical != phys(c.data) || d.Rebuild != nil {
			t.Errorf("stripe %d: data copy %+v, want devid %d physical %d", c.nr, d, c.data, phys(c.data))
		}
		r := copies[1]
		want := []Copy{{DevID: c.otherData, Physical: phys(c.otherData)}, {DevID: c.p, Physical: phys(c.p)}}
		// the rebuild reads the row's other data stripe and P
		if got := r.Rebuild; len(got) != 2 || !(sameCopy(got[0], want[0]) && sameCopy(got[1], want[1]) ||
			sameCopy(got[0], want[1]) && sameCopy(got[1], want[0])) {
			t.Errorf("stripe %d: rebuild from %+v, want %+v", c.nr, got, want)
		}
	}
}

func sameCopy(a, b Copy) bool {
	return a.DevID == b.DevID && a.Physical == b.Physical && len(a.Rebuild) == 0 && len(b.Rebuild) == 0
}

// TestPresent keeps the copies on present devices, stale ones last, and
// names the missing device when nothing is left.
func TestPresent(t *testing.T) {
	s := NewDeviceSet()
	for _, id := range []ondisk.DevID{1, 2, 3} {
		if err := s.Add(&Member{DevID: id, Dev: blockdev.NewMemory(1 << 20), Stale: id == 1}); err != nil {
			t.Fatal(err)
		}
	}
	uuid := ondisk.UUID{0xab}
	s.MarkMissing(4, uuid)
	if err := s.Add(&Member{DevID: 2, Dev: blockdev.NewMemory(1)}); err == nil {
		t.Fatal("a second devid 2 was accepted")
	}
	got, err := s.Present([]Copy{{DevID: 1}, {DevID: 4}, {DevID: 2}})
	if err != nil || len(got) != 2 || got[0].DevID != 2 || got[1].DevID != 1 {
		t.Fatalf("present: %+v %v, want devid 2 then the stale devid 1", got, err)
	}
	got, err = s.Present([]Copy{{DevID: 4}, {DevID: 4, Rebuild: []Copy{{DevID: 2}, {DevID: 3}}}})
	if err != nil || len(got) != 1 || got[0].Rebuild == nil {
		t.Fatalf("rebuild from present devices: %+v %v", got, err)
	}
	_, err = s.Present([]Copy{{DevID: 4}, {DevID: 4, Rebuild: []Copy{{DevID: 4}, {DevID: 3}}}})
	var me *MissingDeviceError
	if !errors.Is(err, ErrMissingDevice) || !errors.As(err, &me) || me.DevID != 4 || me.UUID != uuid ||
		!strings.Contains(err.Error(), "device devid 4 (uuid ab000000-") {
		t.Fatalf("nothing present: %v", err)
	}
	if m := s.Missing(); len(m) != 1 || m[0].DevID != 4 {
		t.Fatalf("missing: %+v", m)
	}
}
