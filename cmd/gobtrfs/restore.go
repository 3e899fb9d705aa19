package main

// gobtrfs restore: copy a filesystem out of an image, with btrfs restore's
// options (cmds/restore.c) where they make sense.
//
// Defaults differ from btrfs restore where our restore always did more:
// owner, mode and times (-m), symlinks (-S), xattrs (-x) and snapshots (-s)
// are restored unless --no-metadata, --no-symlinks, --no-xattrs or
// --no-snapshots turn them off (-m, -S, -x and -s are accepted and change
// nothing); restore always continues after an error and reports them all
// at the end with a non-zero exit status (-i is accepted and changes
// nothing). The image is untrusted: existing files are kept unless -o,
// device nodes are made only with --devices, setuid/setgid bits and file
// capabilities are kept only with --keep-setuid, and nothing is ever
// created outside DESTDIR (restore_dest.go).

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"

	"golang.org/x/term"

	"github.com/gobtrfs/gobtrfs"
)

func init() {
	commands["restore"] = cmdRestore
	usageText["restore"] = "copy a whole filesystem out (btrfs restore's options): restore [-o] [-D] [-v] [-u N] [--devices] [--keep-setuid] [--path-regex RE] [-d IMG]... IMAGE DESTDIR"
}

const restoreUsage = `restore [options] IMAGE DESTDIR

Copies the filesystem (every subvolume and snapshot, from the top level)
into DESTDIR: content with holes, owner, mode, times, xattrs, symlinks,
hard links, fifos. Existing entries of DESTDIR are kept unless -o.
Exit status 1 when anything could not be restored or the image is corrupt
(everything else is still restored). The other devices of a multi-device
filesystem are given with -d IMG (repeated).`

// restoreOptions are the command's options.
type restoreOptions struct {
	img                                   rdImageFlags
	quiet, verbose, dryRun, overwrite     bool
	metadata, symlinks, xattrs, snapshots bool
	devices, keepSetuid                   bool
	pathRegex                             *regexp.Regexp
	// forceFallback opens directories component by component, as on
	// kernels without openat2 (tests).
	forceFallback bool
}

func defaultRestoreOptions() restoreOptions {
	o := restoreOptions{metadata: true, symlinks: true, xattrs: true, snapshots: true}
	o.img.super = -1
	return o
}

func cmdRestore(args []string) error { return restoreMainIO(args, os.Stdout, os.Stderr) }

func restoreMain(args []string, stderr io.Writer) error {
	return restoreMainIO(args, os.Stdout, stderr)
}

// restoreMainIO runs the command: listings (-v, -D) go to stdout, messages
// and the summary to stderr.
func restoreMainIO(args []string, stdout, stderr io.Writer) error {
	o, pos, err := parseRestoreArgs(args, stderr)
	if err != nil {
		return err
	}
	return restoreRun(pos[0], pos[1], o, stdout, stderr)
}

// offFlag is a --no-X flag: it clears the option it points at.
type offFlag struct{ p *bool }

func (f offFlag) String() string   { return "false" }
func (f offFlag) IsBoolFlag() bool { return true }
func (f offFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err == nil && v {
		*f.p = false
	}
	return err
}

func parseRestoreArgs(args []string, stderr io.Writer) (restoreOptions, []string, error) {
	o := defaultRestoreOptions()
	fset := rdFlagSet("restore", restoreUsage)
	// The shared image flags, but the superblock mirror is -u/--super as in
	// btrfs restore, where -s means --snapshots.
	shared := flag.NewFlagSet("", flag.ContinueOnError)
	o.img.register(shared)
	shared.VisitAll(func(f *flag.Flag) {
		if f.Name == "s" {
			fset.Var(f.Value, "u", "use superblock mirror `N` (0 = primary, 1, 2), as btrfs restore -u")
			fset.Var(f.Value, "super", "same as -u")
			return
		}
		fset.Var(f.Value, f.Name, f.Usage)
	})
	boolFlag := func(p *bool, usage string, names ...string) {
		for _, n := range names {
			fset.BoolVar(p, n, *p, usage)
		}
	}
	boolFlag(&o.quiet, "no progress bar", "q")
	boolFlag(&o.overwrite, "overwrite existing entries of DESTDIR (an existing symlink is replaced, never followed)", "o", "overwrite")
	boolFlag(&o.dryRun, "dry run: list what would be restored (stdout), create nothing", "D", "dry-run")
	boolFlag(&o.verbose, "list every entry restored (stdout) and every entry skipped", "v", "verbose")
	ignore := false
	boolFlag(&ignore, "accepted for btrfs restore compatibility: restore always continues after errors", "i", "ignore-errors")
	boolFlag(&o.metadata, "restore owner, mode and times (the default)", "m", "metadata")
	boolFlag(&o.symlinks, "restore symlinks (the default)", "S", "symlink", "symlinks")
	boolFlag(&o.xattrs, "restore xattrs (the default)", "x", "xattr")
	boolFlag(&o.snapshots, "restore snapshots (the default)", "s", "snapshots")
	fset.Var(offFlag{&o.metadata}, "no-metadata", "do not restore owner, mode and times")
	fset.Var(offFlag{&o.symlinks}, "no-symlinks", "do not restore symlinks")
	fset.Var(offFlag{&o.xattrs}, "no-xattrs", "do not restore xattrs")
	fset.Var(offFlag{&o.snapshots}, "no-snapshots", "do not restore snapshots (subvolumes with a parent UUID)")
	boolFlag(&o.devices, "make device nodes (skipped by default: an image is untrusted)", "devices")
	boolFlag(&o.keepSetuid, "keep setuid/setgid bits of files and security.capability xattrs (dropped by default)", "keep-setuid")
	re := fset.String("path-regex", "", "restore only paths (from /) matching `RE`; as in btrfs restore a directory must match to be entered: '^/(|home(|/user(|/.*)))$'")
	icase := fset.Bool("c", false, "--path-regex ignores case")
	pos, err := rdParse(fset, args)
	if err != nil {
		return o, nil, err
	}
	sSet := false
	fset.Visit(func(f *flag.Flag) { sSet = sSet || f.Name == "s" })
	if len(pos) == 3 && sSet && (pos[0] == "0" || pos[0] == "1" || pos[0] == "2") {
		// `-s N` chose the superblock mirror before -s meant --snapshots
		o.img.super, _ = strconv.Atoi(pos[0])
		pos = pos[1:]
		fmt.Fprintf(stderr, "gobtrfs restore: warning: -s %d is read as -u %d (superblock mirror); -s now means --snapshots, as in btrfs restore\n",
			o.img.super, o.img.super)
	}
	if len(pos) != 2 {
		fset.Usage()
		return o, nil, fmt.Errorf("need IMAGE and DESTDIR")
	}
	if *re != "" {
		if *icase {
			*re = "(?i)" + *re
		}
		if o.pathRegex, err = regexp.Compile(*re); err != nil {
			return o, nil, fmt.Errorf("--path-regex: %w", err)
		}
	}
	return o, pos, nil
}

// restoreRun restores image img into dest.
func restoreRun(img, dest string, o restoreOptions, stdout, stderr io.Writer) error {
	fsys, err := o.img.open(img, true, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	root, err := fsys.OpenFile(".")
	if err != nil {
		return err
	}
	r := newRestorer(o, stdout, stderr)
	r.sectorSize = int(fsys.SectorSize())
	r.sizeLimit = restoreSizeLimit(imageBytes(img))
	if !o.snapshots {
		if r.snapshotIDs, err = snapshotIDs(fsys); err != nil {
			return err
		}
	}
	if f, ok := stderr.(*os.File); !o.quiet && ok && term.IsTerminal(int(f.Fd())) {
		r.progressOff = false
	}
	return r.run(rsGobtrfsFile{root}, dest)
}

// imageBytes is the size of the image file or device (0 if unknown).
func imageBytes(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0
	}
	return n
}

// snapshotIDs lists the subvolumes that are snapshots (they have a parent
// UUID), for --no-snapshots.
func snapshotIDs(fsys *gobtrfs.FS) (map[uint64]bool, error) {
	subs, err := fsys.Subvolumes()
	if err != nil {
		return nil, fmt.Errorf("list subvolumes for --no-snapshots: %w", err)
	}
	ids := map[uint64]bool{}
	for _, s := range subs {
		if s.ParentUUID != (gobtrfs.UUID{}) {
			ids[s.ID] = true
		}
	}
	return ids, nil
}
