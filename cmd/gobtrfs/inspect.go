package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/print"
)

// dumpTreeBanner replaces btrfs-progs' "btrfs-progs v6.2" first line; the
// rest of the output follows that version's format.
const dumpTreeBanner = "gobtrfs (btrfs-progs v6.2 dump format)"

func init() { addCommand(newInspectCmd) }

func newInspectCmd() *cobra.Command {
	g := newGroupCmd("inspect", "print superblocks and trees like btrfs inspect-internal",
		newDumpSuperCmd(), newDumpTreeCmd())
	g.Aliases = []string{"inspect-internal"}
	return g
}

func inspectMain(args []string, stdout, stderr io.Writer) error {
	return runCommand(newInspectCmd(), args, stdout, stderr)
}

// dumpSuperFlags are the options of dump-super; -s, --bytenr and -a are
// applied in the order given, the last one winning, as in btrfs-progs.
type dumpSuperFlags struct {
	all, full, force bool
	bytenr           uint64
}

// newDumpSuperCmd mirrors cmd_inspect_dump_super.
func newDumpSuperCmd() *cobra.Command {
	f := &dumpSuperFlags{bytenr: uint64(ondisk.SuperMirrorOffsets[0])}
	c := &cobra.Command{
		Use:   "dump-super [options] DEVICE...",
		Short: "print superblocks as btrfs inspect-internal dump-super",
		Args:  operands(1, -1, "need at least one DEVICE"),
		RunE: func(c *cobra.Command, args []string) error {
			return dumpSuperRun(f, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.BoolFuncP("all", "a", "print all superblock copies", func(string) error { f.all = true; return nil })
	fl.BoolVarP(&f.full, "full", "f", false, "print full superblock information, including the backup roots")
	fl.BoolVarP(&f.force, "force", "F", false, "print a superblock even with a bad magic")
	mirror := func(deprecatedBytenr bool) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return fmt.Errorf("invalid superblock copy %q", v)
			}
			if n >= uint64(len(ondisk.SuperMirrorOffsets)) {
				if !deprecatedBytenr {
					return fmt.Errorf("super mirror too big: %d >= %d", n, len(ondisk.SuperMirrorOffsets))
				}
				fmt.Fprintf(c.ErrOrStderr(), "WARNING: deprecated use of -s <bytenr> with %d, assuming --bytenr\n", n)
				f.bytenr = n
			} else {
				f.bytenr = uint64(ondisk.SuperMirrorOffsets[n])
			}
			f.all = false
			return nil
		}
	}
	fl.FuncP("super", "s", "print superblock copy `N` (0, 1 or 2)", mirror(true))
	fl.FuncP("i", "i", "same as -s, without the deprecated byte offset", mirror(false))
	fl.Lookup("i").Hidden = true
	fl.Func("bytenr", "print the superblock at byte `OFFSET`", func(v string) error {
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			return fmt.Errorf("invalid --bytenr %q", v)
		}
		f.bytenr, f.all = n, false
		return nil
	})
	return c
}

// dumpSuperRun prints the superblocks of every device.
func dumpSuperRun(f *dumpSuperFlags, devices []string, stdout, stderr io.Writer) error {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, path := range devices {
		if err := checkImagePath(path); err != nil {
			return err
		}
		if h, busy := blockdev.Probe(path); busy {
			fmt.Fprintf(stderr, "WARNING: %s\n", blockdev.InUseWarning(path, h))
		}
		offs := []uint64{f.bytenr}
		if f.all {
			offs = nil
			for _, o := range ondisk.SuperMirrorOffsets {
				offs = append(offs, uint64(o))
			}
		}
		for _, off := range offs {
			if err := dumpOneSuper(w, path, off, f.full, f.force); err != nil {
				return err
			}
			w.WriteString("\n")
		}
	}
	return w.Flush()
}

func dumpOneSuper(w *bufio.Writer, path string, off uint64, full, force bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, ondisk.SuperInfoSize)
	n, err := f.ReadAt(buf, int64(off))
	if n == 0 && errors.Is(err, io.EOF) {
		return nil // the device is too small to hold this copy, as btrfs-progs treats it
	}
	if n != len(buf) {
		return fmt.Errorf("failed to read the superblock on %s at %d: %w", path, off, err)
	}
	sb, err := ondisk.DecodeSuperblock(buf)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "superblock: bytenr=%d, device=%s\n", off, path)
	w.WriteString("---------------------------------------------------------\n")
	if sb.Magic != ondisk.SuperMagic && !force {
		return fmt.Errorf("bad magic on superblock on %s at %d (use --force to dump it anyway)", path, off)
	}
	return print.DumpSuper(w, sb, full)
}

// newDumpTreeCmd mirrors cmd_inspect_dump_tree.
func newDumpTreeCmd() *cobra.Command {
	var to print.TreeOptions
	c := &cobra.Command{
		Use:   "dump-tree [options] DEVICE...",
		Short: "print trees as btrfs inspect-internal dump-tree",
		Long: `Print the trees of the filesystem on DEVICE (several: the devices of a
multi-device filesystem) in btrfs-progs v6.2's format.`,
		Args: operands(1, -1, "need at least one DEVICE"),
		RunE: func(c *cobra.Command, args []string) error {
			return dumpTreeRun(to, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.BoolVarP(&to.Extents, "extents", "e", false, "print only the extent and device trees")
	fl.BoolVarP(&to.Device, "device", "d", false, "print only the device-related trees")
	fl.BoolVarP(&to.Roots, "roots", "r", false, "print only short root node information")
	fl.BoolFuncP("backups", "R", "as -r, plus the backup roots", func(string) error { to.Roots, to.Backups = true, true; return nil })
	fl.BoolVarP(&to.UUID, "uuid", "u", false, "print only the uuid tree")
	fl.FuncP("block", "b", "print the tree block at `BYTENR` (repeat for several)", func(v string) error {
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			return fmt.Errorf("invalid block number %q", v)
		}
		to.Blocks = append(to.Blocks, ondisk.LogicalAddr(n))
		return nil
	})
	fl.BoolVar(&to.Follow, "follow", false, "with -b, print the children of the block too")
	fl.FuncP("tree", "t", "print only the tree `ID` (a number or a name: fs, root, extent, csum, ...)", func(v string) error {
		id, err := parseTreeID(v)
		to.Tree = id
		return err
	})
	fl.BoolFunc("dfs", "depth-first traversal", func(string) error { to.DFS = true; return nil })
	fl.BoolFunc("bfs", "breadth-first traversal (the default)", func(string) error { to.DFS = false; return nil })
	fl.Bool("noscan", false, "accepted for btrfs-progs compatibility (devices are never scanned)")
	fl.BoolVar(&to.HideNames, "hide-names", false, "do not print file names")
	fl.BoolVar(&to.CsumHeaders, "csum-headers", false, "print the checksums of tree block headers")
	fl.BoolVar(&to.CsumItems, "csum-items", false, "print the checksums of csum items")
	c.RegisterFlagCompletionFunc("tree", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, t := range treeNames {
			names = append(names, strings.ToLower(t.name))
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return c
}

// dumpTreeRun prints the trees to asks for.
func dumpTreeRun(to print.TreeOptions, operands []string, stdout, stderr io.Writer) error {
	p := struct{ operands []string }{operands}
	// several operands: the devices of a multi-device filesystem, as btrfs-progs takes them
	warn := func(msg string) { fmt.Fprintf(stderr, "WARNING: %s\n", msg) }
	var devs []blockdev.Device
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for _, path := range p.operands {
		if err := checkImagePath(path); err != nil {
			return err
		}
		dev, err := blockdev.OpenFile(path, true)
		if err != nil {
			return err
		}
		devs = append(devs, dev)
		if h, busy := dev.InUse(); busy {
			warn(blockdev.InUseWarning(path, h))
		}
	}
	fs, err := fsinfo.OpenDevices(devs, fsinfo.Options{ReadOnly: true, Warn: warn, DeviceNames: p.operands})
	if err != nil {
		if err := imageErr(p.operands[0], err); errors.Is(err, diskio.ErrNotBtrfs) {
			return err
		}
		return fmt.Errorf("unable to open %s: %w", strings.Join(p.operands, ", "), err)
	}
	fmt.Fprintln(stdout, dumpTreeBanner)
	to.Warn = warn
	return print.DumpTree(stdout, fs, to)
}

var treeNames = []struct {
	name string
	id   ondisk.ObjectID
}{
	{"ROOT", ondisk.RootTreeObjectID}, {"EXTENT", ondisk.ExtentTreeObjectID},
	{"CHUNK", ondisk.ChunkTreeObjectID}, {"DEVICE", ondisk.DevTreeObjectID},
	{"DEV", ondisk.DevTreeObjectID}, {"FS", ondisk.FSTreeObjectID},
	{"CSUM", ondisk.CsumTreeObjectID}, {"CHECKSUM", ondisk.CsumTreeObjectID},
	{"QUOTA", ondisk.QuotaTreeObjectID}, {"UUID", ondisk.UUIDTreeObjectID},
	{"FREE_SPACE", ondisk.FreeSpaceTreeObjectID}, {"TREE_LOG_FIXUP", ondisk.TreeLogFixupObjectID},
	{"TREE_LOG", ondisk.TreeLogObjectID}, {"TREE_RELOC", ondisk.TreeRelocObjectID},
	{"DATA_RELOC", ondisk.DataRelocTreeObjectID}, {"BLOCK_GROUP_TREE", ondisk.BlockGroupTreeObjectID},
	// ours, not btrfs-progs': -t log for the log root tree
	{"LOG", ondisk.TreeLogObjectID},
}

// parseTreeID accepts a number or a name in any of btrfs-progs' forms
// (fs, FS_TREE, BTRFS_FS_TREE_OBJECTID, ...). mirrors treeid_from_string
func parseTreeID(s string) (ondisk.ObjectID, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil && n != 0 {
		return ondisk.ObjectID(n), nil
	}
	rest := s
	if len(rest) >= 6 && strings.EqualFold(rest[:6], "BTRFS_") {
		rest = rest[6:]
	}
	for _, t := range treeNames {
		if len(rest) >= len(t.name) && strings.EqualFold(rest[:len(t.name)], t.name) {
			rest = rest[len(t.name):]
			for _, suf := range []string{"_TREE", "_OBJECTID"} {
				if len(rest) >= len(suf) && strings.EqualFold(rest[:len(suf)], suf) {
					rest = rest[len(suf):]
				}
			}
			if rest != "" {
				return 0, fmt.Errorf("unexpected tree id suffix of '%s': %s", s, rest)
			}
			return t.id, nil
		}
	}
	return 0, fmt.Errorf("unrecognized tree id: %s", s)
}
