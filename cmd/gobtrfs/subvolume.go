package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/namei"
)

func init() {
	commands["subvolume"] = func(args []string) error { return subvolumeMain(args, os.Stdout, os.Stderr) }
	usageText["subvolume"] = "create, snapshot, delete or list subvolumes of an image"
}

const subvolumeUsage = `usage: gobtrfs subvolume create IMAGE PATH
       gobtrfs subvolume snapshot [-r] IMAGE SOURCE DEST
       gobtrfs subvolume delete IMAGE PATH...
       gobtrfs subvolume list IMAGE

Paths are inside IMAGE, from its top-level subvolume. A snapshot's SOURCE
is a subvolume (its top directory); when DEST is a directory the snapshot
is made inside it under SOURCE's name.
`

func subvolumeMain(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, subvolumeUsage)
		return errors.New("need a subcommand")
	}
	fl := writeFlags("subvolume "+args[0], subvolumeUsage, stderr)
	readonly := fl.Bool("r", false, "read-only snapshot")
	if err := fl.Parse(args[1:]); err != nil {
		return err
	}
	a := fl.Args()
	need := map[string]int{"create": 2, "snapshot": 3, "delete": 2, "list": 1}
	n, ok := need[args[0]]
	if !ok {
		fl.Usage()
		return fmt.Errorf("unknown subvolume command %q", args[0])
	}
	if len(a) < n || (args[0] != "delete" && len(a) != n) {
		fl.Usage()
		return fmt.Errorf("subvolume %s: wrong number of arguments", args[0])
	}
	if args[0] == "list" {
		// a reader: works beside a writer (with a stale-view warning)
		return subvolList(a[0], stdout, stderr)
	}
	m, err := openImgFS(a[0], fsops.Options{})
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		err = m.subvolCreate(a[1])
	case "snapshot":
		err = m.subvolSnapshot(a[1], a[2], *readonly)
	case "delete":
		for _, p := range a[1:] {
			if err = m.subvolDelete(p); err != nil {
				break
			}
		}
	}
	return m.finish(err)
}

func (m *imgFS) subvolCreate(p string) error {
	dir, name, err := m.lookupParent(p)
	if err != nil {
		return err
	}
	if _, err := m.fs.CreateSubvolume(dir, name, 0o755, uint32(os.Getuid()), uint32(os.Getgid())); err != nil {
		return pathErr(p, err)
	}
	return nil
}

func (m *imgFS) subvolSnapshot(src, dst string, readonly bool) error {
	sid, _, err := m.lookup(src, true)
	if err != nil {
		return err
	}
	if sid.Ino != fsops.RootDirIno {
		return fmt.Errorf("%s: not a subvolume", src)
	}
	if _, x, err := m.lookup(dst, true); err == nil && isDirMode(x.Mode) {
		name := "top"
		if parts := namei.Split(strings.TrimRight(src, "/")); len(parts) > 0 {
			name = parts[len(parts)-1]
		}
		dst = dst + "/" + name
	}
	dir, name, err := m.lookupParent(dst)
	if err != nil {
		return err
	}
	if _, err := m.fs.Snapshot(sid.Root, dir, name, readonly); err != nil {
		return pathErr(dst, err)
	}
	return nil
}

func (m *imgFS) subvolDelete(p string) error {
	dir, name, err := m.lookupParent(p)
	if err != nil {
		return err
	}
	if err := m.fs.DeleteSubvolume(dir, name); err != nil {
		return pathErr(p, err)
	}
	return nil
}

// subvolList prints one line per subvolume, as btrfs subvolume list does.
func subvolList(image string, w, stderr io.Writer) error {
	fsys, err := gobtrfs.Open(image, &gobtrfs.Options{SubvolID: 5,
		Warn: func(msg string) { fmt.Fprintf(stderr, "gobtrfs: warning: %s\n", msg) }})
	if err != nil {
		return err
	}
	defer fsys.Close()
	subs, err := fsys.Subvolumes()
	if err != nil {
		return err
	}
	for _, s := range subs {
		if s.ID == 5 {
			continue
		}
		ro := ""
		if s.ReadOnly {
			ro = " (readonly)"
		}
		fmt.Fprintf(w, "ID %d gen %d top level %d path %s%s\n", s.ID, s.Generation, s.ParentID, s.Path, ro)
	}
	return nil
}
