package blockdev

import (
	"fmt"
	"io"
	"math/rand"
	"sync"
)

// Op is one operation seen by a Recording device: a write (Data at Off) or a
// flush (Flush true).
type Op struct {
	Flush bool
	Off   int64
	Data  []byte
}

// Recording is a memory device for crash tests. It keeps its initial
// contents and every write and flush in order, so that the device as a
// crash would have left it can be rebuilt: the state at any prefix of the
// operations, and torn variants where writes issued after the last flush
// reached the media only in part. Safe for concurrent use.
type Recording struct {
	mu   sync.Mutex
	base []byte
	cur  *Memory
	ops  []Op
}

// NewRecording returns a recording device whose initial contents are a copy
// of initial.
func NewRecording(initial []byte) *Recording {
	return &Recording{base: append([]byte(nil), initial...), cur: &Memory{data: append([]byte(nil), initial...)}}
}

// ReadAt reads the current contents (every write so far applied).
func (r *Recording) ReadAt(p []byte, off int64) (int, error) { return r.cur.ReadAt(p, off) }

// WriteAt applies the write and records it.
func (r *Recording) WriteAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(r.base)) {
		return 0, fmt.Errorf("write %d bytes at %d: beyond device end %d", len(p), off, len(r.base))
	}
	r.ops = append(r.ops, Op{Off: off, Data: append([]byte(nil), p...)})
	return r.cur.WriteAt(p, off)
}

// Flush records a durability barrier.
func (r *Recording) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, Op{Flush: true})
	return nil
}

// Size is the device size (fixed at creation).
func (r *Recording) Size() int64 { return int64(len(r.base)) }

// Close does nothing.
func (r *Recording) Close() error { return nil }

// Ops returns the operations recorded so far (shared; do not modify).
func (r *Recording) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ops[:len(r.ops):len(r.ops)]
}

// Flushes returns the index in Ops of every flush, in order.
func (r *Recording) Flushes() []int {
	var out []int
	for i, op := range r.Ops() {
		if op.Flush {
			out = append(out, i)
		}
	}
	return out
}

// StateAt returns the device contents after the first n operations.
func (r *Recording) StateAt(n int) *Memory {
	ops := r.Ops()
	m := &Memory{data: append([]byte(nil), r.base...)}
	for _, op := range ops[:n] {
		if !op.Flush {
			copy(m.data[op.Off:], op.Data)
		}
	}
	return m
}

// TornAt returns the contents after the first n operations (n normally just
// past a flush) plus a random part of the writes issued after them and
// before the next flush: each such write is dropped, applied whole, or
// applied for a prefix of whole atomic-sized units (a disk writes a sector
// atomically, never less). The same rng sequence gives the same result.
func (r *Recording) TornAt(n int, rng *rand.Rand, atomic int) *Memory {
	ops := r.Ops()
	m := r.StateAt(n)
	for _, op := range ops[n:] {
		if op.Flush {
			break
		}
		switch rng.Intn(3) {
		case 0: // lost
		case 1:
			copy(m.data[op.Off:], op.Data)
		case 2:
			units := (len(op.Data) + atomic - 1) / atomic
			keep := rng.Intn(units+1) * atomic
			copy(m.data[op.Off:], op.Data[:min(keep, len(op.Data))])
		}
	}
	return m
}

// WriteTo writes a memory device's contents to w (to hand a crash state to
// an external checker).
func (m *Memory) WriteTo(w io.Writer) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := w.Write(m.data)
	return int64(n), err
}
