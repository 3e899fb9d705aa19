package gobtrfs

// ExtentCacheStats describes the extent mapping cache.
type ExtentCacheStats struct {
	Inodes    int   // inodes with cached mappings
	Entries   int   // cached extents over all inodes
	Bytes     int64 // memory held (estimated)
	MaxBytes  int64 // budget (Options.ExtentCacheBytes)
	Hits      int64 // lookups answered from the cache
	Misses    int64 // lookups that read the tree
	Evictions int64 // mappings dropped to stay within MaxBytes
}

// InodeKey names an inode across subvolumes: Stat's Subvol and Ino. It is
// the public form of the engines' ondisk.InodeRef.
type InodeKey struct {
	Subvol uint64 // subvolume (tree) ID, Stat.Subvol
	Ino    uint64 // inode number in it, Stat.Ino
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
