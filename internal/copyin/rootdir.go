package copyin

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

// Rootdir fills the filesystem on dev (just made, empty) with the contents
// of host directory dir, compressing new data with alg, and commits once:
// mkfs --rootdir. The top directory takes dir's mode, owner, times and
// xattrs, as mkfs.btrfs does.
func Rootdir(dev blockdev.Device, dir string, alg compress.Alg) error {
	return RootdirProgress(dev, dir, alg, nil)
}

// RootdirProgress is Rootdir telling prog what it copies (nil: nothing).
func RootdirProgress(dev blockdev.Device, dir string, alg compress.Alg, prog Progress) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("rootdir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("rootdir %s: not a directory", dir)
	}
	f, err := fsops.OpenDevice(dev, fsops.Options{Compress: alg})
	if err != nil {
		return err
	}
	c := New(f)
	c.Progress = prog
	err = c.CopyContents(dir, fsops.TopLevel, "")
	if err == nil {
		var ust unix.Stat_t
		if err = unix.Lstat(dir, &ust); err == nil {
			err = c.CopyMeta(dir, fsops.TopLevel, "/", &ust)
		}
	}
	// what was copied before an error is kept, as put keeps it
	return errors.Join(err, f.Close())
}
