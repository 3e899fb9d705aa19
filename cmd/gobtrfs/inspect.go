package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/print"
)

// dumpTreeBanner replaces btrfs-progs' "btrfs-progs v6.2" first line; the
// rest of the output follows that version's format.
const dumpTreeBanner = "gobtrfs (btrfs-progs v6.2 dump format)"

func init() {
	commands["inspect"] = cmdInspect
	usageText["inspect"] = "dump-super | dump-tree: print superblocks and trees like btrfs inspect-internal"
}

const inspectUsage = `usage: gobtrfs inspect dump-super [-f] [-a] [-F] [-s 0|1|2] [--bytenr OFF] DEVICE...
       gobtrfs inspect dump-tree [-t TREE] [-b BLOCK [--follow]] [-e|-d|-r|-R|-u]
                                 [--bfs|--dfs] [--hide-names] [--csum-headers] [--csum-items] DEVICE...`

func cmdInspect(args []string) error {
	return inspectMain(args, os.Stdout, os.Stderr)
}

func inspectMain(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(strings.TrimSpace(inspectUsage))
	}
	switch args[0] {
	case "dump-super":
		return dumpSuperMain(args[1:], stdout, stderr)
	case "dump-tree":
		return dumpTreeMain(args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown inspect command %q\n%s", args[0], inspectUsage)
}

// optParser is a small getopt_long: options may follow operands, short
// flags may be grouped, values may be attached (-tfs, --tree=fs).
type optParser struct {
	args     []string
	withArg  map[string]bool // option names (without dashes) that take a value
	operands []string
}

type opt struct{ name, value string }

func (p *optParser) parse() ([]opt, error) {
	var out []opt
	for i := 0; i < len(p.args); i++ {
		a := p.args[i]
		switch {
		case a == "--":
			p.operands = append(p.operands, p.args[i+1:]...)
			return out, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			if p.withArg[name] && !hasVal {
				if i+1 >= len(p.args) {
					return nil, fmt.Errorf("option --%s needs a value", name)
				}
				i++
				val = p.args[i]
			}
			out = append(out, opt{name, val})
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				name := a[j : j+1]
				if !p.withArg[name] {
					out = append(out, opt{name, ""})
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(p.args) {
						return nil, fmt.Errorf("option -%s needs a value", name)
					}
					i++
					val = p.args[i]
				}
				out = append(out, opt{name, val})
				break
			}
		default:
			p.operands = append(p.operands, a)
		}
	}
	return out, nil
}

// dumpSuperMain mirrors cmd_inspect_dump_super.
func dumpSuperMain(args []string, stdout, stderr io.Writer) error {
	p := &optParser{args: args, withArg: map[string]bool{"s": true, "super": true, "i": true, "bytenr": true}}
	opts, err := p.parse()
	if err != nil {
		return err
	}
	all, full, force := false, false, false
	bytenr := uint64(ondisk.SuperMirrorOffsets[0])
	for _, o := range opts {
		switch o.name {
		case "a", "all":
			all = true
		case "f", "full":
			full = true
		case "F", "force":
			force = true
		case "s", "super", "i":
			n, err := strconv.ParseUint(o.value, 0, 64)
			if err != nil {
				return fmt.Errorf("invalid superblock copy %q", o.value)
			}
			if n >= uint64(len(ondisk.SuperMirrorOffsets)) {
				if o.name == "i" {
					return fmt.Errorf("super mirror too big: %d >= %d", n, len(ondisk.SuperMirrorOffsets))
				}
				fmt.Fprintf(stderr, "WARNING: deprecated use of -s <bytenr> with %d, assuming --bytenr\n", n)
				bytenr = n
			} else {
				bytenr = uint64(ondisk.SuperMirrorOffsets[n])
			}
			all = false
		case "bytenr":
			n, err := strconv.ParseUint(o.value, 0, 64)
			if err != nil {
				return fmt.Errorf("invalid --bytenr %q", o.value)
			}
			bytenr, all = n, false
		default:
			return fmt.Errorf("unknown option %q\n%s", o.name, inspectUsage)
		}
	}
	if len(p.operands) == 0 {
		return errors.New(strings.TrimSpace(inspectUsage))
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, path := range p.operands {
		if h, busy := blockdev.Probe(path); busy {
			fmt.Fprintf(stderr, "WARNING: %s\n", blockdev.InUseWarning(path, h))
		}
		offs := []uint64{bytenr}
		if all {
			offs = nil
			for _, o := range ondisk.SuperMirrorOffsets {
				offs = append(offs, uint64(o))
			}
		}
		for _, off := range offs {
			if err := dumpOneSuper(w, path, off, full, force); err != nil {
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

// dumpTreeMain mirrors cmd_inspect_dump_tree.
func dumpTreeMain(args []string, stdout, stderr io.Writer) error {
	p := &optParser{args: args, withArg: map[string]bool{"b": true, "block": true, "t": true, "tree": true}}
	opts, err := p.parse()
	if err != nil {
		return err
	}
	var to print.TreeOptions
	for _, o := range opts {
		switch o.name {
		case "e", "extents":
			to.Extents = true
		case "d", "device":
			to.Device = true
		case "r", "roots":
			to.Roots = true
		case "R", "backups":
			to.Roots, to.Backups = true, true
		case "u", "uuid":
			to.UUID = true
		case "b", "block":
			n, err := strconv.ParseUint(o.value, 0, 64)
			if err != nil {
				return fmt.Errorf("invalid block number %q", o.value)
			}
			to.Blocks = append(to.Blocks, ondisk.LogicalAddr(n))
		case "t", "tree":
			id, err := parseTreeID(o.value)
			if err != nil {
				return err
			}
			to.Tree = id
		case "follow":
			to.Follow = true
		case "dfs":
			to.DFS = true
		case "bfs":
			to.DFS = false
		case "noscan":
		case "hide-names":
			to.HideNames = true
		case "csum-headers":
			to.CsumHeaders = true
		case "csum-items":
			to.CsumItems = true
		default:
			return fmt.Errorf("unknown option %q\n%s", o.name, inspectUsage)
		}
	}
	if len(p.operands) < 1 {
		return errors.New(strings.TrimSpace(inspectUsage))
	}
	// several operands: the devices of a multi-device filesystem, as btrfs-progs takes them
	warn := func(msg string) { fmt.Fprintf(stderr, "WARNING: %s\n", msg) }
	var devs []blockdev.Device
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for _, path := range p.operands {
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
