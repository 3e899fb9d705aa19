package gobtrfs

// ExtentCacheStats describes the extent mapping cache.
type ExtentCacheStats struct {
	Inodes    int   // inodes with cached mappings
	Entries   int   // cached extents over all inodes
	Bytes     int64 // memory held (estimated)
	MaxBytes  int64 // budget (Options.ExtentCacheBytes)
	Hits      int64
	Misses    int64
	Evictions int64
}

// InodeKey names an inode across subvolumes: Stat's Subvol and Ino. It is
// the public form of the engines' ondisk.InodeRef.
type InodeKey struct {
	Subvol uint64
	Ino    uint64
}

// ExtentCacheStats returns the extent mapping cache's counters.
func (f *FS) ExtentCacheStats() ExtentCacheStats {
	s := f.e.Extents().Stats()
	return ExtentCacheStats{Inodes: s.Inodes, Entries: s.Entries, Bytes: s.Bytes, MaxBytes: s.MaxBytes,
		Hits: s.Hits, Misses: s.Misses, Evictions: s.Evictions}
}

// ExtentCacheEntries returns the number of cached extents per inode.
func (f *FS) ExtentCacheEntries() map[InodeKey]int {
	out := map[InodeKey]int{}
	for id, n := range f.e.Extents().InodeEntries() {
		out[InodeKey{Subvol: uint64(id.Root), Ino: uint64(id.Ino)}] = n
	}
	return out
}
