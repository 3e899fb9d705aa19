package main

// gobtrfs restore: copy a filesystem out of an image, with btrfs restore's
// options (cmds/restore.c), the same letters with the same meaning:
// -o/--overwrite, -v, -i, -D/--dry-run, -l/--list-roots, -r/--root ID,
// -x, -m, -S, -s/--snapshots, -u/--super N, --path-regex and -c.
//
// Defaults differ from btrfs restore where our restore always did more:
// owner, mode and times (-m), symlinks (-S), xattrs (-x) and snapshots (-s)
// are restored unless --no-metadata, --no-symlinks, --no-xattrs or
// --no-snapshots turn them off (-m, -S, -x and -s ask for what is already
// on); restore always continues after an error and reports them all
// at the end with a non-zero exit status (-i asks for that). The image is
// untrusted: existing files are kept unless -o, device nodes are made only
// with --devices, setuid/setgid bits and file capabilities are kept only
// with --keep-setuid, and nothing is ever created outside DESTDIR
// (restore_dest.go).

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/print"
	"github.com/gobtrfs/gobtrfs/internal/progress"
)

func init() { addCommand(newRestoreCmd) }

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

// restoreCmdFlags are the command-line values that become restoreOptions.
type restoreCmdFlags struct {
	o                                     restoreOptions
	ignore, listRoots, icase              bool
	noMeta, noSymlinks, noXattrs, noSnaps bool
	root                                  string
	re                                    string
}

func newRestoreCmd() *cobra.Command {
	f := &restoreCmdFlags{o: defaultRestoreOptions()}
	c := &cobra.Command{
		Use:   "restore [options] IMAGE DESTDIR",
		Short: "copy a whole filesystem out of an image (btrfs restore)",
		Long: `Copy the filesystem (every subvolume and snapshot, from the top level) into
DESTDIR: content with holes, owner, mode, times, xattrs, symlinks, hard
links, fifos. Existing entries of DESTDIR are kept unless -o. Nothing is
created outside DESTDIR or through a symlink; device nodes only with
--devices, setuid bits and capabilities only with --keep-setuid. Exit
status 1 when anything could not be restored or the image is corrupt
(everything else is still restored); the last line is a summary. With
-l, list the tree roots of IMAGE instead (no DESTDIR). A progress line is
drawn on a terminal (-q: none). The other devices of a multi-device
filesystem are given with -d IMG.`,
		Example: `  gobtrfs restore disk.img out/
  gobtrfs restore -D -v disk.img out/            # list what would be restored
  gobtrfs restore -u 1 --path-regex '^/(|home(|/.*))$' disk.img out/
  gobtrfs restore -l disk.img                    # tree roots, as btrfs restore -l`,
		Args: func(c *cobra.Command, args []string) error {
			if f.listRoots {
				return operands(1, 1, "-l needs IMAGE only")(c, args)
			}
			return operands(2, 3, "need IMAGE and DESTDIR")(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			if f.listRoots {
				return restoreListRoots(args[0], f.o.img.super, c.OutOrStdout())
			}
			o, pos, err := f.options(args, c.ErrOrStderr())
			if err != nil {
				return err
			}
			return restoreRun(pos[0], pos[1], o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	o := &f.o
	o.img.addFlags(fl, "u")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	fl.BoolVarP(&o.overwrite, "overwrite", "o", false, "overwrite existing entries of DESTDIR (an existing symlink is replaced, never followed)")
	fl.BoolVarP(&o.dryRun, "dry-run", "D", false, "dry run: list what would be restored (stdout), create nothing")
	fl.BoolVarP(&o.verbose, "verbose", "v", false, "list every entry restored (stdout) and every entry skipped")
	fl.BoolVarP(&f.ignore, "ignore-errors", "i", false, "go on after errors (restore always does: every error is reported at the end)")
	fl.BoolVarP(&f.listRoots, "list-roots", "l", false, "list the tree roots of IMAGE, as btrfs restore -l, and restore nothing")
	fl.StringVarP(&f.root, "root", "r", "", "restore subvolume (tree root) `ID` only, as btrfs restore -r")
	fl.BoolVarP(&o.metadata, "metadata", "m", true, "restore owner, mode and times (the default)")
	fl.BoolVarP(&o.symlinks, "symlink", "S", true, "restore symlinks (the default)")
	fl.BoolVar(&o.symlinks, "symlinks", true, "same as --symlink")
	fl.BoolVarP(&o.xattrs, "xattr", "x", true, "restore xattrs (the default)")
	fl.BoolVarP(&o.snapshots, "snapshots", "s", true, "restore snapshots (the default)")
	fl.BoolVar(&f.noMeta, "no-metadata", false, "do not restore owner, mode and times")
	fl.BoolVar(&f.noSymlinks, "no-symlinks", false, "do not restore symlinks")
	fl.BoolVar(&f.noXattrs, "no-xattrs", false, "do not restore xattrs")
	fl.BoolVar(&f.noSnaps, "no-snapshots", false, "do not restore snapshots (subvolumes with a parent UUID)")
	fl.BoolVar(&o.devices, "devices", false, "make device nodes (skipped by default: an image is untrusted)")
	fl.BoolVar(&o.keepSetuid, "keep-setuid", false, "keep setuid/setgid bits of files and security.capability xattrs (dropped by default)")
	fl.StringVar(&f.re, "path-regex", "", "restore only paths (from /) matching `RE`; as in btrfs restore a directory must match to be entered: '^/(|home(|/user(|/.*)))$'")
	fl.BoolVarP(&f.icase, "ignore-case", "c", false, "--path-regex ignores case")
	fl.Lookup("symlinks").Hidden = true
	return c
}

// options turns the flags into restoreOptions and the operands IMAGE and
// DESTDIR.
func (f *restoreCmdFlags) options(pos []string, stderr io.Writer) (restoreOptions, []string, error) {
	o := f.o
	if f.noMeta {
		o.metadata = false
	}
	if f.noSymlinks {
		o.symlinks = false
	}
	if f.noXattrs {
		o.xattrs = false
	}
	if f.noSnaps {
		o.snapshots = false
	}
	if len(pos) == 3 {
		// `-s N IMAGE DEST`: -s chose the superblock mirror before it
		// meant --snapshots
		n, err := strconv.Atoi(pos[0])
		if err != nil || n < 0 || n > 2 {
			return o, nil, usageErrorf("need IMAGE and DESTDIR")
		}
		o.img.super = n
		pos = pos[1:]
		fmt.Fprintf(stderr, "gobtrfs restore: warning: -s %d is read as -u %d (superblock mirror); -s now means --snapshots, as in btrfs restore\n", n, n)
	}
	if f.root != "" {
		if o.img.subvol != "" {
			return o, nil, usageErrorf("-r/--root and --subvol both choose the subvolume: give one")
		}
		if _, err := strconv.ParseUint(f.root, 10, 64); err != nil {
			return o, nil, usageErrorf("-r %q: a tree root ID is a number (see restore -l)", f.root)
		}
		o.img.subvol = f.root
	}
	if f.re != "" {
		re := f.re
		if f.icase {
			re = "(?i)" + re
		}
		var err error
		if o.pathRegex, err = regexp.Compile(re); err != nil {
			return o, nil, usageErrorf("--path-regex: %v", err)
		}
	}
	return o, pos, nil
}

// restoreMainIO runs the command: listings (-v, -D) go to stdout, messages
// and the summary to stderr.
func restoreMainIO(args []string, stdout, stderr io.Writer) error {
	return runCommand(newRestoreCmd(), args, stdout, stderr)
}

func restoreMain(args []string, stderr io.Writer) error {
	return restoreMainIO(args, os.Stdout, stderr)
}

// restoreListRoots prints the ROOT_ITEMs of the root tree as btrfs restore
// -l does: " tree key (FS_TREE ROOT_ITEM 0) 30408704 level 0".
func restoreListRoots(image string, super int, w io.Writer) error {
	if err := checkImagePath(image); err != nil {
		return err
	}
	dev, err := blockdev.OpenFile(image, true)
	if err != nil {
		return err
	}
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true, SuperMirror: super + 1})
	if err != nil {
		return imageErr(image, err)
	}
	var derr error
	err = fi.RootTree.Range(ondisk.Key{}, ondisk.Key{ObjectID: ^ondisk.ObjectID(0), Type: 255, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			if k.Type != ondisk.RootItemKey {
				return true
			}
			ri, err := item.DecodeRootItem(data)
			if err != nil {
				derr = fmt.Errorf("root item %v: %w", k, err)
				return false
			}
			fmt.Fprintf(w, " tree key %s %d level %d\n", print.KeyString(k), ri.Bytenr, ri.Level)
			return true
		})
	if err == nil {
		err = derr
	}
	return err
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
	if !o.quiet && !o.verbose && !o.dryRun && progress.IsTerminal(stderr) { // -v and -D list on stdout: no line to draw over
		r.progressOff = false
		r.totalBytes = imageBytesUsed(img, o.img.super)
	}
	return r.run(rsGobtrfsFile{root}, dest)
}

// imageBytesUsed is the bytes used the superblock of img records (0 if
// unknown): what the progress bar counts towards.
func imageBytesUsed(img string, super int) int64 {
	dev, err := blockdev.OpenFile(img, true)
	if err != nil {
		return 0
	}
	defer dev.Close()
	res, err := diskio.ReadSuper(dev, super)
	if err != nil {
		return 0
	}
	return int64(min(res.Super.BytesUsed, 1<<62))
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
