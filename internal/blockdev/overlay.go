package blockdev

import (
	"errors"
	"io"
	"sync"
)

// overlayPage is the unit an Overlay copies on write.
const overlayPage = 4096

// Overlay is a copy-on-write Device over a base device: writes are kept in
// memory, reads see them over the base, and the base is never written. A
// read-only open uses it to replay a log tree without touching the image.
// Close closes the base.
type Overlay struct {
	base  Device
	mu    sync.RWMutex
	pages map[int64][]byte // page number -> contents
}

// NewOverlay returns an overlay over base.
func NewOverlay(base Device) *Overlay {
	return &Overlay{base: base, pages: map[int64][]byte{}}
}

// Base is the device under the overlay.
func (o *Overlay) Base() Device { return o.base }

// Changed is the number of bytes the overlay holds (whole pages).
func (o *Overlay) Changed() int64 {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return int64(len(o.pages)) * overlayPage
}

// ReadAt reads the base and lays the written pages over it.
func (o *Overlay) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("overlay: negative offset")
	}
	n, err := o.base.ReadAt(p, off)
	o.mu.RLock()
	defer o.mu.RUnlock()
	if len(o.pages) == 0 {
		return n, err
	}
	end := off + int64(len(p))
	if size := o.base.Size(); size >= 0 && end > size {
		end = size
	}
	for pg := off / overlayPage; pg*overlayPage < end; pg++ {
		b, ok := o.pages[pg]
		if !ok {
			continue
		}
		lo, hi := max(off, pg*overlayPage), min(end, (pg+1)*overlayPage)
		copy(p[lo-off:hi-off], b[lo-pg*overlayPage:hi-pg*overlayPage])
		if int(hi-off) > n {
			n = int(hi - off)
		}
	}
	if n == len(p) {
		err = nil
	}
	return n, err
}

// WriteAt keeps p in memory.
func (o *Overlay) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("overlay: negative offset")
	}
	if size := o.base.Size(); size >= 0 && off+int64(len(p)) > size {
		return 0, io.ErrShortWrite
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	end := off + int64(len(p))
	for pg := off / overlayPage; pg*overlayPage < end; pg++ {
		b, ok := o.pages[pg]
		lo, hi := max(off, pg*overlayPage), min(end, (pg+1)*overlayPage)
		if !ok {
			b = make([]byte, overlayPage)
			if lo != pg*overlayPage || hi != (pg+1)*overlayPage {
				if _, err := o.base.ReadAt(b, pg*overlayPage); err != nil && !errors.Is(err, io.EOF) {
					return 0, err
				}
			}
			o.pages[pg] = b
		}
		copy(b[lo-pg*overlayPage:hi-pg*overlayPage], p[lo-off:hi-off])
	}
	return len(p), nil
}

// Flush does nothing: the overlay is memory.
func (o *Overlay) Flush() error { return nil }

// Size is the base's size.
func (o *Overlay) Size() int64 { return o.base.Size() }

// Close drops the pages and closes the base.
func (o *Overlay) Close() error {
	o.mu.Lock()
	o.pages = nil
	o.mu.Unlock()
	return o.base.Close()
}

// EachPage calls fn with every page written to the overlay, in no
// particular order (to copy the changes elsewhere). fn must not keep b.
func (o *Overlay) EachPage(fn func(off int64, b []byte)) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for pg, b := range o.pages {
		fn(pg*overlayPage, b)
	}
}
