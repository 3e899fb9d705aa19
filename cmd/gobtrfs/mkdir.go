package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/namei"
)

func init() {
	commands["mkdir"] = func(args []string) error { return mkdirMain(args, os.Stderr) }
	usageText["mkdir"] = "make directories in an image: mkdir [-p] [-m MODE] IMAGE PATH..."
}

const mkdirUsage = `usage: gobtrfs mkdir [-p] [-m MODE] IMAGE PATH...

Make directories inside IMAGE (paths from its top-level subvolume).

  -p        make missing parents; no error if PATH exists as a directory
  -m MODE   permission bits in octal (default 755)
`

func mkdirMain(args []string, stderr io.Writer) error {
	fl := writeFlags("mkdir", mkdirUsage, stderr)
	parents := fl.Bool("p", false, "make parents")
	modeStr := fl.String("m", "755", "mode")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() < 2 {
		fl.Usage()
		return errors.New("need IMAGE and at least one PATH")
	}
	mode, err := strconv.ParseUint(*modeStr, 8, 32)
	if err != nil || mode > 0o7777 {
		return fmt.Errorf("bad mode %q", *modeStr)
	}
	m, err := openImgFS(fl.Arg(0), fsops.Options{})
	if err != nil {
		return err
	}
	for _, p := range fl.Args()[1:] {
		if err = m.mkdir(p, uint32(mode), *parents); err != nil {
			break
		}
	}
	return m.finish(err)
}

// mkdir makes one directory (and with parents, the missing ones above it).
func (m *imgFS) mkdir(p string, mode uint32, parents bool) error {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if !parents {
		dir, name, err := m.lookupParent(p)
		if err != nil {
			return err
		}
		if _, err := m.fs.Mkdir(dir, name, mode, uid, gid); err != nil {
			return pathErr(p, err)
		}
		return nil
	}
	sofar := ""
	for _, name := range namei.Split(strings.TrimRight(p, "/")) {
		sofar += "/" + name
		_, x, err := m.fs.Resolve(sofar, true)
		if err == nil {
			if !isDirMode(x.Mode) {
				return pathErr(sofar, syscall.ENOTDIR)
			}
			continue
		}
		if !errors.Is(err, syscall.ENOENT) {
			return pathErr(sofar, err)
		}
		dir, base, err := m.fs.ResolveParent(sofar)
		if err == nil {
			_, err = m.fs.Mkdir(dir, base, mode, uid, gid)
		}
		if err != nil {
			return pathErr(sofar, err)
		}
	}
	return nil
}
