package gobtrfs

// Options control how a filesystem is opened. The zero value (or nil) opens
// the default subvolume read-only with data checksums verified.
type Options struct {
	// ReadOnly has no effect: Open, OpenDevices and OpenReaderAt are always
	// read-only. They open the image file O_RDONLY, never write it, and
	// replay a pending log tree in memory only. Use OpenRW to change an
	// image. The field is kept so that code setting it still compiles.
	//
	// Deprecated: every Open is read-only; leave the field unset.
	ReadOnly bool
	// NoVerifyDataCsum skips data checksum verification (metadata blocks are
	// always verified).
	NoVerifyDataCsum bool
	// SuperMirror is the superblock copy to read, numbered from 0 as
	// btrfs-progs numbers them (btrfs restore -u, btrfs check -s,
	// dump-super -s) and as the gobtrfs CLI does: 0 is the primary at
	// 64 KiB, 1 the copy at 64 MiB, 2 the one at 256 GiB. 0 (the default)
	// reads the primary and, when it is bad, the valid copy with the newest
	// generation, telling Warn; 1 or 2 reads only that copy. With
	// ForceSuperMirror, 0 reads only the primary too. Other values are an
	// error.
	//
	// Before this numbering SuperMirror was 1-based (1 = primary, 2 = 64 MiB,
	// 3 = 256 GiB; 0 = primary with fallback): old value N >= 1 is now
	// SuperMirror N-1 with ForceSuperMirror.
	SuperMirror int
	// ForceSuperMirror reads only the SuperMirror copy, even when it is the
	// primary (0): no fallback to another copy when it is bad.
	ForceSuperMirror bool
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
