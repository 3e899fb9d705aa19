package item

// Directory entry types (btrfs_dir_item.type, BTRFS_FT_*).
const (
	FTUnknown = 0
	FTRegFile = 1
	FTDir     = 2
	FTChrdev  = 3
	FTBlkdev  = 4
	FTFifo    = 5
	FTSock    = 6
	FTSymlink = 7
	FTXattr   = 8

	// FTEncrypted is a flag on the stored type of an encrypted name.
	FTEncrypted = 0x80
)

// Linux mode bits as stored in btrfs_inode_item.mode (S_IF*, S_ISUID...).
const (
	SIFMT   = 0o170000 // file type mask
	SIFSOCK = 0o140000
	SIFLNK  = 0o120000
	SIFREG  = 0o100000
	SIFBLK  = 0o060000
	SIFDIR  = 0o040000
	SIFCHR  = 0o020000
	SIFIFO  = 0o010000
	SISUID  = 0o4000
	SISGID  = 0o2000
	SISVTX  = 0o1000
)

// ftModes is the S_IF* file type of each BTRFS_FT_* type.
var ftModes = [...]uint32{
	FTRegFile: SIFREG,
	FTDir:     SIFDIR,
	FTChrdev:  SIFCHR,
	FTBlkdev:  SIFBLK,
	FTFifo:    SIFIFO,
	FTSock:    SIFSOCK,
	FTSymlink: SIFLNK,
}

// FTFromMode is the directory entry type (BTRFS_FT_*) of an inode mode,
// FTUnknown for a mode of no known file type. mirrors btrfs_inode_type
func FTFromMode(mode uint32) uint8 {
	for ft, m := range ftModes {
		if m == mode&SIFMT {
			return uint8(ft)
		}
	}
	return FTUnknown
}

// ModeFromFT is the S_IF* file type bits of a directory entry type, 0 for
// FTUnknown, FTXattr and unknown types.
func ModeFromFT(ft uint8) uint32 {
	if int(ft) < len(ftModes) {
		return ftModes[ft]
	}
	return 0
}

// FTType strips the flags from a stored directory entry type.
// mirrors btrfs_dir_flags_to_ftype
func FTType(stored uint8) uint8 { return stored &^ FTEncrypted }
