package inode

import (
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// corrupt marks a decode error as on-disk corruption.
func corrupt(err error) error {
	if err == nil || errors.Is(err, diskio.ErrCorrupt) {
		return err
	}
	return &corruptWrap{err}
}

type corruptWrap struct{ err error }

func (e *corruptWrap) Error() string        { return e.err.Error() }
func (e *corruptWrap) Unwrap() error        { return e.err }
func (e *corruptWrap) Is(target error) bool { return target == diskio.ErrCorrupt }
