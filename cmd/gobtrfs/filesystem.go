package main

// gobtrfs filesystem df|usage|show|label: btrfs filesystem's reports on an
// image, with the numbers a kernel mount of it reports (internal/spaceinfo).

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/spaceinfo"
)

func init() { addCommand(newFilesystemCmd) }

func newFilesystemCmd() *cobra.Command {
	g := newGroupCmd("filesystem", "space usage, devices and label of an image (btrfs filesystem)",
		newFsDfCmd(), newFsUsageCmd(), newFsShowCmd(), newFsLabelCmd())
	g.Long = `Reports on the filesystem in an image, laid out as btrfs filesystem prints
them for a mount of it: df, usage, show, and label (read or set).`
	return g
}

// unitFlags are btrfs-progs' unit options (HELPINFO_UNITS_SHORT_LONG).
type unitFlags struct {
	raw, human, si, iec, k, m, g, t bool
}

func (f *unitFlags) add(fl *pflag.FlagSet) {
	fl.BoolVarP(&f.raw, "raw", "b", false, "show raw numbers in bytes")
	fl.BoolVarP(&f.human, "human-readable", "h", false, "show human friendly numbers, base 1024 (default)")
	fl.BoolVarP(&f.si, "si", "H", false, "use 1000 as a base (kB, MB, GB, TB)")
	fl.BoolVar(&f.iec, "iec", false, "use 1024 as a base (KiB, MiB, GiB, TiB)")
	fl.BoolVarP(&f.k, "kbytes", "k", false, "show sizes in KiB, or kB with --si")
	fl.BoolVarP(&f.m, "mbytes", "m", false, "show sizes in MiB, or MB with --si")
	fl.BoolVarP(&f.g, "gbytes", "g", false, "show sizes in GiB, or GB with --si")
	fl.BoolVarP(&f.t, "tbytes", "t", false, "show sizes in TiB, or TB with --si")
}

func (f *unitFlags) units() sizeUnits {
	u := sizeUnits{raw: f.raw, base: 1024}
	if f.si {
		u.base = 1000
	}
	for i, on := range []bool{f.k, f.m, f.g, f.t} {
		if on {
			u.fixed = i + 1
		}
	}
	return u
}

// fsCmd is a filesystem subcommand reading IMAGE (and -d devices).
func fsCmd(use, short, long string, run func(im *fsImage, in *spaceinfo.Info, u sizeUnits, w io.Writer) error) *cobra.Command {
	var uf unitFlags
	var devs deviceList
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  operands(1, -1, "need IMAGE (every device of a multi-device filesystem)"),
		RunE: func(c *cobra.Command, args []string) error {
			im, err := openFSImage(append(args, devs...), false, c.ErrOrStderr())
			if err != nil {
				return err
			}
			defer im.Close()
			in, err := spaceinfo.Load(im.fi, im.paths, im.sizes)
			if err != nil {
				return err
			}
			return run(im, in, uf.units(), c.OutOrStdout())
		},
	}
	// -h is --human-readable here, as in btrfs-progs; --help stays
	c.Flags().BoolP("help", "", false, "help for "+c.Name())
	uf.add(c.Flags())
	c.Flags().VarP(&devs, "device", "d", "another device `IMG` of a multi-device filesystem (repeat for each)")
	return c
}

func newFsDfCmd() *cobra.Command {
	return fsCmd("df [options] IMAGE", "space per block group type and profile (btrfs filesystem df)",
		`Total and used space of each block group type and profile, and the global
reserve, as btrfs filesystem df prints them for a mount of IMAGE.`,
		func(_ *fsImage, in *spaceinfo.Info, u sizeUnits, w io.Writer) error {
			printDF(w, in, u)
			return nil
		})
}

func newFsUsageCmd() *cobra.Command {
	var tabular bool
	c := fsCmd("usage [options] IMAGE", "space overall and per device (btrfs filesystem usage)",
		`Device size, allocation, use, free space estimates (and what statfs, df,
would say on a mount), ratios and the global reserve, then each block group
type with what it takes on each device, as btrfs filesystem usage prints
them for a mount of IMAGE.`,
		func(_ *fsImage, in *spaceinfo.Info, u sizeUnits, w io.Writer) error {
			printUsage(w, in, u, tabular)
			return nil
		})
	c.Flags().BoolVarP(&tabular, "tabular", "T", false, "show the per-device part as a table")
	return c
}

func newFsShowCmd() *cobra.Command {
	return fsCmd("show [options] IMAGE", "label, uuid and devices (btrfs filesystem show)",
		`Label, UUID, bytes used and each device's size and allocation, as btrfs
filesystem show prints them for the unmounted IMAGE.`,
		func(im *fsImage, in *spaceinfo.Info, u sizeUnits, w io.Writer) error {
			printShow(w, im.fi.Super, in, u)
			return nil
		})
}

func newFsLabelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "label IMAGE [NEWLABEL]",
		Short: "show or set the label (btrfs filesystem label)",
		Long: `Print the label of IMAGE, or set it to NEWLABEL (at most 255 bytes; "" clears
it). Setting it commits a transaction that writes every superblock copy,
as btrfs filesystem label does on an unmounted device; IMAGE must not be
in use.`,
		Args: operands(1, 2, "need IMAGE and at most one NEWLABEL"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 2 {
				return setLabel(args[0], args[1])
			}
			im, err := openFSImage(args[:1], false, c.ErrOrStderr())
			if err != nil {
				return err
			}
			defer im.Close()
			fmt.Fprintln(c.OutOrStdout(), quoteName(im.fi.Super.LabelString()))
			return nil
		},
	}
}

// setLabel writes label into the superblock of image with a commit
// (fsops.SetLabel, the library's).
func setLabel(image, label string) error {
	if len(label) >= ondisk.LabelSize {
		return usageErrorf("label %q is too long (%d bytes; at most %d)", label, len(label), ondisk.LabelSize-1)
	}
	if err := checkImagePath(image); err != nil {
		return err
	}
	m, err := openImgFS(image, fsops.Options{})
	if err != nil {
		return imageErr(image, err)
	}
	if err := m.fs.SetLabel(label); err != nil {
		return m.finish(fmt.Errorf("%s: set label: %w", image, err))
	}
	return m.finish(nil)
}
