package mountcli

import (
	"errors"
	"fmt"
	"io"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fusefs"
)

// join mounts a.Image on a.Mountpoint through the daemon of its live
// mount, when a gobtrfs mount holds it for writing (fusefs.Join: the same
// filesystem, as a second kernel mount of a btrfs device). It reports
// false when there is no such mount to join: the image is then mounted
// as usual (and waits for, or reports, whoever holds it).
func join(a *Args, log io.Writer) (bool, error) {
	h, writer := blockdev.Probe(a.Image)
	if !writer || h.MountDir == "" {
		return false, nil
	}
	err := fusefs.Join(a.Image, h.MountDir, a.Mountpoint, a.Options)
	if errors.Is(err, fusefs.ErrNotJoinable) {
		return false, nil
	}
	if err == nil {
		fmt.Fprintf(log, "gobtrfs: %s mounted on %s, served by %s\n", a.Image, a.Mountpoint, h)
	}
	return true, err
}
