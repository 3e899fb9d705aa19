package fusefs

import (
	"errors"
	"io"
	"io/fs"
	"log"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// errnoOf turns an error from the layers below into the errno the caller
// sees. Corruption becomes EIO with a log line naming the operation and the
// block (the lower layers put the address in the message); the mount stays up.
func (m *fsys) errnoOf(op string, id ondisk.InodeRef, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, diskio.ErrCorrupt):
		m.logf("%s %v: corrupt metadata or data, failing with EIO: %v", op, id, err)
		return syscall.EIO
	case errors.As(err, &errno):
		if errno == syscall.EIO {
			m.logf("%s %v: %v", op, id, err)
		}
		return errno
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EPERM
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		m.logf("%s %v: short read: %v", op, id, err)
		return syscall.EIO
	}
	m.logf("%s %v: %v", op, id, err)
	return syscall.EIO
}

func (m *fsys) logf(format string, args ...any) {
	if m.log != nil {
		m.log.Printf(format, args...)
	} else {
		log.Printf("gobtrfs: "+format, args...)
	}
}
