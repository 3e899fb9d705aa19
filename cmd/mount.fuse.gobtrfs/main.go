// Command mount.fuse.gobtrfs mounts gobtrfs images for mount(8), as the
// helper for type fuse.gobtrfs. Installed as /sbin/mount.fuse.gobtrfs, it
// makes `mount -t fuse.gobtrfs IMAGE DIR` work, as do fstab lines like
//
//	/srv/disk.img  /mnt/disk  fuse.gobtrfs  defaults,compress=zstd  0 0
//
// mount(8) runs it as `mount.fuse.gobtrfs IMAGE DIR -o OPTIONS`; it
// returns once the mount is ready and serves it in the background (-f keeps
// it in the foreground). `gobtrfs` itself behaves the same when called
// through a symlink named mount.fuse.gobtrfs.
package main

import (
	"fmt"
	"os"

	"github.com/gobtrfs/gobtrfs/internal/fusefs/mountcli"
)

func main() {
	if err := mountcli.Main(os.Args[1:], true); err != nil {
		fmt.Fprintf(os.Stderr, "mount.fuse.gobtrfs: %v\n", err)
		os.Exit(1)
	}
}
