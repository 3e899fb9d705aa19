package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// fsImage is a filesystem opened from its image files for filesystem and
// scrub: the devices, opened read-only (a writer elsewhere is warned
// about) or for writing (exclusive: no other writer, no mount).
type fsImage struct {
	fi    *fsinfo.FSInfo
	devs  []*blockdev.File
	paths map[ondisk.DevID]string
	sizes map[ondisk.DevID]uint64
	// quietFallback drops the readers' "copy 1 bad; using copy 2" notices
	// (scrub reports every bad copy itself).
	quietFallback atomic.Bool
}

// openFSImage opens the filesystem on paths (every device of it).
func openFSImage(paths []string, write bool, stderr io.Writer) (*fsImage, error) {
	im := &fsImage{paths: map[ondisk.DevID]string{}, sizes: map[ondisk.DevID]uint64{}}
	warn := func(msg string) {
		if im.quietFallback.Load() && strings.Contains(msg, "; using copy ") {
			return
		}
		fmt.Fprintf(stderr, "WARNING: %s\n", msg)
	}
	var devs []blockdev.Device
	for _, p := range paths {
		if err := checkImagePath(p); err != nil {
			im.Close()
			return nil, err
		}
		dev, err := blockdev.OpenFile(p, !write)
		if err != nil {
			im.Close()
			return nil, err
		}
		im.devs = append(im.devs, dev)
		devs = append(devs, dev)
		if h, busy := dev.InUse(); busy {
			warn(blockdev.InUseWarning(p, h))
		}
	}
	fi, err := fsinfo.OpenDevices(devs, fsinfo.Options{ReadOnly: true, Warn: warn, DeviceNames: paths})
	if err != nil {
		im.Close()
		return nil, imageErr(strings.Join(paths, ", "), err)
	}
	im.fi = fi
	for _, m := range fi.Devices.Members() {
		for i, d := range im.devs {
			if blockdev.Device(d) == m.Dev {
				im.paths[m.DevID] = paths[i]
				im.sizes[m.DevID] = uint64(max(d.Size(), 0))
			}
		}
	}
	return im, nil
}

// Close closes the devices.
func (im *fsImage) Close() {
	for _, d := range im.devs {
		d.Close()
	}
	im.devs = nil
}
