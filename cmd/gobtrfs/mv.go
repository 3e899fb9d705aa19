package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

func init() {
	commands["mv"] = func(args []string) error { return mvMain(args, os.Stderr) }
	usageText["mv"] = "rename or move a file in an image: mv [-n] IMAGE SRC DST"
}

const mvUsage = `usage: gobtrfs mv [-n] IMAGE SRC DST

Rename SRC to DST inside IMAGE, or move it into DST when DST is a directory.
Both must be in the same subvolume.

  -n   do not replace an existing DST
`

func mvMain(args []string, stderr io.Writer) error {
	fl := writeFlags("mv", mvUsage, stderr)
	noReplace := fl.Bool("n", false, "no replace")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 3 {
		fl.Usage()
		return errors.New("need IMAGE, SRC and DST")
	}
	m, err := openImgFS(fl.Arg(0), fsops.Options{})
	if err != nil {
		return err
	}
	return m.finish(m.mv(fl.Arg(1), fl.Arg(2), *noReplace))
}

func (m *imgFS) mv(src, dst string, noReplace bool) error {
	sdir, sname, err := m.lookupParent(src)
	if err != nil {
		return err
	}
	if _, _, err := m.fs.Lookup(sdir, sname); err != nil {
		return pathErr(src, err)
	}
	ddir, dname, err := m.lookupParent(dst)
	if err != nil {
		return err
	}
	if id, x, err := m.lookup(dst, true); err == nil && isDirMode(x.Mode) {
		ddir, dname = id, sname
		dst = dst + "/" + sname
	}
	var flags uint32
	if noReplace {
		flags = fsops.RenameNoReplace
	}
	if err := m.fs.Rename(sdir, sname, ddir, dname, flags); err != nil {
		return fmt.Errorf("%s -> %w", src, pathErr(dst, err))
	}
	return nil
}
