package main

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/copyin"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

func init() {
	commands["put"] = func(args []string) error { return putMain(args, os.Stderr) }
	usageText["put"] = "copy host files and trees into an image: put [-z ALG] IMAGE SRC... DEST"
}

const putUsage = `usage: gobtrfs put [-z ALG] IMAGE SRC... DEST

Copy host files and directory trees into IMAGE, keeping mode, owner,
nanosecond times, xattrs, hard links, symlinks, fifos, sockets, device
nodes and holes. When DEST is a directory in the image each SRC is copied
into it; otherwise the single SRC is copied as DEST. Existing directories
are merged, existing files replaced.

  -z ALG   compress new data with zlib, lzo or zstd
`

func putMain(args []string, stderr io.Writer) error {
	fl := writeFlags("put", putUsage, stderr)
	alg := fl.String("z", "none", "compression")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() < 3 {
		fl.Usage()
		return errors.New("need IMAGE, at least one SRC and DEST")
	}
	a, err := compress.ParseAlg(*alg)
	if err != nil {
		return err
	}
	srcs := fl.Args()[1 : fl.NArg()-1]
	dest := fl.Arg(fl.NArg() - 1)
	for _, s := range srcs {
		if _, err := os.Lstat(s); err != nil {
			return err
		}
	}
	m, err := openImgFS(fl.Arg(0), fsops.Options{Compress: a})
	if err != nil {
		return err
	}
	return m.finish(m.put(srcs, dest))
}

// put copies srcs to dest.
func (m *imgFS) put(srcs []string, dest string) error {
	c := copyin.New(m.fs)
	did, dx, err := m.lookup(dest, true)
	switch {
	case err == nil && isDirMode(dx.Mode):
		for _, s := range srcs {
			name := filepath.Base(filepath.Clean(s))
			if name == "/" || name == "." || name == ".." {
				if err := c.CopyContents(s, did, dest); err != nil {
					return err
				}
				continue
			}
			if err := c.CopyIn(s, did, name, path.Join(dest, name)); err != nil {
				return err
			}
		}
		return nil
	case err != nil && !errors.Is(err, syscall.ENOENT):
		return err
	case len(srcs) != 1:
		if err == nil {
			return pathErr(dest, syscall.ENOTDIR)
		}
		return err
	}
	dir, name, err := m.lookupParent(dest)
	if err != nil {
		return err
	}
	return c.CopyIn(srcs[0], dir, name, dest)
}
