// Package mountcli runs the command line of `gobtrfs mount` and of the
// mount(8) helper mount.fuse.gobtrfs: it parses the options, creates the
// default image, serves the mount in the foreground or the background, and
// unmounts cleanly on SIGINT/SIGTERM.
package mountcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
)

// Defaults of `gobtrfs mount` with no arguments.
const (
	DefaultImage      = "gobtrfs.img"
	DefaultMountpoint = "mnt"
	DefaultImageSize  = 1 << 30
)

// readyEnv names the descriptor a background child reports readiness on.
const readyEnv = "GOBTRFS_MOUNT_READY_FD"

// Usage is the help text of `gobtrfs mount`.
const Usage = `usage: gobtrfs mount [-o OPTIONS] [--daemon] [-d] [IMAGE MOUNTPOINT]

Mount a btrfs image through FUSE. With no IMAGE and MOUNTPOINT, mounts
./gobtrfs.img (made, 1 GiB sparse, if missing) at ./mnt (made if missing).
Runs in the foreground until unmounted (Ctrl-C, umount or fusermount3 -u);
everything buffered is written back and committed before it exits.
A read-write mount holds the image exclusively: other writers (put, mkfs,
the library's OpenRW) are refused while it is mounted. Another mount of it
(root only) joins the running mount, as a second kernel mount of a btrfs
device shares its filesystem: a bind mount of the subvolume asked for.

  --daemon       run in the background once the mount is ready
  -f, --foreground
                 run in the foreground (the default; for mount(8) helpers)
  -d, --debug    log every FUSE request (as -o debug; as in libfuse and
                 sshfs, where -d is debug, not daemon)
  -o OPTIONS     comma-separated mount options:
       ro                    read-only, through the read side only
       compress=ALG[:LEVEL]  zlib, lzo or zstd for new data (no: none)
       commit=SECONDS        write back and commit this often (default 30)
       subvol=PATH           mount this subvolume as the root
       subvolid=ID           mount the subvolume with this ID
       allow_other           let other users in (see /etc/fuse.conf)
       dirty_limit=SIZE      buffered data (dirty and in writeback) before writers wait (default 256M)
       no_writeback_cache    send every write(2) to the daemon instead of
                             letting the kernel gather them (writeback_cache,
                             the default of a read-write mount)
       nodatasum             do not verify data checksums (ro); new files
                             without checksums (rw)
       nodatacow             new files NODATACOW (writes in place, as chattr +C)
       lock_wait=SECONDS     wait this long for another holder of the image
                             (one writer per image; default 10)
       debug                 log every FUSE request
       relatime|noatime|strictatime, nodiratime
                             access time updates (default relatime)
       nodev, nosuid, noexec as for any mount (a mount by root honours
                             device nodes and set-user-ID bits by default)
       remount               change a live mount: mount -o remount,ro DIR
                             (commits first), remount,rw, atime options
  Options of kernel btrfs that mean nothing here (ssd, space_cache=v2,
  discard=async, autodefrag...) are accepted and logged once.
`

// Args is a parsed command line.
type Args struct {
	Image, Mountpoint string
	Options           fusefs.Options
	Background        bool
	Verbose           bool
	// Defaults is set when no IMAGE and MOUNTPOINT were given: the
	// default image is made and the mount point created if missing.
	Defaults bool
	// Remount is set by -o remount: RemountOptions (every -o given) are
	// applied to the live mount at Mountpoint (fusefs.Remount).
	Remount        bool
	RemountOptions string
}

// DefaultLockWait is how long `gobtrfs mount` waits for another holder of
// the image to let go (-o lock_wait=S changes it): umount returns before
// the daemon of the old mount has written back and released the image.
const DefaultLockWait = 10 * time.Second

// Parse reads `gobtrfs mount` arguments. The mount(8) helper convention
// (IMAGE DIR -o OPTS, options after the operands) is accepted too.
func Parse(args []string, helper bool) (*Args, error) {
	a := &Args{Background: helper}
	a.Options.LockWait = DefaultLockWait
	var operands []string
	args = splitGrouped(args)
	for i := 0; i < len(args); i++ {
		s := args[i]
		switch {
		case s == "-h" || s == "--help":
			return nil, flag.ErrHelp
		case s == "-o" || s == "--options":
			if i+1 >= len(args) {
				return nil, errors.New("-o needs an argument")
			}
			i++
			if err := a.addOptions(args[i]); err != nil {
				return nil, err
			}
		case strings.HasPrefix(s, "-o") || strings.HasPrefix(s, "--options="):
			if err := a.addOptions(strings.TrimPrefix(strings.TrimPrefix(s, "--options="), "-o")); err != nil {
				return nil, err
			}
		case s == "--daemon":
			a.Background = true
		case s == "-d" || s == "--debug":
			a.Options.Debug = true
		case s == "-f" || s == "--foreground":
			a.Background = false
		case s == "-v":
			a.Verbose = true
		case s == "-n" || s == "-s": // mount(8): no mtab / sloppy
		case s == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(s, "-") && s != "-":
			return nil, fmt.Errorf("unknown option %s", s)
		default:
			operands = append(operands, s)
		}
	}
	switch len(operands) {
	case 0:
		if helper {
			return nil, errors.New("usage: mount.fuse.gobtrfs IMAGE MOUNTPOINT [-o OPTIONS]")
		}
		a.Image, a.Mountpoint, a.Defaults = DefaultImage, DefaultMountpoint, true
	case 2:
		a.Image, a.Mountpoint = operands[0], operands[1]
	default:
		return nil, errors.New("want IMAGE and MOUNTPOINT, or neither")
	}
	return a, nil
}

// splitGrouped turns grouped short flags (-fd) into one argument each, as
// getopt reads them; -o's value may follow in the same argument (-fdoro).
func splitGrouped(args []string) []string {
	var out []string
	for i, s := range args {
		if s == "--" {
			return append(out, args[i:]...)
		}
		if len(s) < 3 || s[0] != '-' || s[1] == '-' || !strings.ContainsRune("dfvns", rune(s[1])) {
			out = append(out, s)
			continue
		}
		for j := 1; j < len(s); j++ {
			if s[j] == 'o' {
				out = append(out, "-o"+s[j+1:])
				break
			}
			out = append(out, "-"+s[j:j+1])
		}
	}
	return out
}

// addOptions takes one -o argument. With remount among them the options
// are kept for fusefs.Remount, which knows which can change live.
func (a *Args) addOptions(s string) error {
	a.RemountOptions = strings.TrimPrefix(a.RemountOptions+","+s, ",")
	for _, o := range strings.Split(s, ",") {
		if strings.TrimSpace(o) == "remount" {
			a.Remount = true
		}
	}
	if a.Remount {
		return nil
	}
	return fusefs.ParseMountOptions(s, &a.Options)
}

// Main runs the command; helper selects mount.fuse.gobtrfs conventions
// (background by default).
func Main(args []string, helper bool) error {
	a, err := Parse(args, helper)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stdout, Usage)
		return nil
	}
	if err != nil {
		return err
	}
	if a.Remount {
		return fusefs.Remount(a.Mountpoint, a.RemountOptions)
	}
	if fd := os.Getenv(readyEnv); fd != "" {
		return runChild(a, fd)
	}
	if err := prepare(a); err != nil {
		return err
	}
	var said io.Writer = os.Stderr
	if helper {
		said = io.Discard // mount(8) helpers say nothing on success
	}
	if joined, err := join(a, said); joined || err != nil {
		return err // a second mount of a mounted image (join.go)
	}
	if a.Background {
		return startBackground()
	}
	return runForeground(a, os.Stderr)
}

// prepare makes the default image and the mount point when asked to.
func prepare(a *Args) error {
	if !a.Defaults {
		return nil
	}
	if _, err := os.Stat(a.Image); errors.Is(err, os.ErrNotExist) {
		if err := CreateImage(a.Image, DefaultImageSize); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "gobtrfs: made %s (%d MiB, sparse)\n", a.Image, DefaultImageSize>>20)
	}
	if err := os.MkdirAll(a.Mountpoint, 0o755); err != nil {
		return err
	}
	return nil
}

// CreateImage makes a sparse image file of size bytes with a new filesystem.
func CreateImage(path string, size int64) error { return mkfs.CreateFile(path, size, mkfs.Config{}) }

// runForeground mounts and serves until unmounted. SIGINT/SIGTERM/SIGHUP
// unmount; while the mount is busy the signal is reported and a second one
// detaches it (lazy unmount).
func runForeground(a *Args, log io.Writer) error {
	// The signals are caught before the mount shows: a SIGTERM right
	// after it appeared killed the daemon with the image mounted (an
	// unmount then failed with ENOTCONN; TestReadOnlyUnmountMessage
	// failed so once).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	mt, err := fusefs.New(a.Image, a.Mountpoint, a.Options)
	if err != nil {
		return err
	}
	mode := "read-write"
	if mt.ReadOnly() {
		mode = "read-only"
	}
	fmt.Fprintf(log, "gobtrfs: %s mounted on %s (%s); Ctrl-C or umount to unmount\n", a.Image, a.Mountpoint, mode)
	serve(mt, log, sigs)
	if err := mt.Close(); err != nil {
		return fmt.Errorf("close %s: %w", a.Image, err)
	}
	if mt.ReadOnly() {
		fmt.Fprintf(log, "gobtrfs: %s unmounted\n", a.Image) // nothing was written
		return nil
	}
	fmt.Fprintf(log, "gobtrfs: %s unmounted, everything written back and committed\n", a.Image)
	return nil
}

// serve waits for the unmount, turning signals into unmount requests.
func serve(mt *fusefs.Mount, log io.Writer, sigs <-chan os.Signal) {
	done := make(chan struct{})
	go func() { mt.Wait(); close(done) }()
	tries := 0
	for {
		select {
		case <-done:
			return
		case s := <-sigs:
			tries++
			if err := mt.Unmount(); err != nil {
				if tries == 1 {
					fmt.Fprintf(log, "gobtrfs: %v: unmount %s: %v; still mounted (signal again to detach it lazily)\n", s, mt.Mountpoint, err)
					continue
				}
				fmt.Fprintf(log, "gobtrfs: detaching %s lazily; it is written back when the last user leaves\n", mt.Mountpoint)
				detach(mt.Mountpoint)
			}
		}
	}
}

// detach unmounts lazily.
func detach(mountpoint string) {
	if syscall.Unmount(mountpoint, syscall.MNT_DETACH) == nil {
		return
	}
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if path, err := lookPath(bin); err == nil {
			if runCmd(path, "-u", "-z", mountpoint) == nil {
				return
			}
		}
	}
}
