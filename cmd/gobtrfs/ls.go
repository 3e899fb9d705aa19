package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs"
)

func init() { addCommand(newLsCmd) }

type lsFlags struct {
	long, recursive, ino bool
	null, json           bool
}

func newLsCmd() *cobra.Command {
	var img rdImageFlags
	var lf lsFlags
	c := &cobra.Command{
		Use:   "ls [options] IMAGE [PATH]",
		Short: "list files of an image",
		Long: `List the directory PATH of IMAGE (default: its top directory) sorted by
name, or the file PATH. Paths start at the default subvolume, or the one
--subvol names. Names with newlines, control bytes or invalid UTF-8 are
printed quoted as $'...' (bash's ANSI-C quoting); -0 and --json print
them as they are, for scripts.`,
		Args: operands(1, 2, "need IMAGE and at most one PATH"),
		RunE: func(c *cobra.Command, args []string) error {
			if lf.null && lf.json {
				return usageErrorf("-0 and --json exclude each other")
			}
			return lsRun(&img, lf, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	img.addFlags(fl, "s")
	fl.BoolVarP(&lf.long, "long", "l", false, "long listing: mode, links, uid, gid, size, mtime")
	fl.BoolVarP(&lf.recursive, "recursive", "R", false, "list subdirectories recursively (paths relative to PATH)")
	fl.BoolVarP(&lf.ino, "inode", "i", false, "print inode numbers")
	fl.BoolVarP(&lf.null, "null", "0", false, "end each entry with a NUL byte instead of a newline, names unquoted (for xargs -0)")
	fl.BoolVar(&lf.json, "json", false, "print a JSON array of entries (name, path, type, mode, ino, nlink, uid, gid, size, mtime, target)")
	return c
}

func lsMain(args []string, stdout, stderr io.Writer) error {
	return runCommand(newLsCmd(), args, stdout, stderr)
}

func lsRun(img *rdImageFlags, lf lsFlags, pos []string, stdout, stderr io.Writer) error {
	fsys, err := img.open(pos[0], false, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	name, shown := ".", "/"
	if len(pos) == 2 {
		name, shown = rdFSPath(pos[1]), pos[1]
	}
	w := &lsOut{w: bufio.NewWriter(stdout), lf: lf}
	defer w.w.Flush()
	fi, err := fsys.Lstat(name)
	if err != nil {
		return rdPathErr(pos[0], shown, err)
	}
	if !fi.IsDir() {
		row, err := lsRowOf(fsys, name, path.Base(name), fi)
		if err != nil {
			return err
		}
		w.row(row)
		return w.end()
	}
	var errs []error
	lsDir(fsys, name, "", lf, w, &errs)
	w.end()
	if len(errs) > 0 {
		w.w.Flush()
		for _, e := range errs {
			fmt.Fprintf(stderr, "gobtrfs ls: %v\n", e)
		}
		return fmt.Errorf("%d error(s) while listing", len(errs))
	}
	return nil
}

// lsDir prints dir's entries sorted by name; with -R it descends, printing
// paths relative to the starting directory (prefix).
func lsDir(fsys *gobtrfs.FS, dir, prefix string, lf lsFlags, w *lsOut, errs *[]error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		*errs = append(*errs, err)
	}
	for _, e := range ents {
		rel := path.Join(prefix, e.Name())
		full := path.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		row, err := lsRowOf(fsys, full, rel, fi)
		if err != nil {
			*errs = append(*errs, err)
		}
		w.row(row)
		if lf.recursive && fi.IsDir() {
			lsDir(fsys, full, rel, lf, w, errs)
		}
	}
}

// lsRow is one line of a listing; the kernel-comparison test builds rows
// from a kernel mount the same way.
type lsRow struct {
	ino          uint64
	mode         uint32 // Linux mode bits
	nlink        uint32
	uid, gid     uint32
	size         int64
	major, minor uint32
	mtime        time.Time
	name, target string
}

func lsRowOf(fsys *gobtrfs.FS, full, name string, fi fs.FileInfo) (lsRow, error) {
	st := fi.Sys().(*gobtrfs.Stat)
	r := lsRow{ino: st.Ino, mode: st.Mode, nlink: st.Nlink, uid: st.UID, gid: st.GID, size: st.Size,
		major: st.Major(), minor: st.Minor(), mtime: st.Mtime, name: name}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := fsys.ReadLink(full)
		if err != nil {
			return r, err
		}
		r.target = t
	}
	return r, nil
}

func (r lsRow) format(lf lsFlags) string {
	var b strings.Builder
	if lf.ino {
		fmt.Fprintf(&b, "%8d ", r.ino)
	}
	name, target := r.name, r.target
	if !lf.null {
		name, target = quoteName(name), quoteName(target)
	}
	if !lf.long {
		b.WriteString(name)
		return b.String()
	}
	size := fmt.Sprintf("%d", r.size)
	if t := r.mode & 0o170000; t == 0o020000 || t == 0o060000 {
		size = fmt.Sprintf("%d, %d", r.major, r.minor)
	}
	fmt.Fprintf(&b, "%s %3d %5d %5d %10s %s %s", rdModeString(r.mode), r.nlink, r.uid, r.gid, size,
		r.mtime.UTC().Format("2006-01-02 15:04:05.000000000"), name)
	if r.mode&0o170000 == 0o120000 {
		fmt.Fprintf(&b, " -> %s", target)
	}
	return b.String()
}

// rdModeString formats mode bits as ls(1) does ("drwxr-sr-t").
func rdModeString(m uint32) string {
	var b [10]byte
	switch m & 0o170000 {
	case 0o040000:
		b[0] = 'd'
	case 0o120000:
		b[0] = 'l'
	case 0o010000:
		b[0] = 'p'
	case 0o140000:
		b[0] = 's'
	case 0o020000:
		b[0] = 'c'
	case 0o060000:
		b[0] = 'b'
	case 0o100000:
		b[0] = '-'
	default:
		b[0] = '?'
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) != 0 {
			b[i+1] = rwx[i]
		} else {
			b[i+1] = '-'
		}
	}
	special := func(pos int, bit uint32, set, unset byte) {
		if m&bit != 0 {
			if b[pos] == 'x' {
				b[pos] = set
			} else {
				b[pos] = unset
			}
		}
	}
	special(3, 0o4000, 's', 'S')
	special(6, 0o2000, 's', 'S')
	special(9, 0o1000, 't', 'T')
	return string(b[:])
}
