package gobtrfs

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// DefaultImageSize is the size of the file Mkfs creates when
// MkfsOptions.Size is 0 and the file does not exist (as `gobtrfs mkfs`).
const DefaultImageSize = 1 << 30

// MkfsOptions say how Mkfs makes a filesystem: the options of mkfs.btrfs
// (and `gobtrfs mkfs`). The zero value of every field is mkfs.btrfs's
// default.
type MkfsOptions struct {
	// Size is the filesystem size in bytes (mkfs.btrfs -b). 0 means the
	// whole file or device, or DefaultImageSize for a new or empty file.
	// A regular file shorter than Size is grown (sparse).
	Size int64
	// NodeSize is the tree block size (mkfs.btrfs -n): a power of two from
	// SectorSize to 64 KiB; 0 means 16 KiB.
	NodeSize uint32
	// SectorSize is the data block size (mkfs.btrfs -s / --sectorsize);
	// 0 means 4 KiB.
	SectorSize uint32
	// Csum is the checksum algorithm (mkfs.btrfs --csum): "crc32c" (the
	// default), "xxhash", "sha256" or "blake2".
	Csum string
	// MetadataProfile is "dup" (the default) or "single" (mkfs.btrfs -m).
	MetadataProfile string
	// DataProfile is "single", the default (mkfs.btrfs -d).
	DataProfile string
	// Features is a comma-separated list of features to turn on, "^name"
	// turning one off, as mkfs.btrfs -O takes it; MkfsFeatures lists them.
	Features string
	// Label is the filesystem label (mkfs.btrfs -L).
	Label string
	// UUID is the filesystem UUID (mkfs.btrfs -U), with or without dashes;
	// "" means a random one.
	UUID string
	// Time stamps the root directories and the first trees; zero means now.
	// With a fixed UUID it makes an image reproducible.
	Time time.Time
	// Rootdir, when set, is a host directory copied into the new
	// filesystem (mkfs.btrfs --rootdir): modes, owners, times, xattrs,
	// hard links, symlinks, device nodes and holes.
	Rootdir string
	// Compress compresses the files copied from Rootdir with "zstd",
	// "zlib" or "lzo", optionally with ":LEVEL" (mkfs.btrfs --compress).
	Compress string
	// Force overwrites a file or device that already holds a filesystem
	// (mkfs.btrfs -f); without it Mkfs refuses one.
	Force bool
	// Warn receives what mkfs.btrfs warns about, such as a sector size
	// other than 4 KiB and the page size, which Linux refuses to mount;
	// nil discards it.
	Warn func(string)
}

// MkfsFeatures returns the features MkfsOptions.Features accepts, one a
// line with what each does, as `mkfs.btrfs -O list-all` prints them.
func MkfsFeatures() string { return mkfs.FeatureList() }

// config turns the options into the mkfs engine's configuration.
func (o *MkfsOptions) config() (mkfs.Config, error) {
	c := mkfs.Config{NodeSize: o.NodeSize, SectorSize: o.SectorSize, MetadataProfile: o.MetadataProfile,
		DataProfile: o.DataProfile, Label: o.Label, Time: o.Time, Rootdir: o.Rootdir, Compress: o.Compress}
	if o.Size < 0 {
		return c, fmt.Errorf("size %d is negative", o.Size)
	}
	if o.Csum != "" {
		t, err := csum.Parse(strings.ToLower(o.Csum))
		if err != nil {
			return c, err
		}
		c.Csum = t
	}
	if o.Features != "" {
		f, err := mkfs.ParseFeatures(o.Features, c.Features)
		if err != nil {
			return c, err
		}
		c.Features = f
	}
	if o.UUID != "" {
		u, err := parseUUID(o.UUID)
		if err != nil {
			return c, err
		}
		c.FSID = u
	}
	return c, nil
}

func parseUUID(s string) (ondisk.UUID, error) {
	var u ondisk.UUID
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != len(u) {
		return u, fmt.Errorf("invalid UUID %q (want 32 hex digits, dashes allowed)", s)
	}
	copy(u[:], b)
	return u, nil
}

// Mkfs makes a new btrfs filesystem at path, as mkfs.btrfs does, laid out
// as mkfs.btrfs 6.2 lays it out: a new file is created sparse; an existing
// regular file or block device is overwritten, unless it already holds a
// filesystem and o.Force is not set. With o.Rootdir the new filesystem is
// filled from that directory. The image's write lock is held throughout
// (errors.Is(err, ErrLocked) when another writer has it). A file Mkfs
// created is removed again when it fails.
func Mkfs(path string, o MkfsOptions) error {
	cfg, err := o.config()
	if err != nil {
		return fmt.Errorf("mkfs %s: %w", path, err)
	}
	if ss := o.SectorSize; o.Warn != nil && ss != 0 && ss != 4096 && ss != uint32(os.Getpagesize()) {
		o.Warn(fmt.Sprintf("the filesystem may not be mountable, sectorsize %d doesn't match page size %d",
			ss, os.Getpagesize()))
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		size := o.Size
		if size == 0 {
			size = DefaultImageSize
		}
		return mkfs.CreateFile(path, size, cfg)
	case err != nil:
		return fmt.Errorf("mkfs: %w", err)
	case st.IsDir():
		return fmt.Errorf("mkfs %s: is a directory", path)
	}
	return mkfsExisting(path, st, o, cfg)
}

// mkfsExisting makes the filesystem on an existing file or device.
func mkfsExisting(path string, st os.FileInfo, o MkfsOptions, cfg mkfs.Config) error {
	want := o.Size
	if want == 0 && st.Mode().IsRegular() && st.Size() == 0 {
		want = DefaultImageSize
	}
	dev, err := blockdev.OpenFile(path, false)
	if err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	fail := func(err error) error {
		dev.Close()
		return fmt.Errorf("mkfs %s: %w", path, err)
	}
	if !o.Force {
		if t := mkfs.ExistingFilesystem(dev, dev.Size()); t != "" {
			return fail(fmt.Errorf("holds a filesystem (%s); set Force to overwrite it", t))
		}
	}
	if st.Mode().IsRegular() && want > dev.Size() {
		if err := os.Truncate(path, want); err != nil {
			return fail(err)
		}
		dev.Close()
		if dev, err = blockdev.OpenFile(path, false); err != nil {
			return fmt.Errorf("mkfs: %w", err)
		}
	}
	cfg.Size = uint64(want)
	err = mkfs.Make(dev, cfg)
	if err == nil {
		err = dev.Flush()
	}
	if err = errors.Join(err, dev.Close()); err != nil {
		return fmt.Errorf("mkfs %s: %w", path, err)
	}
	return nil
}

// CreateImage makes a new, empty filesystem in a new sparse file of size
// bytes with mkfs.btrfs's defaults; the file must not exist. It is Mkfs
// with MkfsOptions{Size: size} for a new file.
func CreateImage(path string, size int64) error {
	if size <= 0 {
		return fmt.Errorf("create %s: size %d is not positive", path, size)
	}
	return mkfs.CreateFile(path, size, mkfs.Config{})
}
