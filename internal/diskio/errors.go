// Package diskio reads and verifies superblocks and tree blocks: checksums,
// the tree-checker's structural checks, DUP fallback, and a block cache.
package diskio

import (
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ErrCorrupt marks structural or checksum damage found in on-disk data.
// Test with errors.Is(err, diskio.ErrCorrupt).
var ErrCorrupt = errors.New("corrupt")

// ErrNotBtrfs marks a device on which no superblock copy carries the btrfs
// magic (a file of another kind, a wiped device, one too short to hold a
// superblock), as opposed to a btrfs superblock that is damaged.
var ErrNotBtrfs = errors.New("not a btrfs filesystem (no valid superblock)")

// BlockError names the tree, the block and what was wrong with it.
type BlockError struct {
	Op   string // "read node"
	Tree ondisk.ObjectID
	Addr ondisk.LogicalAddr
	Err  error
}

func (e *BlockError) Error() string {
	return fmt.Sprintf("%s %d (tree %s): %v", e.Op, uint64(e.Addr), ondisk.TreeName(e.Tree), e.Err)
}

func (e *BlockError) Unwrap() error { return e.Err }

// corruptf builds an error that satisfies errors.Is(err, ErrCorrupt); as
// with fmt.Errorf, a %w argument is its cause (errors.Is and As see it).
func corruptf(format string, args ...any) error {
	return &corruptErr{fmt.Errorf(format, args...)}
}

type corruptErr struct{ err error }

func (e *corruptErr) Error() string        { return e.err.Error() }
func (e *corruptErr) Is(target error) bool { return target == ErrCorrupt }
func (e *corruptErr) Unwrap() error        { return e.err }

// Corruptf is corruptf for other packages: an error that errors.Is ErrCorrupt.
func Corruptf(format string, args ...any) error { return corruptf(format, args...) }
