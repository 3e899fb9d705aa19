package gobtrfs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// ErrCorrupt is matched by errors caused by damaged on-disk data
// (errors.Is(err, gobtrfs.ErrCorrupt)).
var ErrCorrupt = diskio.ErrCorrupt

// DataError reports file data that could not be read intact: which inode,
// where in the file, which logical address and why.
type DataError struct {
	Subvol     uint64
	Ino        uint64
	FileOffset uint64
	Logical    uint64
	Err        error
}

func (e *DataError) Error() string {
	return fmt.Sprintf("inode %d (subvol %d) file offset %d: logical %d: %v",
		e.Ino, e.Subvol, e.FileOffset, e.Logical, e.Err)
}

func (e *DataError) Unwrap() error { return e.Err }

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
	errLoop     = syscall.ELOOP
	errNoData   = syscall.ENXIO
	errNotLink  = syscall.EINVAL
	errBadWhere = syscall.EINVAL
)

var ErrLocked = blockdev.ErrLocked
