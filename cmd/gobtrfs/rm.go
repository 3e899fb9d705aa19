package main

import (
	"errors"
	"io"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

func init() { addCommand(newRmCmd) }

func newRmCmd() *cobra.Command {
	var recursive, force bool
	c := &cobra.Command{
		Use:   "rm [-r] [-f] IMAGE PATH...",
		Short: "remove files from an image",
		Long:  `Remove files inside IMAGE (paths from its top-level subvolume).`,
		Args:  operands(2, -1, "need IMAGE and at least one PATH"),
		RunE: func(_ *cobra.Command, args []string) error {
			m, err := openImgFS(args[0], fsops.Options{})
			if err != nil {
				return err
			}
			for _, p := range args[1:] {
				err = m.rm(p, recursive)
				if err != nil && force && errors.Is(err, syscall.ENOENT) {
					err = nil
				}
				if err != nil {
					break
				}
			}
			return m.finish(err)
		},
	}
	fl := c.Flags()
	fl.BoolVarP(&recursive, "recursive", "r", false, "remove directories and their contents; subvolumes are deleted")
	fl.BoolVarP(&recursive, "R", "R", false, "same as -r")
	fl.Lookup("R").Hidden = true
	fl.BoolVarP(&force, "force", "f", false, "ignore paths that do not exist")
	return c
}

func rmMain(args []string, stderr io.Writer) error {
	return runCommand(newRmCmd(), args, stderr, stderr)
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
