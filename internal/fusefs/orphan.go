package fusefs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Open files that lose their last name (and O_TMPFILEs) are orphans of the
// engine (fsops/orphan.go): nlink 0 and an ORPHAN_ITEM, as the kernel keeps
// them, so that after a crash the next read-write mount, the kernel's or
// ours, deletes them. inUse tells the engine which inodes are open; the
// last release deletes an orphan.

// legacyOrphanDir is the directory, in a subvolume's root, where earlier
// versions gave such files hidden names; a crash could leave it behind,
// and a read-write mount removes it. It stays hidden from lookup and
// readdir.
const legacyOrphanDir = ".gobtrfs-orphans"

// hidden reports whether name in dir is the legacy orphan directory.
func (r *rwState) hidden(dir ondisk.InodeRef, name string) bool {
	return dir.Ino == fsops.RootDirIno && name == legacyOrphanDir
}

// inUse is the engine's question (fsops.FS.SetInUse) when id loses its
// last link: whether it is open. An open one becomes an orphan, deleted at
// its last release. Called with the engine's lock held: it takes only mu.
func (r *rwState) inUse(id ondisk.InodeRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.open[id]
	if st == nil { // (opens 0: its last release is under way, and deletes it)
		return false
	}
	st.orphan = true
	return true
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
	selfTimes := st.selfTimes
	if st.staleCtime || st.lostWrite || st.selfTimes {
		st.staleCtime, st.lostWrite, st.selfTimes = false, false, false
		defer r.m.dropKernelInode(id) // ctimestale.go, wbfail.go
	}
	r.mu.Unlock()

	var err error
	if orphan {
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
		// linkat may have given it a name since: then its data stays
		if x, serr := r.ops.Stat(id); serr == nil && x.NLink > 0 && !st.isDir {
			r.wbMu.Lock()
			err = r.flushInodeLocked(id)
			r.wbMu.Unlock()
		} else {
			r.cache.Drop(id)
			r.trimMeta() // metarsv.go
		}
		if err == nil {
			err = r.ops.DropOrphan(id)
			if err == nil {
				r.mu.Lock()
				st.orphan = false
				r.mu.Unlock()
			}
		}
		r.nsMu.Unlock()
	} else if !st.isDir && (!r.kernelTimes || selfTimes) {
		// The buffered writes' mtime lives in st: write them back now.
		// In the writeback cache mode the kernel keeps the times, and
		// the data waits for the flusher like any other (a close does
		// not write back on the kernel's btrfs either).
		r.wbMu.Lock()
		err = r.flushInodeLocked(id)
		r.wbMu.Unlock()
	}
	r.mu.Lock()
	// An unlink during the write back above may have made it an orphan:
	// then it goes now, as at the release of an orphan.
	again := err == nil && !orphan && st.orphan && st.opens == 0
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

// prepareRemove runs before name in dir loses its link: unlink and rename
// over a file (wantDir false), rmdir and rename over a directory (wantDir
// true). It reports whether the inode's buffered data dies with the name:
// a regular file's last name goes and it is not open (an open one becomes
// an orphan, see inUse). Caller holds nsMu.
func (r *rwState) prepareRemove(dir ondisk.InodeRef, name string, wantDir bool) (victim ondisk.InodeRef, dies bool) {
	id, x, err := r.ops.Lookup(dir, name)
	if err != nil {
		return ondisk.InodeRef{}, false // the operation itself reports it
	}
	isDir := x.Mode&0o170000 == 0o040000
	if isDir || isDir != wantDir || id.Root != dir.Root || x.Mode&0o170000 != 0o100000 || x.NLink > 1 {
		return id, false
	}
	r.mu.Lock()
	st := r.open[id]
	r.mu.Unlock()
	return id, st == nil
}

// cleanOrphans deletes what a crash left: the orphans of every subvolume
// (ORPHAN_ITEMs, the kernel's and ours) and the legacy orphan directory of
// the mounted one.
func (r *rwState) cleanOrphans(subvol ondisk.ObjectID) error {
	if n, err := r.ops.CleanOrphans(); err != nil {
		return err
	} else if n > 0 {
		r.m.logf("deleted %d orphan inode(s) a crash left (open files whose last name was removed)", n)
	}
	root := ondisk.InodeRef{Root: subvol, Ino: fsops.RootDirIno}
	f, _, err := r.ops.Lookup(root, legacyOrphanDir)
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
	if err := r.ops.Rmdir(root, legacyOrphanDir); err != nil {
		return fmt.Errorf("orphan directory of subvolume %d: %w", subvol, err)
	}
	return nil
}

// dropAllOrphans deletes the orphans still open when the mount closes.
func (r *rwState) dropAllOrphans() error {
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	r.mu.Lock()
	var ids []ondisk.InodeRef
	for id, st := range r.open {
		if st.orphan {
			r.cache.Drop(id)
			r.trimMeta() // metarsv.go
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, r.ops.DropOrphan(id))
	}
	return errors.Join(errs...)
}
