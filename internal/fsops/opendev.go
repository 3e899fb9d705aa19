package fsops

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// OpenDevice opens the filesystem on dev for changes; Close commits but
// leaves dev open (the caller owns it).
func OpenDevice(dev blockdev.Device, opts Options) (*FS, error) {
	fi, err := fsinfo.Open(dev, fsinfo.Options{})
	if err != nil {
		return nil, err
	}
	t, err := txn.OpenWith(fi, txn.OpenOptions{ReplayLog: treelog.Replay}) // a pending log tree is replayed and committed first
	if err != nil {
		return nil, fmt.Errorf("open for writing: %w", err)
	}
	return New(fi, t, opts), nil
}
