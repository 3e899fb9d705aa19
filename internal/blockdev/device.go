// Package blockdev is the device under the filesystem: a file, memory, a
// recording device for crash tests, or a faulty one that fails chosen
// writes, flushes and reads for tests of error paths.
package blockdev

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// Device is random-access storage with an explicit durability barrier.
type Device interface {
	io.ReaderAt
	io.WriterAt
	// Flush makes every completed write durable.
	Flush() error
	// Size is the device size in bytes.
	Size() int64
	Close() error
}

// File is a Device backed by an os.File.
type File struct {
	f        *os.File
	size     int64
	readOnly bool
	inUse    Holder
	// backing is the backing file of a loop device opened as the image,
	// locked as the image itself would be: a writer through /dev/loopN and
	// one through the file exclude each other.
	backing *os.File
}

// OpenFile opens path as a device. A read-write open takes the image's
// exclusive lock (one writer per image; a second gets a *LockedError,
// errors.Is ErrLocked); a read-only open only looks whether a writer holds
// it (InUse).
func OpenFile(path string, readOnly bool) (*File, error) {
	f, err := os.OpenFile(path, openFlags(path, readOnly), 0)
	if err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return nil, &LockedError{Path: path, Holder: Holder{What: "the kernel or another program (block device busy)"}}
		}
		return nil, err
	}
	mode := lockExclusive
	if readOnly {
		mode = lockProbe
	}
	holder, err := lock(f, path, mode)
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && !readOnly {
		// the kernel may have the file mounted through a loop device, which
		// takes no flock
		if loop := loopBacking(path); loop != "" {
			f.Close()
			return nil, &LockedError{Path: path, Holder: Holder{What: "loop device " + loop + " (detach it first: losetup -d " + loop + ")"}}
		}
	}
	var backing *os.File
	if bf := loopBackingFile(path); bf != "" {
		if backing, err = os.Open(bf); err == nil {
			h, err := lock(backing, bf, mode)
			if err != nil {
				backing.Close()
				f.Close()
				return nil, fmt.Errorf("%s (loop device of %s): %w", path, bf, err)
			}
			if h.Write && !holder.Write {
				holder = h
			}
		}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := st.Size()
	if st.Mode()&os.ModeDevice != 0 {
		if n, err := f.Seek(0, io.SeekEnd); err == nil {
			size = n
		}
	}
	return &File{f: f, size: size, readOnly: readOnly, inUse: holder, backing: backing}, nil
}

// InUse reports the writer that held the image when it was opened
// read-only (what is read may then be stale); ok is false when none did.
func (d *File) InUse() (h Holder, ok bool) { return d.inUse, d.inUse.Write }

// ReadAt reads from the file; reads past the end return io.ErrUnexpectedEOF-style errors.
func (d *File) ReadAt(p []byte, off int64) (int, error) { return d.f.ReadAt(p, off) }

// WriteAt writes to the file.
func (d *File) WriteAt(p []byte, off int64) (int, error) {
	if d.readOnly {
		return 0, fmt.Errorf("write at %d: device is read-only", off)
	}
	n, err := d.f.WriteAt(p, off)
	if end := off + int64(n); end > d.size {
		d.size = end
	}
	return n, err
}

// Flush fsyncs the file.
func (d *File) Flush() error {
	if d.readOnly {
		return nil
	}
	return d.f.Sync()
}

// Size returns the device size.
func (d *File) Size() int64 { return d.size }

// Close closes the file (and drops its lock).
func (d *File) Close() error {
	if d.backing != nil {
		d.backing.Close()
	}
	return d.f.Close()
}

// Fd exposes the descriptor (for locking).
func (d *File) Fd() uintptr { return d.f.Fd() }

// ReaderAt adapts a read-only io.ReaderAt of known size to a Device.
type ReaderAt struct {
	R io.ReaderAt
	N int64
}

func (d *ReaderAt) ReadAt(p []byte, off int64) (int, error) { return d.R.ReadAt(p, off) }
func (d *ReaderAt) WriteAt(p []byte, off int64) (int, error) {
	return 0, fmt.Errorf("write at %d: device is read-only", off)
}
func (d *ReaderAt) Flush() error { return nil }
func (d *ReaderAt) Size() int64  { return d.N }
func (d *ReaderAt) Close() error { return nil }

// Memory is an in-memory Device that grows on write.
type Memory struct {
	mu   sync.RWMutex
	data []byte
}

// NewMemory returns a zero-filled memory device of size bytes.
func NewMemory(size int64) *Memory { return &Memory{data: make([]byte, size)} }

func (m *Memory) ReadAt(p []byte, off int64) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off < 0 || off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *Memory) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(m.data)) {
		m.data = append(m.data, make([]byte, end-int64(len(m.data)))...)
	}
	return copy(m.data[off:], p), nil
}

func (m *Memory) Flush() error { return nil }
func (m *Memory) Size() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return int64(len(m.data))
}
func (m *Memory) Close() error { return nil }

// Bytes returns a copy of the contents.
func (m *Memory) Bytes() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]byte(nil), m.data...)
}
