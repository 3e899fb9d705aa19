package fsops

import (
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// OpenImage opens the filesystem in an image file (or block device) for
// changes. Close commits and closes it.
func OpenImage(path string, opts Options) (*FS, error) {
	dev, err := blockdev.OpenFile(path, false)
	if err != nil {
		return nil, err
	}
	fi, err := fsinfo.Open(dev, fsinfo.Options{})
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err := txn.OpenWith(fi, txn.OpenOptions{ReplayLog: treelog.Replay}) // a pending log tree is replayed and committed first
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := New(fi, t, opts)
	f.dev = dev
	return f, nil
}

// Close commits what is pending and closes the filesystem (and the device,
// when OpenImage opened it).
func (f *FS) Close() error {
	err := f.Commit()
	f.mu.Lock()
	defer f.mu.Unlock()
	err = errors.Join(err, f.tx.Close())
	if f.dev != nil {
		err = errors.Join(err, f.dev.Close())
		f.dev = nil
	}
	return err
}
