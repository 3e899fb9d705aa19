package freespace

import (
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// corrupt reports records that contradict each other or the request (the
// kernel's ASSERTs and -EIO); it satisfies errors.Is(err, diskio.ErrCorrupt).
func corrupt(format string, args ...any) error { return diskio.Corruptf(format, args...) }

// noInfo reports a missing FREE_SPACE_INFO; it satisfies errors.Is(err, fs.ErrNotExist).
func noInfo(bg BlockGroup) error {
	return fmt.Errorf("no free space info %v: %w", InfoKey(bg), fs.ErrNotExist)
}

// opError wraps err with the operation and the block group it was on.
func opError(op string, bg BlockGroup, start ondisk.LogicalAddr, length uint64, err error) error {
	if err == nil {
		return nil
	}
	if length == 0 {
		return fmt.Errorf("free space tree: %s (block group %d+%d): %w", op, uint64(bg.Start), bg.Length, err)
	}
	return fmt.Errorf("free space tree: %s %d+%d (block group %d+%d): %w",
		op, uint64(start), length, uint64(bg.Start), bg.Length, err)
}
