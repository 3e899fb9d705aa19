package datacsum

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestLookupVerify reads every data extent of an image with each checksum
// type, looks its sums up (whole, and in unaligned-to-item pieces) and
// verifies the data; a flipped byte must be caught in the right sector.
func TestLookupVerify(t *testing.T) {
	testutil.NeedProgs(t)
	for _, cs := range []string{"crc32c", "xxhash", "sha256", "blake2"} {
		t.Run(cs, func(t *testing.T) {
			_, img := testimg.MkfsSource(t, testimg.SourceOptions{Seed: 5}, 256<<20, "--csum", cs, "-m", "single")
			info := testimg.OpenFS(t, img)
			ct, _ := info.Tree(ondisk.CsumTreeObjectID)
			d := &Tree{T: ct, SectorSize: info.Super.SectorSize, Type: info.Csum}
			fst, _ := info.Tree(ondisk.FSTreeObjectID)
			ss := uint64(d.SectorSize)
			extents := 0
			fst.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, data []byte) bool {
				if k.Type != ondisk.ExtentDataKey {
					return true
				}
				fe, err := item.DecodeFileExtentItem(data)
				if err != nil || fe.Type != item.FileExtentReg || fe.DiskBytenr == 0 {
					return true
				}
				extents++
				buf := make([]byte, fe.DiskNumBytes)
				if err := info.R.ReadLogical(buf, fe.DiskBytenr, 0); err != nil {
					t.Fatal(err)
				}
				s, err := d.Lookup(fe.DiskBytenr, fe.DiskNumBytes)
				if err != nil || s.Missing() != 0 {
					t.Fatalf("lookup %d+%d: missing %d, %v", fe.DiskBytenr, fe.DiskNumBytes, s.Missing(), err)
				}
				if bad := d.Verify(s, 0, buf); bad >= 0 {
					t.Fatalf("extent %d: sector %d does not verify", fe.DiskBytenr, bad)
				}
				// a piece from the second sector on
				if fe.DiskNumBytes > 2*ss {
					p, _ := d.Lookup(fe.DiskBytenr+ondisk.LogicalAddr(ss), fe.DiskNumBytes-ss)
					if d.Verify(p, 0, buf[ss:]) >= 0 {
						t.Fatal("piece does not verify")
					}
					buf[ss+10] ^= 1
					if bad := d.Verify(s, 0, buf); bad != 1 {
						t.Fatalf("flipped byte in sector 1 reported at %d", bad)
					}
				}
				return true
			})
			if extents == 0 {
				t.Fatal("no data extents")
			}
			// far past every chunk: nothing
			s, err := d.Lookup(ondisk.LogicalAddr(1<<40), 4*ss)
			if err != nil || s.Missing() != 4 {
				t.Fatalf("unused range: missing %d, %v", s.Missing(), err)
			}
			if _, err := d.Lookup(1, ss); err == nil {
				t.Fatal("unaligned lookup accepted")
			}
		})
	}
}
