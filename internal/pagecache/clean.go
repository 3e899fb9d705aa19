package pagecache

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

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
		for _, s := range in.dirty.spans {
			if s.end() <= pos {
				continue
			}
			if s.off >= end {
				break
			}
			if s.off > pos {
				out = append(out, [2]int64{pos, s.off})
			}
			pos = s.end()
		}
	}
	if pos < end {
		out = append(out, [2]int64{pos, end})
	}
	return out
}
