package gobtrfs

import "io/fs"

// Linux mode bits as stored in btrfs_inode_item.mode.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
	sISUID  = 0o4000
	sISGID  = 0o2000
	sISVTX  = 0o1000
)

// fileMode converts a Linux mode to an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & sIFMT {
	case sIFDIR:
		mode |= fs.ModeDir
	case sIFLNK:
		mode |= fs.ModeSymlink
	case sIFIFO:
		mode |= fs.ModeNamedPipe
	case sIFSOCK:
		mode |= fs.ModeSocket
	case sIFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case sIFBLK:
		mode |= fs.ModeDevice
	case sIFREG:
	default:
		mode |= fs.ModeIrregular
	}
	if m&sISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&sISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&sISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// ftMode converts a directory entry's BTRFS_FT_* type to fs.FileMode type bits.
func ftMode(ft uint8) fs.FileMode {
	switch ft {
	case 2:
		return fs.ModeDir
	case 3:
		return fs.ModeDevice | fs.ModeCharDevice
	case 4:
		return fs.ModeDevice
	case 5:
		return fs.ModeNamedPipe
	case 6:
		return fs.ModeSocket
	case 7:
		return fs.ModeSymlink
	case 1:
		return 0
	}
	return fs.ModeIrregular
}
