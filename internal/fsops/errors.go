package fsops

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
)

// errf wraps errno with the operation and the object it concerns.
func errf(errno syscall.Errno, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errno)...)
}

// corruptf reports on-disk state that contradicts itself; it satisfies
// errors.Is(err, diskio.ErrCorrupt).
func corruptf(format string, args ...any) error {
	return diskio.Corruptf(format, args...)
}

// isNotExist reports a missing item or tree.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsinfo.ErrNoTree)
}
