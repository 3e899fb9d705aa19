package scrub

import (
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// extentRec is one extent of the extent tree: a tree block or a data extent.
type extentRec struct {
	start    ondisk.LogicalAddr
	length   uint64
	metadata bool
	level    int // tree blocks
	gen      ondisk.Generation
	inline   []item.InlineRef
}

// extentRec decodes the extent items of the extent tree; other items
// (back references, block group items) are skipped. An item that does not
// decode is skipped too: the checker reports it, scrub reads what it can.
func (s *scrubber) extentRec(k ondisk.Key, data []byte) (extentRec, bool) {
	switch k.Type {
	case ondisk.MetadataItemKey:
		m, err := item.DecodeMetadataItem(data)
		if err != nil {
			return extentRec{}, false
		}
		return extentRec{start: ondisk.LogicalAddr(k.ObjectID), length: uint64(s.fi.Super.NodeSize), metadata: true,
			level: int(k.Offset), gen: m.Generation}, true
	case ondisk.ExtentItemKey:
		e, err := item.DecodeExtentItem(data)
		if err != nil || k.Offset == 0 {
			return extentRec{}, false
		}
		r := extentRec{start: ondisk.LogicalAddr(k.ObjectID), length: k.Offset, gen: e.Generation, inline: e.Inline}
		if e.Flags&item.ExtentFlagTreeBlock != 0 {
			r.metadata, r.level, r.length = true, int(e.TreeBlock.Level), uint64(s.fi.Super.NodeSize)
		}
		return r, true
	}
	return extentRec{}, false
}

// copies maps [logical, logical+n) to its copies on present devices,
// counting what is on missing devices as unverified.
func (s *scrubber) copies(logical ondisk.LogicalAddr, n uint64) ([]volume.Copy, error) {
	all, _, err := s.fi.Chunks.Map(logical, n)
	if err != nil {
		return nil, err
	}
	present, err := s.fi.Devices.Present(all)
	if err != nil {
		s.rep.Unverified += n * uint64(len(all))
		return nil, err
	}
	s.rep.Unverified += n * uint64(len(all)-len(present))
	return present, nil
}

// treeBlock reads every copy of a tree block and checks it as a reader
// would; a bad copy is rewritten from a good one with Repair.
func (s *scrubber) treeBlock(r extentRec) {
	ns := uint64(s.fi.Super.NodeSize)
	if s.o.Progress != nil {
		s.o.Progress.Add(0, int64(ns))
	}
	copies, err := s.copies(r.start, ns)
	if err != nil {
		if !errors.Is(err, volume.ErrMissingDevice) {
			s.report(Error{Kind: ReadError, Metadata: true, Logical: r.start, Length: ns, Level: r.level, Uncorrectable: true, Err: err})
		}
		return
	}
	exp := diskio.Expect{Level: r.level, Generation: r.gen}
	bufs := make([][]byte, len(copies))
	errs := make([]error, len(copies))
	good := -1
	for i := range copies {
		bufs[i] = make([]byte, ns)
		s.rep.TreeExtents++ // per copy, as the kernel counts tree_extents_scrubbed
		if errs[i] = s.fi.R.ReadLogical(bufs[i], r.start, i); errs[i] == nil {
			s.rep.TreeBytes += ns
			errs[i] = s.fi.R.CheckCopy(r.start, bufs[i], exp)
		}
		if errs[i] == nil && good < 0 {
			good = i
		}
	}
	for i, err := range errs {
		if err == nil || len(copies[i].Rebuild) > 0 {
			continue // a failing rebuilt copy is no stored copy (dataExtent)
		}
		hdr := bufs[max(good, i)]
		e := Error{Kind: metaKind(err), Metadata: true, Logical: r.start, Length: ns, DevID: copies[i].DevID,
			Physical: copies[i].Physical, Mirror: i + 1, Copies: len(copies), Level: r.level,
			Tree: ondisk.DecodeHeader(hdr).Owner, Err: err}
		switch {
		case good < 0:
			e.Uncorrectable = true
		case s.o.Repair:
			e.repaired(s.rewrite(r.start, copies[i], bufs[good], func(b []byte) bool {
				return s.fi.R.ReadLogical(b, r.start, i) == nil && s.fi.R.CheckCopy(r.start, b, exp) == nil
			}))
		}
		s.report(e)
	}
	if good >= 0 && s.o.Repair {
		s.fi.R.Invalidate(r.start) // a reader may have cached the bad copy's fallback
	}
}

func metaKind(err error) Kind {
	switch {
	case errors.Is(err, diskio.ErrCsumMismatch):
		return CsumError
	case errors.Is(err, diskio.ErrCorrupt):
		return VerifyError
	}
	return ReadError
}

// rewrite writes good over copy c of logical and reads it back with
// check; it returns why the copy is not repaired, or nil. A copy rebuilt
// from parity has no place of its own to write.
func (s *scrubber) rewrite(logical ondisk.LogicalAddr, c volume.Copy, good []byte, check func([]byte) bool) error {
	if len(c.Rebuild) > 0 {
		return errRebuilt
	}
	if err := s.repairTarget(logical, c, uint64(len(good))); err != nil {
		return err
	}
	dev, err := s.fi.Devices.Device(c.DevID)
	if err != nil {
		return err
	}
	if _, err := dev.WriteAt(good, int64(c.Physical)); err != nil {
		return fmt.Errorf("not repaired: %w", err)
	}
	if !check(make([]byte, len(good))) {
		return errors.New("not repaired: the rewritten copy does not read back good")
	}
	return nil
}

// errRebuilt is rewrite's answer for a copy rebuilt from parity (which has
// no place of its own): not repaired, nothing to add to the error.
var errRebuilt = errors.New("the copy is rebuilt from parity")

// repaired records the result of a rewrite in e.
func (e *Error) repaired(err error) {
	e.Corrected = err == nil
	e.Uncorrectable = !e.Corrected
	if err != nil && err != errRebuilt {
		e.Err = fmt.Errorf("%w; %v", e.Err, err)
	}
}
