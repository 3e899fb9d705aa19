package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/gobtrfs/gobtrfs"
)

func init() {
	commands["restore"] = cmdRestore
	usageText["restore"] = "copy a whole filesystem out: restore [--no-verify] [-s N] [--subvol ID|PATH] IMAGE DESTDIR"
}

const restoreUsage = "restore [--no-verify] [-s N] [--subvol ID|PATH] IMAGE DESTDIR"

func cmdRestore(args []string) error { return restoreMain(args, os.Stderr) }

func restoreMain(args []string, stderr io.Writer) error {
	var img rdImageFlags
	fset := rdFlagSet("restore", restoreUsage)
	img.register(fset)
	quiet := fset.Bool("q", false, "no progress bar")
	pos, err := rdParse(fset, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fset.Usage()
		return fmt.Errorf("need IMAGE and DESTDIR")
	}
	fsys, err := img.open(pos[0], true, stderr)
	if err != nil {
		return err
	}
	defer fsys.Close()
	showProgress := !*quiet
	if f, ok := stderr.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		showProgress = false
	}
	r := newRestorer(fsys, stderr, showProgress)
	return r.run(pos[1])
}

// restoreChunk is how much file data is read and written at a time, which
// bounds restore's memory whatever the file sizes.
const restoreChunk = 1 << 20

// restorer copies a filesystem tree out of an image: content with holes
// kept, mode, ownership, nanosecond times, xattrs, symlinks, hard links,
// fifos and device nodes. Every subvolume and snapshot linked in the tree
// becomes a directory. It keeps going after a failure and reports them all.
type restorer struct {
	fsys   *gobtrfs.FS
	stderr io.Writer
	buf    []byte
	root   bool // running as root: ownership and devices are expected to work

	// links maps (subvolume, inode) of a multiply linked file to its first
	// restored path; subvolume roots are all inode 256, so ino alone is not a key.
	links map[gobtrfs.InodeKey]string

	failures []restoreFailure
	warnings []string

	files, bytes atomic.Int64
	cur          atomic.Value // current path, for the progress line
	progressDone chan struct{}
	progressWG   sync.WaitGroup
}

type restoreFailure struct {
	path string
	err  error
}

func newRestorer(fsys *gobtrfs.FS, stderr io.Writer, progress bool) *restorer {
	r := &restorer{fsys: fsys, stderr: stderr, buf: make([]byte, restoreChunk), root: os.Geteuid() == 0,
		links: map[gobtrfs.InodeKey]string{}}
	if progress {
		r.progressDone = make(chan struct{})
	}
	return r
}

func (r *restorer) fail(path string, err error) {
	r.failures = append(r.failures, restoreFailure{path, err})
}

func (r *restorer) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// run restores the whole tree into dest and returns an error summarizing
// every failure, after restoring everything else.
func (r *restorer) run(dest string) error {
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return err
	}
	root, err := r.fsys.OpenFile(".")
	if err != nil {
		return err
	}
	r.startProgress()
	r.restoreDir(root, dest)
	r.stopProgress()
	for _, w := range r.warnings {
		fmt.Fprintf(r.stderr, "gobtrfs restore: warning: %s\n", w)
	}
	if len(r.failures) == 0 {
		return nil
	}
	fmt.Fprintf(r.stderr, "gobtrfs restore: %d failure(s):\n", len(r.failures))
	for _, f := range r.failures {
		fmt.Fprintf(r.stderr, "  %s: %v\n", f.path, f.err)
	}
	return fmt.Errorf("%d of %d entries failed (everything else was restored)", len(r.failures), r.files.Load())
}

// restoreDir restores directory d into dest (created here), its children,
// then its own metadata: a directory's times and mode are set last.
func (r *restorer) restoreDir(d *gobtrfs.File, dest string) {
	defer d.Close()
	r.files.Add(1)
	r.cur.Store(dest)
	if err := os.Mkdir(dest, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		r.fail(dest, err)
		return
	}
	ents, err := d.ReadDir(-1)
	if err != nil {
		r.fail(dest, fmt.Errorf("read directory: %w (restored %d entries read before the error)", err, len(ents)))
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dest, name)
		if !rdSafeName(name) {
			r.fail(p, fmt.Errorf("unsafe name %q in directory: skipped", name))
			continue
		}
		f, err := e.(*gobtrfs.DirEntry).Open()
		if err != nil {
			r.fail(p, err)
			continue
		}
		r.restoreEntry(f, p)
	}
	r.setMeta(d, dest, true)
}

func rdSafeName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

func (r *restorer) restoreEntry(f *gobtrfs.File, p string) {
	st := f.Sys()
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		r.restoreDir(f, p)
		return
	}
	defer f.Close()
	r.files.Add(1)
	r.cur.Store(p)
	key := gobtrfs.InodeKey{Subvol: st.Subvol, Ino: st.Ino}
	if st.Nlink > 1 {
		if first, ok := r.links[key]; ok {
			os.Remove(p)
			if err := os.Link(first, p); err != nil {
				r.fail(p, fmt.Errorf("hard link to %s: %w", first, err))
			}
			return
		}
	}
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		err = r.restoreFile(f, p, st)
	case unix.S_IFLNK:
		err = r.restoreSymlink(f, p)
	case unix.S_IFIFO, unix.S_IFCHR, unix.S_IFBLK, unix.S_IFSOCK:
		os.Remove(p)
		err = unix.Mknod(p, st.Mode&unix.S_IFMT|0o600, int(st.Rdev))
		if err != nil {
			err = fmt.Errorf("mknod: %w", err)
		}
	default:
		err = fmt.Errorf("unknown file type (mode %o)", st.Mode)
	}
	if err != nil {
		r.fail(p, err)
		if _, serr := os.Lstat(p); serr != nil {
			return // nothing was created
		}
	}
	if st.Nlink > 1 {
		r.links[key] = p
	}
	r.setMeta(f, p, false)
}

// restoreFile copies content chunk by chunk, seeking over holes so they stay
// holes; unreadable pieces are left as holes and reported.
func (r *restorer) restoreFile(f *gobtrfs.File, p string, st *gobtrfs.Stat) error {
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	var bad []error
	for off := int64(0); off < st.Size; {
		data, err := f.SeekData(off)
		if errors.Is(err, syscall.ENXIO) {
			break
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("map extents at offset %d: %w", off, err))
			data = off // cannot map: copy linearly and let the reads say what is wrong
		}
		hole, err := f.SeekHole(data)
		if err != nil {
			hole = min(st.Size, data+restoreChunk)
		}
		for pos := data; pos < hole; {
			n := min(int64(len(r.buf)), hole-pos)
			if err := r.copyChunk(f, out, pos, r.buf[:n]); err != nil {
				bad = append(bad, err)
			}
			pos += n
		}
		off = hole
	}
	if err := out.Truncate(st.Size); err != nil {
		bad = append(bad, err)
	}
	if err := out.Close(); err != nil {
		bad = append(bad, err)
	}
	return errors.Join(bad...)
}

// copyChunk copies buf-sized data at pos; on a read error it retries sector
// by sector so that only the damaged sectors are lost.
func (r *restorer) copyChunk(f *gobtrfs.File, out *os.File, pos int64, buf []byte) error {
	n, err := f.ReadAt(buf, pos)
	if err == io.EOF {
		err = nil
	}
	if err == nil {
		if _, err := out.WriteAt(buf[:n], pos); err != nil {
			return err
		}
		r.bytes.Add(int64(n))
		return nil
	}
	ss := int(r.fsys.SectorSize())
	var first error
	lost := 0
	for i := 0; i < len(buf); i += ss {
		piece := buf[i:min(i+ss, len(buf))]
		m, err := f.ReadAt(piece, pos+int64(i))
		if err != nil && err != io.EOF {
			if first == nil {
				first = err
			}
			lost++
			continue
		}
		if _, err := out.WriteAt(piece[:m], pos+int64(i)); err != nil {
			return err
		}
		r.bytes.Add(int64(m))
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%d sector(s) unreadable, left as holes; first: %w", lost, first)
}

func (r *restorer) restoreSymlink(f *gobtrfs.File, p string) error {
	target, err := f.ReadLink()
	if err != nil {
		return err
	}
	os.Remove(p)
	return os.Symlink(target, p)
}

// setMeta applies ownership, xattrs, mode and times in the order that keeps
// each: chown first (it clears setuid and capabilities), xattrs before a mode
// that could forbid writing them, times last.
func (r *restorer) setMeta(f *gobtrfs.File, p string, dir bool) {
	st := f.Sys()
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	if err := os.Lchown(p, int(st.UID), int(st.GID)); err != nil {
		if r.root {
			r.fail(p, fmt.Errorf("lchown %d:%d: %w", st.UID, st.GID, err))
		} else if len(r.warnings) == 0 || !strings.HasPrefix(r.warnings[0], "not root") {
			r.warnings = append([]string{"not root: file ownership not restored"}, r.warnings...)
		}
	}
	xs, err := f.Xattrs()
	if err != nil {
		r.fail(p, err)
	}
	for _, x := range xs {
		if err := unix.Lsetxattr(p, x.Name, x.Value, 0); err != nil {
			if rdBestEffortXattr(x.Name, err) {
				r.warnf("%s: xattr %s not restored: %v", p, x.Name, err)
			} else {
				r.fail(p, fmt.Errorf("setxattr %s: %w", x.Name, err))
			}
		}
	}
	if !isLink {
		if err := unix.Chmod(p, st.Mode&0o7777); err != nil {
			r.fail(p, fmt.Errorf("chmod %o: %w", st.Mode&0o7777, err))
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atime.UnixNano()), unix.NsecToTimespec(st.Mtime.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		r.fail(p, fmt.Errorf("utimensat: %w", err))
	}
}

// rdBestEffortXattr reports xattrs whose namespace the destination may not
// support or allow (security labels, trusted.* without CAP_SYS_ADMIN, btrfs
// properties on another filesystem): a warning rather than a failure.
func rdBestEffortXattr(name string, err error) bool {
	switch {
	case strings.HasPrefix(name, "security."), strings.HasPrefix(name, "trusted."), strings.HasPrefix(name, "btrfs."):
		return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
			errors.Is(err, unix.EINVAL)
	}
	return false
}

func (r *restorer) startProgress() {
	if r.progressDone == nil {
		return
	}
	start := time.Now()
	r.progressWG.Add(1)
	go func() {
		defer r.progressWG.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.progressDone:
				fmt.Fprintf(r.stderr, "\r\033[K")
				return
			case <-t.C:
				b := r.bytes.Load()
				secs := time.Since(start).Seconds()
				cur, _ := r.cur.Load().(string)
				if len(cur) > 50 {
					cur = "..." + cur[len(cur)-47:]
				}
				fmt.Fprintf(r.stderr, "\r\033[K%d files, %.1f MiB (%.1f MiB/s) %s",
					r.files.Load(), float64(b)/(1<<20), float64(b)/(1<<20)/max(secs, 0.001), cur)
			}
		}
	}()
}

func (r *restorer) stopProgress() {
	if r.progressDone == nil {
		return
	}
	close(r.progressDone)
	r.progressWG.Wait()
}
