package fsops

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
)

// missf is errf for the misses that are the normal case (the lookup of a
// name about to be created, the getxattr of an absent security.capability
// the kernel makes before writes): the message is formatted only when
// asked for. args must be values that do not change (numbers, strings,
// inode refs).
func missf(errno syscall.Errno, format string, args ...any) error {
	return &lazyError{format: format, args: args, err: errno}
}

// lazyError formats its message when Error is called; it wraps err.
type lazyError struct {
	format string
	args   []any
	err    error
}

func (e *lazyError) Error() string { return fmt.Sprintf(e.format, e.args...) + ": " + e.err.Error() }
func (e *lazyError) Unwrap() error { return e.err }

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
