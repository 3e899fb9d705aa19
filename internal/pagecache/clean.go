package pagecache

import (
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// CleanRanges returns the parts of [off, off+n) that k has no dirty bytes
// for, in order: what a read must take from disk. (A read whose range is
// dirty throughout needs nothing from disk, so a damaged sector under
// dirty bytes does not fail it.)
func (c *Cache) CleanRanges(k ondisk.InodeRef, off, n int64) [][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := off + n
	var out [][2]int64
	pos := off
	if in := c.inodes[k]; in != nil {
		var cov [][2]int64
		for _, s := range in.dirty.spans {
			if s.end() > off && s.off < end {
				cov = append(cov, [2]int64{s.off, s.end()})
			}
		}
		cov = in.wb.covered(cov, off, end) // in flight: not on disk yet either
		sort.Slice(cov, func(i, j int) bool { return cov[i][0] < cov[j][0] })
		for _, s := range cov {
			if s[1] <= pos {
				continue
			}
			if s[0] > pos {
				out = append(out, [2]int64{pos, s[0]})
			}
			pos = s[1]
		}
	}
	if pos < end {
		out = append(out, [2]int64{pos, end})
	}
	return out
}

// Clean reports whether k has no buffered bytes at all: none dirty, none
// in flight, none being written back. A reader that sees it clean can take
// the on-disk bytes without excluding writeback (no bytes of k can move
// from the cache to the disk under it; any that arrive later belong to a
// write overlapping the read).
func (c *Cache) Clean(k ondisk.InodeRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.inodes[k]
	return in == nil || len(in.dirty.spans) == 0 && in.dirty.bytes == 0 && in.wb.empty() && !in.underWB
}
