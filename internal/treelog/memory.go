package treelog

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// ReplayInMemory replays the log tree of the image on dev without writing
// to dev: the replay commits into a copy-on-write memory overlay, which is
// returned; reading the overlay shows the replayed filesystem. o are the
// options the image was opened with (ReadOnly is ignored). Closing the
// overlay closes dev.
func ReplayInMemory(dev blockdev.Device, o fsinfo.Options) (*blockdev.Overlay, error) {
	ov := blockdev.NewOverlay(dev)
	o.ReadOnly = false
	fi, err := fsinfo.Open(ov, o)
	if err != nil {
		return nil, err
	}
	f, err := txn.OpenWith(fi, txn.OpenOptions{ReplayLog: Replay})
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("replay log tree in memory: %w", err)
	}
	return ov, nil
}
