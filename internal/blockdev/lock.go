package blockdev

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked is the error (errors.Is) of an open that another writer, or a
// read-only mount that keeps writers out, already holds.
var ErrLocked = errors.New("image is in use")

// LockedError says who holds the image, where that is known.
type LockedError struct {
	Path   string
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s: in use by %s", e.Path, e.Holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// lockMode is how an open takes the image's lock (flock on the file or the
// block device node).
type lockMode int

const (
	// lockExclusive: one writer per image; every read-write open.
	lockExclusive lockMode = iota
	// lockProbe: readers look whether a writer holds the image (to warn that
	// what they read may be stale) and keep no lock.
	lockProbe
)

// lock takes (or probes) the lock on f, which was opened from path.
// A probe that finds a writer returns the holder and no error.
func lock(f *os.File, path string, mode lockMode) (Holder, error) {
	switch mode {
	case lockExclusive:
		err := flockNB(f, syscall.LOCK_EX)
		// A holder /proc/locks no longer shows has just let go (it exited
		// between our try and the lookup): try again before saying
		// "holder unknown".
		for try := 0; try < 3 && errors.Is(err, syscall.EWOULDBLOCK); try++ {
			h := findHolder(f, path)
			if h.Known() {
				return Holder{}, &LockedError{Path: path, Holder: h}
			}
			time.Sleep(time.Duration(try+1) * 10 * time.Millisecond)
			err = flockNB(f, syscall.LOCK_EX)
		}
		if err != nil {
			return Holder{}, lockErr(f, path, err)
		}
	case lockProbe:
		if err := flockNB(f, syscall.LOCK_SH); err != nil {
			if errors.Is(err, syscall.EWOULDBLOCK) {
				h := findHolder(f, path)
				h.Write = true // only an exclusive lock blocks a shared one
				return h, nil
			}
			return Holder{}, nil // no locking here (e.g. NFS): nothing to say
		}
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return Holder{}, nil
}

func flockNB(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

func lockErr(f *os.File, path string, err error) error {
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return &LockedError{Path: path, Holder: findHolder(f, path)}
	}
	return fmt.Errorf("lock %s: %w", path, err)
}

// LockShared holds a shared lock on path until the returned file is closed:
// a read-only mount keeps writers out while it is mounted. A writer holding
// the image gives a *LockedError.
func LockShared(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := flockNB(f, syscall.LOCK_SH); err != nil {
		err = lockErr(f, path, err)
		f.Close()
		return nil, err
	}
	return f, nil
}

// WaitUnlocked waits up to max for no other process to hold path's lock,
// calling say once (with the holder) if it has to wait. It returns nil when
// the image is free (or max passed: the open that follows reports the
// holder) and an error only when path cannot be opened at all.
func WaitUnlocked(path string, max time.Duration, say func(Holder)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	deadline := time.Now().Add(max)
	said := false
	for {
		err := flockNB(f, syscall.LOCK_EX)
		if err == nil {
			return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return nil
		}
		if !said && say != nil {
			say(findHolder(f, path))
			said = true
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openFlags adds O_EXCL for a block device opened for writing: Linux then
// refuses it while the kernel has it mounted or another program has it
// open exclusively.
func openFlags(path string, readOnly bool) int {
	flag := os.O_RDWR
	if readOnly {
		return os.O_RDONLY
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
		flag |= os.O_EXCL
	}
	return flag
}

// Probe reports whether a writer holds path's lock now (and who), for
// readers that open the image themselves.
func Probe(path string) (Holder, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Holder{}, false
	}
	defer f.Close()
	h, _ := lock(f, path, lockProbe)
	return h, h.Write
}

// InUseWarning is what a reader of an image that a writer holds is told.
func InUseWarning(path string, h Holder) string {
	return fmt.Sprintf("%s is open read-write by %s: what is read may be stale or inconsistent", path, h)
}
