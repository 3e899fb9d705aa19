package fusefs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked is returned when another process has the image mounted.
var ErrLocked = errors.New("image is already mounted (locked by another gobtrfs process)")

// lockImage takes a lock on image for the life of the mount: exclusive for
// a read-write mount, shared for a read-only one, so a second read-write
// mount (or any mount while one writes) is refused.
func lockImage(image string, readOnly bool) (*os.File, error) {
	f, err := os.Open(image)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if readOnly {
		how = syscall.LOCK_SH
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", image, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", image, err)
	}
	return f, nil
}
