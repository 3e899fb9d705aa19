package fileread

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// DataError reports file data that could not be read intact: which inode,
// where in the file, which logical address and why. The root package
// exports it as gobtrfs.DataError.
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

func (in Inode) errAt(fileOff, logical uint64, err error) *DataError {
	return &DataError{Subvol: uint64(in.Root), Ino: uint64(in.Ino), FileOffset: fileOff, Logical: logical, Err: err}
}

func corruptf(format string, args ...any) error { return diskio.Corruptf(format, args...) }
