package fusefs

import (
	"os"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
)

// ErrLocked is the error (errors.Is) of a mount of an image that another
// writer, or a read-only mount, holds.
var ErrLocked = blockdev.ErrLocked

// lockImage keeps other writers out for the life of the mount. A
// read-write mount's lock is the exclusive one its device open takes, so
// here it only waits (up to o.LockWait, saying so) for a holder that is on
// its way out, such as the daemon of a mount just unmounted. A read-only
// mount holds a shared lock: more read-only mounts, no writer.
func lockImage(image string, o *Options, logf func(string, ...any)) (*os.File, error) {
	if o.LockWait > 0 {
		err := blockdev.WaitUnlocked(image, o.LockWait, func(h blockdev.Holder) {
			logf("%s is in use by %s; waiting up to %v for it to finish", image, h, o.LockWait)
		})
		if err != nil {
			return nil, err
		}
	}
	if o.ReadOnly {
		return blockdev.LockShared(image)
	}
	return nil, nil
}
