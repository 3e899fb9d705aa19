package main

import (
	"errors"
	"io"
	"os"
	"path"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

func init() {
	commands["ln"] = func(args []string) error { return lnMain(args, os.Stderr) }
	usageText["ln"] = "make a hard or symbolic link in an image: ln [-s] IMAGE TARGET LINKNAME"
}

const lnUsage = `usage: gobtrfs ln [-s] IMAGE TARGET LINKNAME

Make LINKNAME inside IMAGE a hard link to the image file TARGET, or with -s
a symbolic link whose target is the text TARGET. When LINKNAME is a
directory the link is made inside it.
`

func lnMain(args []string, stderr io.Writer) error {
	fl := writeFlags("ln", lnUsage, stderr)
	symbolic := fl.Bool("s", false, "symbolic")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 3 {
		fl.Usage()
		return errors.New("need IMAGE, TARGET and LINKNAME")
	}
	m, err := openImgFS(fl.Arg(0), fsops.Options{})
	if err != nil {
		return err
	}
	return m.finish(m.ln(fl.Arg(1), fl.Arg(2), *symbolic))
}

func (m *imgFS) ln(target, link string, symbolic bool) error {
	if _, x, err := m.lookup(link, true); err == nil && isDirMode(x.Mode) {
		link = link + "/" + path.Base(path.Clean("/"+target))
	}
	dir, name, err := m.lookupParent(link)
	if err != nil {
		return err
	}
	if symbolic {
		if _, err := m.fs.Symlink(dir, name, target, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
			return pathErr(link, err)
		}
		return nil
	}
	tid, _, err := m.lookup(target, false)
	if err != nil {
		return err
	}
	if err := m.fs.Link(tid, dir, name); err != nil {
		return pathErr(link, err)
	}
	return nil
}
