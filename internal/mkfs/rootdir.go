package mkfs

import (
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
)

// ErrRootdirNotImplemented is returned for Config.Rootdir while nothing has
// set PopulateRootdir.
var ErrRootdirNotImplemented = errors.New("--rootdir is not implemented yet: copying files in needs the transaction engine (internal/txn)")

// PopulateRootdir copies cfg.Rootdir (with cfg.Compress) into the empty
// filesystem Make has just written to dev. It stays nil until the
// transaction engine's inode layer exists; whoever wires it sets it from an
// init function. Make checks it before writing anything, so a Rootdir
// request with no populator leaves the device untouched.
var PopulateRootdir func(dev blockdev.Device, cfg Config) error
