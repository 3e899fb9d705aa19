package gobtrfs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fileread"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// ErrCorrupt is matched by errors caused by damaged on-disk data
// (errors.Is(err, gobtrfs.ErrCorrupt)).
var ErrCorrupt = diskio.ErrCorrupt

// ErrNotBtrfs is matched by the error of Open, OpenDevices, OpenReaderAt
// and OpenRW on a file or device that holds no btrfs filesystem: no
// superblock copy carries the btrfs magic (another kind of file, a wiped
// device, one too short for a superblock). A btrfs superblock that is
// damaged matches ErrCorrupt instead.
var ErrNotBtrfs = diskio.ErrNotBtrfs

// ErrLocked is matched by the error of OpenRW (and any other writer) on an
// image that another writer or a read-only mount holds; the error names the
// holder where /proc tells it (errors.Is(err, gobtrfs.ErrLocked)).
var ErrLocked = blockdev.ErrLocked

// ErrMissingDevice is matched by the error of a read that needs a device of
// a multi-device filesystem that was not given to OpenDevices; the error
// names the device (devid and uuid).
var ErrMissingDevice = volume.ErrMissingDevice

// DataError reports file data that could not be read intact: which inode
// (fields Subvol and Ino), where in the file (FileOffset), which logical
// address (Logical) and why (Err, which it unwraps to). Every door (FS, RW,
// the mounts) reports it the same way; errors.As(err, &dataErr) finds it.
type DataError = fileread.DataError

func pathErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == name {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

var (
	errNotDir   = syscall.ENOTDIR
	errIsDir    = syscall.EISDIR
	errNotLink  = syscall.EINVAL
	errBadWhere = syscall.EINVAL
)

// MaxReadFileSize is the largest file ReadFile (FS and RW) reads into
// memory; larger files are read through Open (or ReadAt) in pieces. The
// size comes from the image, which may be crafted: without a bound an
// i_size of 2^40 would take the process down.
const MaxReadFileSize = 4 << 30

func errTooLarge(size uint64) error {
	return fmt.Errorf("file is %d bytes, more than ReadFile reads into memory (%d); use Open: %w",
		size, MaxReadFileSize, syscall.EFBIG)
}
