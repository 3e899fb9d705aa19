package gobtrfs

// Options control how a filesystem is opened. The zero value (or nil) opens
// the default subvolume read-only with data checksums verified.
type Options struct {
	// ReadOnly opens the image without write access. The read side never
	// writes; the flag is honoured by the write path.
	ReadOnly bool
	// NoVerifyDataCsum skips data checksum verification (metadata blocks are
	// always verified).
	NoVerifyDataCsum bool
	// SuperMirror picks the superblock copy: 0 uses the primary and falls
	// back to the newest valid mirror when it is bad; N >= 1 forces copy N-1
	// (1 = primary at 64 KiB, 2 = 64 MiB, 3 = 256 GiB).
	SuperMirror int
	// Warn receives notices such as a mirror fallback or a missing data
	// checksum; nil discards them.
	Warn func(string)
	// NoInUseWarning keeps Open quiet when another process has the image
	// open for writing (by default Warn is told that what is read may be
	// stale).
	NoInUseWarning bool
	// ExtentCacheBytes bounds the per-inode extent mapping cache over all
	// inodes (default 16 MiB).
	ExtentCacheBytes int64
	// TreeCacheBytes bounds the tree block cache (default 64 MiB).
	TreeCacheBytes int
	// SubvolID opens that subvolume as "/" (5 is the top level); 0 means the
	// default subvolume unless Subvol is set.
	SubvolID uint64
	// Subvol opens the subvolume at this path from the top level as "/".
	Subvol string
	// NoLogReplay shows the committed state of an image that has a log tree
	// to replay (an fsync before a crash) instead of replaying it in memory
	// as Linux would on mount; Warn is told that fsync'd changes are not
	// shown. The image is never written either way. (mount -o nologreplay)
	NoLogReplay bool
}
