package mkfs

import (
	"errors"
	"fmt"
	"os"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
)

// CreateFile makes a new filesystem in a new sparse file of size bytes at
// path (which must not exist), holding the image's write lock while it
// does; on failure the file is removed.
func CreateFile(path string, size int64, cfg Config) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	f.Close()
	if err == nil {
		var dev *blockdev.File
		if dev, err = blockdev.OpenFile(path, false); err == nil {
			err = Make(dev, cfg)
			if err == nil {
				err = dev.Flush()
			}
			err = errors.Join(err, dev.Close())
		}
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}
