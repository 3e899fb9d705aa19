package fusefs

import (
	"time"

	"golang.org/x/sys/unix"
)

// now is the time the mount stamps into inodes: the kernel's coarse
// realtime clock (CLOCK_REALTIME_COARSE), which the kernel's btrfs stamps
// with (current_time). In the writeback cache mode the kernel stamps a
// regular file's mtime and ctime itself and sends them with SETATTR; its
// stamps are never older than the coarse clock, while Go's fine clock can
// run ahead of them: a create the daemon stamped with time.Now() could look
// newer than the write the kernel stamped just after it (relatime then
// skipped the next read's atime). Both clocks agree this way, and stored
// times are the ones users saw.
func now() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts); err != nil {
		return time.Now()
	}
	return time.Unix(ts.Unix())
}
