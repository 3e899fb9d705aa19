package gobtrfs

import (
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// fileMode converts a Linux mode to an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & item.SIFMT {
	case item.SIFDIR:
		mode |= fs.ModeDir
	case item.SIFLNK:
		mode |= fs.ModeSymlink
	case item.SIFIFO:
		mode |= fs.ModeNamedPipe
	case item.SIFSOCK:
		mode |= fs.ModeSocket
	case item.SIFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case item.SIFBLK:
		mode |= fs.ModeDevice
	case item.SIFREG:
	default:
		mode |= fs.ModeIrregular
	}
	if m&item.SISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&item.SISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&item.SISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// ftMode converts a directory entry's BTRFS_FT_* type to fs.FileMode type bits.
func ftMode(ft uint8) fs.FileMode { return fileMode(item.ModeFromFT(ft)) }
