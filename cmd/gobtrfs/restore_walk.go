package main

// The restore walk: directories depth first from the root, each entry
// checked before it is used (restore_dest.go says how it is created).
//
// Guards against a hostile image, kept here even where the library also
// refuses the damage:
//   - a name that is empty, "." or "..", or holds '/' or NUL is corruption:
//     reported and skipped, never used in a path;
//   - two entries of one name in a directory are corruption: the first is
//     restored, the second reported and skipped;
//   - a directory whose entries do not add up to its size lost entries
//     (btrfs keeps a directory's i_size at twice the sum of its names);
//   - a directory reached again, on the current path (a cycle) or
//     elsewhere (a directory has one parent), keyed by (subvolume, inode),
//     is corruption and not entered;
//   - file data is copied up to the last extent, and i_size beyond
//     restoreSizeLimit is corruption (restore_data.go).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/progress"
)

// restoreChunk is how much file data is read and written at a time, which
// bounds restore's memory whatever the file sizes.
const restoreChunk = 1 << 20

// maxStoredFailures bounds the failures kept for the final report (a
// hostile image can make millions); the rest are counted.
const maxStoredFailures = 1000

// emptySubvolDirIno is the inode number of the placeholder directory shown
// for a subvolume a snapshot did not include (BTRFS_EMPTY_SUBVOL_DIR_OBJECTID):
// every placeholder has it, so it is no identity.
const emptySubvolDirIno = 2

// restorer copies a filesystem tree out of an image. It keeps going after a
// failure and reports them all.
type restorer struct {
	o              restoreOptions
	stdout, stderr io.Writer
	buf            []byte
	root           bool // running as root: ownership and devices are expected to work
	sectorSize     int
	sizeLimit      int64           // largest i_size trusted (restoreSizeLimit)
	snapshotIDs    map[uint64]bool // subvolumes that are snapshots (--no-snapshots)
	open           destOpener
	topDir         int // DESTDIR, open

	// links maps (subvolume, inode) of a multiply linked file to where its
	// first link was restored.
	links map[gobtrfs.InodeKey]linkRef
	// onPath holds the directories from the root to the one being
	// restored; dirsDone every directory restored, with its path.
	onPath, dirsDone map[gobtrfs.InodeKey]string

	failures    []restoreFailure
	nFailures   int
	warnings    []string
	notRootWarn bool
	stats       restoreStats

	files, bytes atomic.Int64 // for the progress line
	cur          atomic.Value // current path, for the progress line
	progressOff  bool
	bar          *progress.Bar // the progress line while it is drawn
	totalBytes   int64         // the image's bytes used: the progress bar's 100%
}

// linkRef is where a hard-linked inode was first restored.
type linkRef struct{ dir, name, path string }

type restoreFailure struct {
	path string
	err  error
}

// restoreStats are counted for the summary line.
type restoreStats struct {
	files, dirs, symlinks, special, hardlinks int
	existing, devices, snapshots, symlinksOff int
	setuid, caps                              int
}

func newRestorer(o restoreOptions, stdout, stderr io.Writer) *restorer {
	return &restorer{o: o, stdout: stdout, stderr: stderr, buf: make([]byte, restoreChunk), root: os.Geteuid() == 0,
		sectorSize: 4096, sizeLimit: restoreSizeLimit(0), progressOff: true, open: destOpener{fallback: o.forceFallback},
		links: map[gobtrfs.InodeKey]linkRef{}, onPath: map[gobtrfs.InodeKey]string{}, dirsDone: map[gobtrfs.InodeKey]string{}}
}

func (r *restorer) fail(path string, err error) {
	r.nFailures++
	if len(r.failures) < maxStoredFailures {
		r.failures = append(r.failures, restoreFailure{path, err})
	}
	if r.o.verbose {
		r.notef("error: %s: %v", path, err)
	}
}

// corrupt records corruption found at path.
func (r *restorer) corrupt(path string, format string, args ...any) {
	r.fail(path, diskio.Corruptf(format, args...))
}

func (r *restorer) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// notef prints a message now (on stderr, clearing the progress line).
func (r *restorer) notef(format string, args ...any) {
	if r.bar != nil {
		r.bar.Printf("gobtrfs restore: "+format+"\n", args...)
		return
	}
	fmt.Fprintf(r.stderr, "gobtrfs restore: "+format+"\n", args...)
}

// listf prints a listing line on stdout (-v, -D).
func (r *restorer) listf(format string, args ...any) {
	fmt.Fprintf(r.stdout, format+"\n", args...)
}

// run restores the tree of root into dest and returns an error summarizing
// every failure, after restoring everything else.
func (r *restorer) run(root rsFile, dest string) error {
	top, created, err := r.openDest(dest)
	if err != nil {
		root.Close()
		return err
	}
	if r.o.dryRun {
		fmt.Fprintln(r.stderr, "gobtrfs restore: dry run: nothing is created")
	}
	r.topDir = top.fd
	r.startProgress()
	r.restoreDir(root, top, "", created || r.o.overwrite)
	if top.fd >= 0 {
		unix.Close(top.fd)
	}
	r.stopProgress()
	return r.report()
}

// openDest opens DESTDIR, creating it (and its parents) if missing; it is
// the one path resolved as given.
func (r *restorer) openDest(dest string) (*destDir, bool, error) {
	top := &destDir{fd: -1, rel: ".", path: strings.TrimRight(dest, "/")}
	if top.path == "" {
		top.path = "/"
	}
	created := false
	if _, err := os.Lstat(dest); errors.Is(err, os.ErrNotExist) {
		if r.o.dryRun {
			return top, true, nil
		}
		if err := os.MkdirAll(dest, 0o700); err != nil {
			return nil, false, err
		}
		created = true
	}
	fd, err := unix.Open(dest, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open destination", Path: dest, Err: err}
	}
	top.fd = fd
	return top, created, nil
}

// report prints warnings, failures and the summary line; it returns an
// error when anything failed.
func (r *restorer) report() error {
	for _, w := range r.warnings {
		fmt.Fprintf(r.stderr, "gobtrfs restore: warning: %s\n", w)
	}
	if r.nFailures > 0 {
		fmt.Fprintf(r.stderr, "gobtrfs restore: %d failure(s):\n", r.nFailures)
		for _, f := range r.failures {
			fmt.Fprintf(r.stderr, "  %s: %s\n", f.path, strings.ReplaceAll(f.err.Error(), "\n", "\n    "))
		}
		if r.nFailures > len(r.failures) {
			fmt.Fprintf(r.stderr, "  ... and %d more\n", r.nFailures-len(r.failures))
		}
	}
	fmt.Fprintf(r.stderr, "gobtrfs restore: %s\n", r.summary())
	if r.nFailures == 0 {
		return nil
	}
	return fmt.Errorf("%d error(s) (everything else was restored)", r.nFailures)
}

func (r *restorer) summary() string {
	s := r.stats
	verb := "restored"
	if r.o.dryRun {
		verb = "dry run: would restore"
	}
	out := fmt.Sprintf("%s %d files (%.1f MiB), %d directories, %d symlinks, %d hard links, %d other",
		verb, s.files, float64(r.bytes.Load())/(1<<20), s.dirs, s.symlinks, s.hardlinks, s.special)
	var skipped []string
	add := func(n int, what string) {
		if n > 0 {
			skipped = append(skipped, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(s.existing, "existing entries kept (-o overwrites)")
	add(s.devices, "device nodes (--devices makes them)")
	add(s.snapshots, "snapshots")
	add(s.symlinksOff, "symlinks (--no-symlinks)")
	if len(skipped) > 0 {
		out += "; skipped " + strings.Join(skipped, ", ")
	}
	if s.setuid+s.caps > 0 {
		out += fmt.Sprintf("; dropped setuid/setgid bits of %d files and %d file capabilities (--keep-setuid keeps them)", s.setuid, s.caps)
	}
	return out + fmt.Sprintf("; %d errors", r.nFailures)
}

// restoreDir restores the entries of directory d into h, then (if setMeta)
// d's own metadata: a directory's times and mode are set last. fsPath is
// d's path from the restore root ("" for the root), for --path-regex.
func (r *restorer) restoreDir(d rsFile, h *destDir, fsPath string, setMeta bool) {
	defer d.Close()
	st := d.Sys()
	key := gobtrfs.InodeKey{Subvol: st.Subvol, Ino: st.Ino}
	r.onPath[key] = h.path
	defer delete(r.onPath, key)
	r.files.Add(1)
	r.cur.Store(h.path)
	ents, err := d.Entries()
	if err != nil {
		r.fail(h.path, fmt.Errorf("read directory (inode %d, subvol %d): %w (restored the %d entries read before the error)",
			st.Ino, st.Subvol, err, len(ents)))
	} else {
		r.checkDirSize(h, st, ents)
	}
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	seen := make(map[string]uint64, len(ents))
	for _, e := range ents {
		r.restoreChild(st, h, fsPath, e, seen)
	}
	if setMeta && h.fd >= 0 && !r.o.dryRun {
		r.metaFD(h.fd, d, st, h.path)
	}
	r.dirsDone[key] = h.path
}

// checkDirSize compares a directory's i_size with its entries: btrfs keeps
// it at twice the sum of the names' lengths (DIR_ITEM and DIR_INDEX each
// count them), so a difference means entries were lost (the library skips
// entries it cannot use) or added.
func (r *restorer) checkDirSize(h *destDir, st *gobtrfs.Stat, ents []rsEntry) {
	if st.Ino == emptySubvolDirIno {
		return
	}
	var sum int64
	for _, e := range ents {
		sum += 2 * int64(len(e.Name()))
	}
	if sum != st.Size {
		r.corrupt(h.path, "directory (inode %d, subvol %d) has size %d but its %d listed entries account for %d: entries are missing or damaged",
			st.Ino, st.Subvol, st.Size, len(ents), sum)
	}
}

// restoreNameError says why name cannot be used in a path, or nil.
func restoreNameError(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case name == "." || name == "..":
		return fmt.Errorf("name %q is reserved", name)
	case strings.ContainsAny(name, "/\x00"):
		return errors.New("name holds '/' or NUL")
	}
	return nil
}

func rdSafeName(n string) bool { return restoreNameError(n) == nil }

// restoreChild restores entry e of directory dir (restored into h).
func (r *restorer) restoreChild(dir *gobtrfs.Stat, h *destDir, fsPath string, e rsEntry, seen map[string]uint64) {
	name := e.Name()
	if err := restoreNameError(name); err != nil {
		r.corrupt(h.path, "directory (inode %d, subvol %d): entry %q: %v: skipped", dir.Ino, dir.Subvol, name, err)
		return
	}
	childFS := fsPath + "/" + name
	if r.o.pathRegex != nil && !r.o.pathRegex.MatchString(childFS) {
		return
	}
	rel, p := h.child(name)
	f, err := e.Open()
	if first, dup := seen[name]; dup {
		this := "cannot be opened"
		if err == nil {
			this = fmt.Sprintf("inode %d", f.Sys().Ino)
			f.Close()
		}
		that := fmt.Sprintf("inode %d", first)
		if first == 0 {
			that = "which could not be opened"
		}
		r.corrupt(h.path, "directory (inode %d, subvol %d): duplicate entry %q (%s): skipped; the first entry of that name (%s) is the one restored",
			dir.Ino, dir.Subvol, name, this, that)
		return
	}
	if err != nil {
		seen[name] = 0
		r.fail(p, err)
		return
	}
	st := f.Sys()
	seen[name] = st.Ino
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		r.enterDir(f, st, e, h, name, rel, p, childFS)
		return
	}
	defer f.Close()
	r.restoreLeaf(f, st, h, name, rel, p)
}

// enterDir restores directory f, entry name of h.
func (r *restorer) enterDir(f rsFile, st *gobtrfs.Stat, e rsEntry, h *destDir, name, rel, p, childFS string) {
	key := gobtrfs.InodeKey{Subvol: st.Subvol, Ino: st.Ino}
	if st.Ino != emptySubvolDirIno {
		if at, ok := r.onPath[key]; ok {
			f.Close()
			r.corrupt(p, "directory cycle: the entry names directory inode %d (subvol %d), which is %s, on the path to it: not entered",
				st.Ino, st.Subvol, at)
			return
		}
		if at, ok := r.dirsDone[key]; ok {
			f.Close()
			r.corrupt(p, "the entry names directory inode %d (subvol %d), already restored as %s (a directory has one parent): not entered",
				st.Ino, st.Subvol, at)
			return
		}
	}
	if id, ok := e.Subvolume(); ok && !r.o.snapshots && r.snapshotIDs[id] {
		f.Close()
		r.stats.snapshots++
		r.notef("skipping snapshot %s (subvolume %d)", p, id)
		return
	}
	proceed, exists := r.clearTarget(h, name, p, true)
	if !proceed {
		f.Close()
		return
	}
	r.listEntry(p)
	child := &destDir{fd: -1, rel: rel, path: p}
	if h.fd >= 0 && (exists || !r.o.dryRun) {
		if !exists {
			perm := uint32(0o700)
			if !r.o.metadata {
				perm = 0o755
			}
			if err := unix.Mkdirat(h.fd, name, perm); err != nil {
				f.Close()
				r.fail(p, fmt.Errorf("mkdir: %w", err))
				return
			}
		}
		fd, err := r.open.openDir(h.fd, name)
		if err != nil {
			f.Close()
			r.fail(p, fmt.Errorf("open restored directory: %w", err))
			return
		}
		child.fd = fd
		defer unix.Close(fd)
	}
	r.stats.dirs++
	r.restoreDir(f, child, childFS, !exists || r.o.overwrite)
}

// listEntry lists p on stdout with -v ("Restoring", as btrfs restore) or
// -D.
func (r *restorer) listEntry(p string) {
	switch {
	case r.o.dryRun:
		r.listf("%s", p)
	case r.o.verbose:
		r.listf("Restoring %s", p)
	}
}

// clearTarget decides what happens to an existing entry named name in h:
// proceed reports whether to restore over it (after removing it with -o);
// exists that an existing directory will be merged into, as btrfs restore
// does. Nothing existing is ever followed.
func (r *restorer) clearTarget(h *destDir, name, p string, wantDir bool) (proceed, exists bool) {
	if h.fd < 0 {
		return true, false // dry run inside a directory that is not on disk
	}
	st, ok, err := lstatAt(h.fd, name)
	if err != nil {
		r.fail(p, fmt.Errorf("look at the existing entry: %w", err))
		return false, false
	}
	if !ok {
		return true, false
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if wantDir && isDir {
		return true, true
	}
	if !r.o.overwrite {
		r.stats.existing++
		if r.stats.existing == 1 || r.o.verbose {
			r.notef("skipping existing %s (use -o to overwrite)", p)
		}
		return false, false
	}
	if isDir {
		r.fail(p, errors.New("exists as a directory, which -o does not replace: remove it to restore this entry"))
		return false, false
	}
	if r.o.dryRun {
		return true, false
	}
	if err := unix.Unlinkat(h.fd, name, 0); err != nil {
		r.fail(p, fmt.Errorf("remove the existing entry (-o): %w", err))
		return false, false
	}
	return true, false
}

// restoreLeaf restores a non-directory inode as entry name of h.
func (r *restorer) restoreLeaf(f rsFile, st *gobtrfs.Stat, h *destDir, name, rel, p string) {
	r.files.Add(1)
	r.cur.Store(p)
	typ := st.Mode & unix.S_IFMT
	switch typ {
	case unix.S_IFLNK:
		if !r.o.symlinks {
			r.stats.symlinksOff++
			return
		}
	case unix.S_IFCHR, unix.S_IFBLK:
		if !r.o.devices {
			r.stats.devices++
			kind := "character"
			if typ == unix.S_IFBLK {
				kind = "block"
			}
			r.notef("skipping device node %s (%s device %d:%d): device nodes from an image are made only with --devices",
				p, kind, st.Major(), st.Minor())
			return
		}
	case unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK:
	default:
		r.corrupt(p, "inode %d (subvol %d): unknown file type (mode %o): skipped", st.Ino, st.Subvol, st.Mode)
		return
	}
	if proceed, _ := r.clearTarget(h, name, p, false); !proceed {
		return
	}
	key := gobtrfs.InodeKey{Subvol: st.Subvol, Ino: st.Ino}
	if st.Nlink > 1 {
		if first, ok := r.links[key]; ok {
			r.listEntry(p)
			r.stats.hardlinks++
			if !r.o.dryRun && h.fd >= 0 {
				r.hardlink(first, h, name, p)
			}
			return
		}
	}
	r.listEntry(p)
	if r.o.dryRun || h.fd < 0 {
		r.count(typ)
		r.bytes.Add(max(st.Size, 0))
		if st.Nlink > 1 {
			r.links[key] = linkRef{dir: h.rel, name: name, path: p}
		}
		return
	}
	var err error
	switch typ {
	case unix.S_IFREG:
		err = r.restoreFile(f, st, h, name, p)
	case unix.S_IFLNK:
		err = r.restoreSymlink(f, st, h, name, p)
	default:
		err = r.restoreNode(f, st, h, name, p)
	}
	if err != nil {
		r.fail(p, err)
		if _, ok, _ := lstatAt(h.fd, name); !ok {
			return // nothing was created
		}
	}
	r.count(typ)
	if st.Nlink > 1 {
		r.links[key] = linkRef{dir: h.rel, name: name, path: p}
	}
}

func (r *restorer) count(typ uint32) {
	switch typ {
	case unix.S_IFREG:
		r.stats.files++
	case unix.S_IFLNK:
		r.stats.symlinks++
	default:
		r.stats.special++
	}
}

// hardlink links name in h to the first restored link of the inode.
func (r *restorer) hardlink(first linkRef, h *destDir, name, p string) {
	dirfd := h.fd
	if first.dir != h.rel {
		fd, err := r.open.openDir(r.topDir, first.dir)
		if err != nil {
			r.fail(p, fmt.Errorf("hard link to %s: open its directory: %w", first.path, err))
			return
		}
		defer unix.Close(fd)
		dirfd = fd
	}
	if err := unix.Linkat(dirfd, first.name, h.fd, name, 0); err != nil {
		r.fail(p, fmt.Errorf("hard link to %s: %w", first.path, err))
	}
}
