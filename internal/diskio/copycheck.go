package diskio

import (
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ErrCsumMismatch marks a tree block copy whose checksum does not match
// (errors.Is), as opposed to one whose checksum matches but whose header
// or items are wrong: scrub counts the two apart, as the kernel's
// csum_errors and verify_errors.
var ErrCsumMismatch = errors.New("checksum mismatch")

// CheckCopy verifies one copy of the tree block at addr, already read into
// buf, with the checks ReadNode makes on every copy it reads: checksum,
// header (bytenr, fsid, level, generation, owner against exp) and the
// tree-checker's item rules. It is for callers that read each copy
// themselves (scrub); buf is not cached.
func (r *Reader) CheckCopy(addr ondisk.LogicalAddr, buf []byte, exp Expect) error {
	if len(buf) != int(r.NodeSize) {
		return corruptf("block of %d bytes, nodesize is %d", len(buf), r.NodeSize)
	}
	if !r.Csum.VerifyBlock(buf) {
		return corruptf("%s %w", r.Csum, ErrCsumMismatch)
	}
	n := &Node{Addr: addr, Data: buf}
	if err := checkNode(n, r.FSID, exp, r.SeedFSIDs...); err != nil {
		return err
	}
	if r.SynthItems {
		return nil
	}
	return r.itemRules().checkItems(n)
}
