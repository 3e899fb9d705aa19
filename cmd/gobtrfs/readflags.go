package main

// Flags shared by the read-side subcommands (ls, cat, restore, subvolume
// list/show): addFlags puts them on a cobra command's pflag set.

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gobtrfs/gobtrfs"
)

// rdImageFlags are the image options of ls, cat and restore.
type rdImageFlags struct {
	noVerify bool
	super    int
	subvol   string
	quietUse bool
	noReplay bool
	devices  deviceList
}

// deviceList collects -d/--device IMG: the other devices of a multi-device
// filesystem (btrfs-progs finds them by scanning; here they are named).
type deviceList []string

func (d *deviceList) String() string { return strings.Join(*d, ",") }
func (d *deviceList) Set(s string) error {
	*d = append(*d, s)
	return nil
}
func (d *deviceList) Type() string { return "IMG" }

// paths is img followed by the -d devices.
func (d deviceList) paths(img string) []string { return append([]string{img}, d...) }

// superFlag is a superblock mirror number, -1 when not given.
type superFlag struct{ p *int }

func (f superFlag) String() string {
	if *f.p < 0 {
		return ""
	}
	return strconv.Itoa(*f.p)
}
func (f superFlag) Type() string { return "N" }
func (f superFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 2 {
		return fmt.Errorf("superblock mirrors are 0 (primary), 1 and 2, not %q", s)
	}
	*f.p = n
	return nil
}

// addFlags puts the image options on fs; shortSuper is the letter of the
// superblock mirror option ("s" in ls and cat, "u" in btrfs restore).
func (o *rdImageFlags) addFlags(fs *pflag.FlagSet, shortSuper string) {
	o.super = -1
	fs.BoolVar(&o.noVerify, "no-verify", false, "do not verify data checksums")
	fs.VarP(superFlag{&o.super}, "super", shortSuper, "use superblock mirror `N` (0 = primary, 1, 2)")
	fs.BoolVar(&o.quietUse, "no-warn-in-use", false, "do not warn when another process has the image open for writing")
	fs.BoolVar(&o.noReplay, "nologreplay", false, "show the committed state of an image with a pending log tree (fsync'd changes since the last commit are not shown)")
	fs.StringVar(&o.subvol, "subvol", "", "open subvolume `ID|PATH` as the root (default: the default subvolume)")
	fs.VarP(&o.devices, "device", "d", "another device `IMG` of a multi-device filesystem (repeat for each; order does not matter)")
}

// open opens img; topLevel picks subvolume 5 when --subvol is not given.
func (o *rdImageFlags) open(img string, topLevel bool, stderr io.Writer) (*gobtrfs.FS, error) {
	opts := &gobtrfs.Options{NoVerifyDataCsum: o.noVerify, NoInUseWarning: o.quietUse, NoLogReplay: o.noReplay,
		Warn: func(msg string) { fmt.Fprintf(stderr, "gobtrfs: warning: %s\n", msg) }}
	if o.super >= 0 {
		opts.SuperMirror, opts.ForceSuperMirror = o.super, true
	}
	switch {
	case o.subvol != "":
		if id, err := strconv.ParseUint(o.subvol, 10, 64); err == nil {
			opts.SubvolID = id
		} else {
			opts.Subvol = o.subvol
		}
	case topLevel:
		opts.SubvolID = 5
	}
	for _, p := range o.devices.paths(img) {
		if err := checkImagePath(p); err != nil {
			return nil, err
		}
	}
	fsys, err := gobtrfs.OpenDevices(o.devices.paths(img), opts)
	return fsys, imageErr(img, err)
}

// rdFSPath turns a user path ("/a/b", "a/b/", "/") into an io/fs name.
func rdFSPath(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	if p == "" || p == "/" {
		return "."
	}
	return p
}
