package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
)

// mkfs --rootdir: the empty filesystem mkfs built is filled through the
// writer with the same copier `gobtrfs put` uses, then committed once.
func init() { mkfs.PopulateRootdir = populateRootdir }

func populateRootdir(dev blockdev.Device, cfg mkfs.Config) error {
	var alg compress.Alg
	if cfg.Compress != "" {
		a, err := compress.ParseAlg(cfg.Compress)
		if err != nil {
			return err
		}
		alg = a
	}
	st, err := os.Stat(cfg.Rootdir)
	if err != nil {
		return fmt.Errorf("rootdir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("rootdir %s: not a directory", cfg.Rootdir)
	}
	f, err := fsops.OpenDevice(dev, fsops.Options{Compress: alg})
	if err != nil {
		return err
	}
	m := &imgFS{fs: f, image: "rootdir"}
	c := &copier{m: m, links: map[[2]uint64]fsops.ID{}}
	err = c.copyContents(cfg.Rootdir, fsops.TopLevel, "")
	if err == nil {
		// the top directory takes the source directory's mode, owner and times, as mkfs.btrfs does
		var ust unix.Stat_t
		if err = unix.Lstat(cfg.Rootdir, &ust); err == nil {
			err = c.copyMeta(cfg.Rootdir, fsops.TopLevel, "/", &ust)
		}
	}
	return m.finish(err)
}
