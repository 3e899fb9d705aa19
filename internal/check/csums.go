package check

import (
	"bytes"
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// csumItem is an EXTENT_CSUM item: checksums of [start, end).
type csumItem struct {
	start, end uint64
	key        ondisk.Key
	leaf       ondisk.LogicalAddr
}

// csumTreeLeaf records the checksum items of a csum tree leaf and, with
// Options.CheckDataCsum, verifies the data they cover.
// mirrors check_csum_root
func (c *checker) csumTreeLeaf(n *diskio.Node, fresh bool) {
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		d := n.ItemData(i)
		bad := func(format string, args ...any) {
			c.problem(ClassCsum, ondisk.CsumTreeObjectID, n.Addr, keyp(k), format, args...)
		}
		if k.ObjectID != ondisk.ExtentCsumObjectID || k.Type != ondisk.ExtentCsumKey {
			bad("unexpected item in the csum tree")
			continue
		}
		c.rep.CsumBytes += uint64(len(d))
		if len(d) == 0 || len(d)%c.csumSize != 0 {
			bad("checksum item of %d bytes is not a multiple of the %d-byte checksum", len(d), c.csumSize)
			continue
		}
		if k.Offset%c.sectorsize != 0 {
			bad("checksum item start %d not aligned to sectorsize %d", k.Offset, c.sectorsize)
		}
		nsums := uint64(len(d) / c.csumSize)
		it := csumItem{start: k.Offset, end: k.Offset + nsums*c.sectorsize, key: k, leaf: n.Addr}
		if nc := len(c.csumItems); nc > 0 && c.csumItems[nc-1].end > it.start {
			bad("checksums for [%d, %d) overlap the previous item's, which end at %d", it.start, it.end, c.csumItems[nc-1].end)
		}
		c.csumItems = append(c.csumItems, it)
		c.csums.appendMerged(rng{it.start, it.end})
		if c.opt.CheckDataCsum {
			c.verifyData(&it, d, bad)
		}
	}
}

// verifyData reads the sectors of a checksum item and compares them with
// their checksums, trying every copy before calling a sector bad.
func (c *checker) verifyData(it *csumItem, sums []byte, bad func(string, ...any)) {
	const chunk = 1 << 20
	ss := c.sectorsize
	buf := make([]byte, chunk)
	for off := it.start; off < it.end; off += chunk {
		n := min(uint64(chunk), it.end-off)
		b := buf[:n]
		missing := map[uint64]bool{} // sectors on a missing device (read one by one)
		if err := c.r.ReadLogical(b, ondisk.LogicalAddr(off), 0); err != nil {
			if !errors.Is(err, volume.ErrMissingDevice) {
				bad("read data [%d, %d): %v", off, off+n, err)
				return
			}
			for s := uint64(0); s < n; s += ss {
				if err := c.r.ReadLogical(b[s:s+ss], ondisk.LogicalAddr(off+s), 0); err != nil {
					if !errors.Is(err, volume.ErrMissingDevice) {
						bad("read data sector at logical %d: %v", off+s, err)
						return
					}
					missing[s] = true
					c.unverifiedData(err, ss)
				}
			}
		}
		for s := uint64(0); s < n; s += ss {
			if missing[s] {
				continue
			}
			idx := (off + s - it.start) / ss
			want := sums[idx*uint64(c.csumSize) : (idx+1)*uint64(c.csumSize)]
			if bytes.Equal(c.fi.Csum.Sum(b[s:s+ss]), want) {
				c.rep.DataBytesVerified += ss
				continue
			}
			c.verifyOtherCopies(off+s, want, bad)
		}
	}
}

// unverifiedData counts data that cannot be read because every copy is on
// a missing device: not damage (btrfs check passes it too), said once per
// device at the end (reportUnverified).
func (c *checker) unverifiedData(err error, n uint64) {
	var me *volume.MissingDeviceError
	if !errors.As(err, &me) {
		return
	}
	if c.unverified == nil {
		c.unverified = map[volume.MissingDeviceError]uint64{}
	}
	c.unverified[*me] += n
}

func (c *checker) reportUnverified() {
	for _, m := range c.fi.Devices.Missing() {
		if n := c.unverified[m]; n > 0 {
			c.rep.warn("%d bytes of data not verified against their checksums: their only copy is on devid %d (uuid %v), which is missing", n, m.DevID, m.UUID)
		}
	}
}

func (c *checker) verifyOtherCopies(logical uint64, want []byte, bad func(string, ...any)) {
	copies := c.r.NumCopies(ondisk.LogicalAddr(logical))
	sector := make([]byte, c.sectorsize)
	for m := 1; m < copies; m++ {
		if c.r.ReadLogical(sector, ondisk.LogicalAddr(logical), m) == nil && bytes.Equal(c.fi.Csum.Sum(sector), want) {
			c.rep.warn("data at logical %d: copy 1 fails its checksum, copy %d is good", logical, m+1)
			c.rep.DataBytesVerified += c.sectorsize
			return
		}
	}
	bad("data sector at logical %d fails its %s checksum (all %d copies)", logical, c.fi.Csum, max(copies, 1))
}

// checkCsumsAgainstExtents flags checksums of space no data extent item covers.
// mirrors check_extent_exists
func (c *checker) checkCsumsAgainstExtents() {
	var data rangeList
	for i := range c.ext.recs {
		if e := &c.ext.recs[i]; !e.metadata && !e.broken {
			data.appendMerged(rng{e.start, e.end()})
		}
	}
	// extents only a pending log tree refers to get their extent items
	// when the log is replayed; their checksums are already in place
	data = append(data, c.logs.data...).normalize()
	reported := 0
	for i := range c.csumItems {
		it := &c.csumItems[i]
		stray := rangeList{{it.start, it.end}}.subtract(data)
		for _, r := range stray {
			if reported++; reported > 20 {
				break
			}
			c.problem(ClassCsum, ondisk.CsumTreeObjectID, it.leaf, keyp(it.key), "checksums for [%d, %d), where there is no data extent item", r.start, r.end)
		}
	}
	if reported > 20 {
		c.problem(ClassCsum, ondisk.CsumTreeObjectID, 0, nil, "... and %d more checksum ranges without data extents", reported-20)
	}
}
