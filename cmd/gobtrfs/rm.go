package main

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

func init() {
	commands["rm"] = func(args []string) error { return rmMain(args, os.Stderr) }
	usageText["rm"] = "remove files from an image: rm [-r] [-f] IMAGE PATH..."
}

const rmUsage = `usage: gobtrfs rm [-r] [-f] IMAGE PATH...

Remove files inside IMAGE (paths from its top-level subvolume).

  -r   remove directories and their contents; subvolumes are deleted
  -f   ignore paths that do not exist
`

func rmMain(args []string, stderr io.Writer) error {
	fl := writeFlags("rm", rmUsage, stderr)
	recursive := fl.Bool("r", false, "recursive")
	fl.BoolVar(recursive, "R", false, "recursive")
	force := fl.Bool("f", false, "ignore missing")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() < 2 {
		fl.Usage()
		return errors.New("need IMAGE and at least one PATH")
	}
	m, err := openImgFS(fl.Arg(0), fsops.Options{})
	if err != nil {
		return err
	}
	for _, p := range fl.Args()[1:] {
		err = m.rm(p, *recursive)
		if err != nil && *force && errors.Is(err, syscall.ENOENT) {
			err = nil
		}
		if err != nil {
			break
		}
	}
	return m.finish(err)
}

// rm removes one path.
func (m *imgFS) rm(p string, recursive bool) error {
	dir, name, err := m.lookupParent(p)
	if err != nil {
		return err
	}
	if name == "." || name == ".." {
		return pathErr(p, syscall.EINVAL)
	}
	id, x, err := m.fs.Lookup(dir, name)
	if err != nil {
		return pathErr(p, err)
	}
	if !isDirMode(x.Mode) {
		if err := m.fs.Unlink(dir, name); err != nil {
			return pathErr(p, err)
		}
		return nil
	}
	if !recursive {
		return pathErr(p, syscall.EISDIR)
	}
	return m.removeTree(dir, name, id, p)
}

// removeTree removes directory id (called name in dir) with its contents; a
// subvolume is deleted whole once the subvolumes inside it are gone.
func (m *imgFS) removeTree(dir ondisk.InodeRef, name string, id ondisk.InodeRef, p string) error {
	if id.Root != dir.Root {
		if err := m.removeNestedSubvols(id, p); err != nil {
			return err
		}
		if err := m.fs.DeleteSubvolume(dir, name); err != nil {
			return pathErr(p, err)
		}
		return nil
	}
	ents, err := m.fs.ReadDir(id)
	if err != nil {
		return pathErr(p, err)
	}
	for _, e := range ents {
		cp := p + "/" + e.Name
		if e.Type == item.FTDir {
			if err := m.removeTree(id, e.Name, e.Target(id.Root), cp); err != nil {
				return err
			}
			continue
		}
		if err := m.fs.Unlink(id, e.Name); err != nil {
			return pathErr(cp, err)
		}
	}
	if err := m.fs.Rmdir(dir, name); err != nil {
		return pathErr(p, err)
	}
	return nil
}

// removeNestedSubvols deletes the subvolumes linked anywhere below dir.
func (m *imgFS) removeNestedSubvols(dir ondisk.InodeRef, p string) error {
	ents, err := m.fs.ReadDir(dir)
	if err != nil {
		return pathErr(p, err)
	}
	for _, e := range ents {
		if e.Type != item.FTDir {
			continue
		}
		cp := p + "/" + e.Name
		t := e.Target(dir.Root)
		if err := m.removeNestedSubvols(t, cp); err != nil {
			return err
		}
		if e.IsSubvol() {
			if err := m.fs.DeleteSubvolume(dir, e.Name); err != nil {
				return pathErr(cp, err)
			}
		}
	}
	return nil
}
