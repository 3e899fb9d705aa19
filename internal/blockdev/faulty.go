package blockdev

import (
	"errors"
	"fmt"
	"sync"
)

// FaultOp is a kind of device operation a Faulty device counts and fails.
type FaultOp int

const (
	FaultWrite FaultOp = iota
	FaultFlush
	FaultRead
	numFaultOps
)

func (o FaultOp) String() string {
	switch o {
	case FaultWrite:
		return "write"
	case FaultFlush:
		return "flush"
	case FaultRead:
		return "read"
	}
	return fmt.Sprintf("FaultOp(%d)", int(o))
}

// ErrInjected is the cause of every error a Faulty device injects.
var ErrInjected = errors.New("injected I/O error")

// FaultError is an injected failure: which operation, its number among
// the operations of its kind (from 1), and where.
type FaultError struct {
	Op  FaultOp
	N   int
	Off int64 // -1 for a flush
	Len int
}

func (e *FaultError) Error() string {
	if e.Op == FaultFlush {
		return fmt.Sprintf("flush #%d: %v", e.N, ErrInjected)
	}
	return fmt.Sprintf("%s #%d of %d bytes at %d: %v", e.Op, e.N, e.Len, e.Off, ErrInjected)
}

func (e *FaultError) Unwrap() error { return ErrInjected }

// Faulty wraps a Device and fails chosen operations, for tests of every
// error path: the Nth write, flush or read (counted per kind from 1), or
// every one from the Nth on (a device that died). A failed write writes
// nothing and a failed flush makes nothing durable that was not. Safe for
// concurrent use.
type Faulty struct {
	Device
	mu     sync.Mutex
	count  [numFaultOps]int
	failAt [numFaultOps]int  // 0: never
	sticky [numFaultOps]bool // fail every operation from failAt on
	fired  []*FaultError
}

// NewFaulty wraps dev; it fails nothing until FailAt or FailFrom.
func NewFaulty(dev Device) *Faulty { return &Faulty{Device: dev} }

// FailAt makes the nth operation of kind op from now fail (n >= 1), only
// that one. n == 0 disarms op.
func (d *Faulty) FailAt(op FaultOp, n int) { d.arm(op, n, false) }

// FailFrom makes the nth operation of kind op from now and every later one
// fail.
func (d *Faulty) FailFrom(op FaultOp, n int) { d.arm(op, n, true) }

func (d *Faulty) arm(op FaultOp, n int, sticky bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failAt[op], d.sticky[op] = 0, sticky
	if n > 0 {
		d.failAt[op] = d.count[op] + n
	}
}

// Count returns how many operations of kind op were issued so far (failed
// ones included).
func (d *Faulty) Count(op FaultOp) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.count[op]
}

// Injected returns the failures injected so far, in order.
func (d *Faulty) Injected() []*FaultError {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*FaultError(nil), d.fired...)
}

// fault counts one operation and returns the error to inject, if any.
func (d *Faulty) fault(op FaultOp, off int64, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.count[op]++
	at := d.failAt[op]
	if at == 0 || d.count[op] < at || d.count[op] > at && !d.sticky[op] {
		return nil
	}
	e := &FaultError{Op: op, N: d.count[op], Off: off, Len: n}
	d.fired = append(d.fired, e)
	return e
}

func (d *Faulty) ReadAt(p []byte, off int64) (int, error) {
	if err := d.fault(FaultRead, off, len(p)); err != nil {
		return 0, err
	}
	return d.Device.ReadAt(p, off)
}

func (d *Faulty) WriteAt(p []byte, off int64) (int, error) {
	if err := d.fault(FaultWrite, off, len(p)); err != nil {
		return 0, err
	}
	return d.Device.WriteAt(p, off)
}

func (d *Faulty) Flush() error {
	if err := d.fault(FaultFlush, -1, 0); err != nil {
		return err
	}
	return d.Device.Flush()
}

// Unwrap returns the wrapped device (see Underlying).
func (d *Faulty) Unwrap() Device { return d.Device }

// Underlying returns the device beneath test wrappers that inject faults
// (Faulty): what was written, read without injected errors.
func Underlying(dev Device) Device {
	for {
		w, ok := dev.(interface{ Unwrap() Device })
		if !ok {
			return dev
		}
		dev = w.Unwrap()
	}
}

var _ Device = (*Faulty)(nil)
