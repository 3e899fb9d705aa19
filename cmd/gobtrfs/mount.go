package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gobtrfs/gobtrfs/internal/fusefs/mountcli"
)

func init() {
	commands["mount"] = func(args []string) error { return mountcli.Main(args, false) }
	usageText["mount"] = "mount an image through FUSE (no arguments: ./gobtrfs.img on ./mnt)"
	// Called through a symlink named mount.fuse.gobtrfs, act as mount(8)'s helper.
	if filepath.Base(os.Args[0]) == "mount.fuse.gobtrfs" {
		if err := mountcli.Main(os.Args[1:], true); err != nil {
			fmt.Fprintf(os.Stderr, "mount.fuse.gobtrfs: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}
