package fsread

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
)

// replayLog shows an image with a pending log tree (fsync'd changes the
// last transaction did not commit) as Linux mounts it: the log is replayed
// into a memory overlay over dev and read from there. With
// o.NoLogReplay, or when the replay fails, the committed state is read
// and Warn says what is not shown.
func replayLog(info *fsinfo.FSInfo, devs []blockdev.Device, o Options) (*fsinfo.FSInfo, []blockdev.Device) {
	gen := info.Super.Generation
	if o.NoLogReplay {
		warnf(o, "nologreplay: the image has a log tree (fsync'd changes after generation %d) that is not replayed: those changes are not shown", gen)
		return info, devs
	}
	if len(devs) != 1 || info.Super.NumDevices != 1 {
		warnf(o, "the filesystem has a log tree (fsync'd changes after generation %d), which is not replayed on a multi-device filesystem: those changes are not shown", gen)
		return info, devs
	}
	dev := devs[0]
	fo := fsinfo.Options{SuperMirror: o.SuperMirror, CacheBytes: o.TreeCacheBytes, Warn: o.Warn}
	ov, err := treelog.ReplayInMemory(dev, fo)
	if err == nil {
		fo.ReadOnly = true
		var ri *fsinfo.FSInfo
		if ri, err = fsinfo.Open(ov, fo); err == nil {
			return ri, []blockdev.Device{ov}
		}
	}
	warnf(o, "cannot replay the log tree (fsync'd changes after generation %d): %v; showing the committed state without them", gen, err)
	return info, devs
}

func warnf(o Options, format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, args...))
	}
}
