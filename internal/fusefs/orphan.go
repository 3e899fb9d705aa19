package fusefs

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// orphanDirName is the directory, in each subvolume's root, holding the
// hidden names of open files whose last visible name was removed (see
// doc.go). It is hidden from lookup and readdir.
const orphanDirName = ".gobtrfs-orphans"

// hidden reports whether name in dir is the orphan directory.
func (r *rwState) hidden(dir ondisk.InodeRef, name string) bool {
	return dir.Ino == fsops.RootDirIno && name == orphanDirName
}

// opened counts an open of id (a regular file or a directory).
func (r *rwState) opened(id ondisk.InodeRef, isDir bool) {
	r.mu.Lock()
	st := r.open[id]
	if st == nil {
		st = &openState{isDir: isDir}
		r.open[id] = st
	}
	st.opens++
	r.mu.Unlock()
}

// openExisting counts an open of id unless a rename or unlink removed it
// between the kernel's lookup and this open (then ENOENT, as if the open
// had come later). Under nsMu, so a removal after it sees the file open.
func (r *rwState) openExisting(id ondisk.InodeRef) error {
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	x, err := r.ops.Stat(id)
	if err != nil {
		return err
	}
	r.opened(id, x.Mode&0o170000 == 0o040000)
	return nil
}

// released counts a release of id. The last one writes its data back
// (without the writeback cache), or,
// for a file with no visible name left, removes its hidden name (and with
// it the inode).
func (r *rwState) released(id ondisk.InodeRef) error {
	r.mu.Lock()
	st := r.open[id]
	if st == nil {
		r.mu.Unlock()
		return nil
	}
	if st.opens--; st.opens > 0 {
		r.mu.Unlock()
		return nil
	}
	orphan := st.orphan
	if st.staleCtime {
		st.staleCtime = false
		defer r.m.dropKernelInode(id) // ctimestale.go
	}
	r.mu.Unlock()

	var err error
	if orphan != "" {
		r.nsMu.Lock()
		// An open (openExisting, under nsMu) may have come between the
		// count above and nsMu: then that open's release removes it.
		r.mu.Lock()
		reopened := st.opens > 0
		r.mu.Unlock()
		if reopened {
			r.nsMu.Unlock()
			return nil
		}
		// linkat may have given it a visible name since: then its data stays
		if x, serr := r.ops.Stat(id); serr == nil && x.NLink > 1 && !st.isDir {
			r.wbMu.Lock()
			err = r.flushInodeLocked(id)
			r.wbMu.Unlock()
		} else {
			r.cache.Drop(id)
		}
		if err == nil {
			err = r.removeHidden(id.Root, orphan, st.isDir)
		}
		r.nsMu.Unlock()
	} else if !st.isDir && !r.kernelTimes {
		// The buffered writes' mtime lives in st: write them back now.
		// In the writeback cache mode the kernel keeps the times, and
		// the data waits for the flusher like any other (a close does
		// not write back on the kernel's btrfs either).
		r.wbMu.Lock()
		err = r.flushInodeLocked(id)
		r.wbMu.Unlock()
	}
	r.mu.Lock()
	// An unlink during the write back above may have hidden it: then its
	// hidden name goes now, as that of a release of a hidden file.
	again := err == nil && orphan == "" && st.orphan != "" && st.opens == 0
	if again {
		st.opens++ // released counts it down again
	} else if r.open[id] == st && st.opens == 0 {
		delete(r.open, id)
	}
	r.mu.Unlock()
	if again {
		return r.released(id)
	}
	return err
}

// orphanDir returns subvolume subvol's orphan directory, making it if
// needed. Caller holds nsMu.
func (r *rwState) orphanDir(subvol ondisk.ObjectID) (ondisk.InodeRef, error) {
	r.mu.Lock()
	id, ok := r.orphans[subvol]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	root := ondisk.InodeRef{Root: subvol, Ino: fsops.RootDirIno}
	f, _, err := r.ops.Lookup(root, orphanDirName)
	if isGone(err) {
		f, err = r.ops.Mkdir(root, orphanDirName, 0o700, 0, 0)
	}
	if err != nil {
		return ondisk.InodeRef{}, fmt.Errorf("orphan directory of subvolume %d: %w", subvol, err)
	}
	id = f
	r.mu.Lock()
	r.orphans[subvol] = id
	r.mu.Unlock()
	return id, nil
}

// hide gives open file id a hidden name. Caller holds nsMu.
func (r *rwState) hide(id ondisk.InodeRef, st *openState) error {
	od, err := r.orphanDir(id.Root)
	if err != nil {
		return err
	}
	name := strconv.FormatUint(uint64(id.Ino), 10)
	if err := r.ops.Link(id, od, name); err != nil {
		return fmt.Errorf("hide open %v: %w", id, err)
	}
	r.mu.Lock()
	st.orphan = name
	r.mu.Unlock()
	return nil
}

// removeHidden removes a hidden name. Caller holds nsMu.
func (r *rwState) removeHidden(subvol ondisk.ObjectID, name string, isDir bool) error {
	od, err := r.orphanDir(subvol)
	if err != nil {
		return err
	}
	if isDir {
		return r.ops.Rmdir(od, name)
	}
	return r.ops.Unlink(od, name)
}

// prepareRemove runs before name in dir loses its link: unlink and rename
// over a file (wantDir false), rmdir and rename over a directory (wantDir
// true). An open regular file about to lose its last name gets a hidden
// one; an open empty directory is moved to the orphan directory (gone:
// the name is already free). It also reports whether the inode's buffered
// data dies with the name. Caller holds nsMu.
func (r *rwState) prepareRemove(dir ondisk.InodeRef, name string, wantDir bool) (victim ondisk.InodeRef, dies, gone bool, err error) {
	f, x, err := r.ops.Lookup(dir, name)
	if err != nil {
		return ondisk.InodeRef{}, false, false, nil // the operation itself reports it
	}
	id := f
	isDir := x.Mode&0o170000 == 0o040000
	if isDir != wantDir || id.Root != dir.Root {
		return id, false, false, nil // refused below, or a subvolume
	}
	r.mu.Lock()
	st := r.open[id]
	r.mu.Unlock()
	if isDir {
		if st == nil || st.orphan != "" {
			return id, false, false, nil
		}
		es, err := r.ops.ReadDir(f)
		if err != nil {
			return id, false, false, err
		}
		if len(es) > 0 {
			return id, false, false, fmt.Errorf("remove %q in %v: %w", name, dir, syscall.ENOTEMPTY)
		}
		if err := r.hideDir(dir, name, id, st); err != nil {
			return id, false, false, err
		}
		return id, false, true, nil
	}
	if x.Mode&0o170000 != 0o100000 || x.NLink > 1 {
		return id, false, false, nil
	}
	if st == nil {
		return id, true, false, nil
	}
	if st.orphan == "" {
		if err := r.hide(id, st); err != nil {
			return id, false, false, err
		}
	}
	return id, false, false, nil
}

// hideDir moves open empty directory id (name in dir) to the orphan
// directory. Caller holds nsMu.
func (r *rwState) hideDir(dir ondisk.InodeRef, name string, id ondisk.InodeRef, st *openState) error {
	od, err := r.orphanDir(id.Root)
	if err != nil {
		return err
	}
	hidden := "d" + strconv.FormatUint(uint64(id.Ino), 10)
	if err := r.ops.Rename(dir, name, od, hidden, fsops.RenameNoReplace); err != nil {
		return fmt.Errorf("hide open directory %v: %w", id, err)
	}
	r.mu.Lock()
	st.orphan = hidden
	r.mu.Unlock()
	return nil
}

// cleanOrphans removes what a crash left in subvol's orphan directory,
// and the directory.
func (r *rwState) cleanOrphans(subvol ondisk.ObjectID) error {
	root := ondisk.InodeRef{Root: subvol, Ino: fsops.RootDirIno}
	f, _, err := r.ops.Lookup(root, orphanDirName)
	if isGone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("orphan directory of subvolume %d: %w", subvol, err)
	}
	es, err := r.ops.ReadDir(f)
	if err != nil {
		return fmt.Errorf("orphan directory of subvolume %d: %w", subvol, err)
	}
	for _, e := range es {
		rm := r.ops.Unlink
		if modeOfFT(e.Type, e.IsSubvol()) == syscall.S_IFDIR {
			rm = r.ops.Rmdir
		}
		if err := rm(f, e.Name); err != nil {
			return fmt.Errorf("orphan %q of subvolume %d: %w", e.Name, subvol, err)
		}
	}
	if err := r.ops.Rmdir(root, orphanDirName); err != nil {
		return fmt.Errorf("orphan directory of subvolume %d: %w", subvol, err)
	}
	r.mu.Lock()
	delete(r.orphans, subvol)
	r.mu.Unlock()
	return nil
}

// dropAllOrphans removes every orphan directory this mount made.
func (r *rwState) dropAllOrphans() error {
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	r.mu.Lock()
	subs := make([]ondisk.ObjectID, 0, len(r.orphans))
	for s := range r.orphans {
		subs = append(subs, s)
	}
	for id, st := range r.open {
		if st.orphan != "" {
			r.cache.Drop(id)
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, s := range subs {
		errs = append(errs, r.cleanOrphans(s))
	}
	return errors.Join(errs...)
}
