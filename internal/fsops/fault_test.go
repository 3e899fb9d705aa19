package fsops_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	. "github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// tree is what a test expects in the top directory: "name" -> contents,
// "name/" for a directory (its files as "name/file").
type tree map[string][]byte

// faultStep is one operation of the faulted workload. When it fails, the
// file it creates (if any) may exist, empty.
type faultStep struct {
	run     func(f *FS) error
	creates string
}

// faultWorkload changes the filesystem of faultBase: a directory with a
// file, a new incompressible file, an overwrite and a delete.
func faultWorkload(r *rand.Rand) (steps []faultStep, want tree) {
	big := make([]byte, 100<<10)
	r.Read(big)
	small := bytes.Repeat([]byte("x"), 8<<10)
	over := bytes.Repeat([]byte("A"), 4096)
	want = tree{"a": append(append([]byte(nil), over...), baseA()[4096:]...), "d/": nil, "d/x": small, "y": big}
	steps = []faultStep{
		{func(f *FS) error { _, err := f.Mkdir(TopLevel, "d", 0o755, 0, 0); return err }, ""},
		{func(f *FS) error {
			d, _, err := f.Lookup(TopLevel, "d")
			if err != nil {
				return err
			}
			return createWrite(f, d, "x", small)
		}, "d/x"},
		{func(f *FS) error { return createWrite(f, TopLevel, "y", big) }, "y"},
		{func(f *FS) error {
			a, _, err := f.Lookup(TopLevel, "a")
			if err != nil {
				return err
			}
			_, err = f.WriteAt(a, 0, over)
			return err
		}, ""},
		{func(f *FS) error { return f.Unlink(TopLevel, "b") }, ""},
	}
	return steps, want
}

func baseA() []byte { return bytes.Repeat([]byte("base a "), 2000) }

func createWrite(f *FS, dir ondisk.InodeRef, name string, data []byte) error {
	id, err := f.Create(dir, name, 0o644, 0, 0, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(id, 0, data)
	return err
}

// faultBase makes a committed filesystem in memory with files a and b.
func faultBase(t *testing.T) (*blockdev.Memory, tree) {
	mem := blockdev.NewMemory(128 << 20)
	mustOK(t, mkfs.Make(mem, mkfs.Config{}))
	f, err := OpenDevice(mem, Options{})
	mustOK(t, err)
	mustOK(t, createWrite(f, TopLevel, "a", baseA()))
	mustOK(t, createWrite(f, TopLevel, "b", []byte("base b")))
	mustOK(t, f.Close())
	return mem, tree{"a": baseA(), "b": []byte("base b")}
}

// TestCommitFaults fails, one at a time, every write and every flush the
// workload and its commit issue. The operation that meets the fault
// returns an error naming it; after a failed commit the filesystem
// refuses changes (aborted) and Close reports the error without
// panicking; the device then holds the previous committed state (or the
// new one when only a superblock mirror or the last flush failed), which
// our checker and btrfs check find clean.
func TestCommitFaults(t *testing.T) {
	base, before := faultBase(t)
	steps, after := faultWorkload(rand.New(rand.NewSource(1)))

	// A run without faults counts the operations and gives the new state.
	clean := blockdev.NewFaulty(blockdev.NewOverlay(base))
	writes, flushes, reads := runFaulted(t, clean, steps)
	if got := readTree(t, clean.Device.(*blockdev.Overlay)); !sameTree(got, after) {
		t.Fatalf("without faults: %v", treeDiff(after, got))
	}
	t.Logf("workload and commit: %d writes, %d flushes, %d reads", writes, flushes, reads)
	// What a failure in step i may leave: steps 0..i-1 done, step i not,
	// or done up to its create.
	failedAt := map[string][]tree{}
	for i := range steps {
		ov := blockdev.NewOverlay(base)
		f, err := OpenDevice(ov, Options{})
		mustOK(t, err)
		if where, err := runSteps(f, steps[:i]); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		mustOK(t, f.Close())
		prefix := readTree(t, ov)
		failedAt[fmt.Sprintf("step %d", i)] = append(failedAt[fmt.Sprintf("step %d", i)], prefix)
		if c := steps[i].creates; c != "" {
			with := tree{c: []byte{}}
			for k, v := range prefix {
				with[k] = v
			}
			failedAt[fmt.Sprintf("step %d", i)] = append(failedAt[fmt.Sprintf("step %d", i)], with)
		}
	}

	scratch := filepath.Join(t.TempDir(), "state.img")
	results := map[string]int{}
	for _, c := range []struct {
		op     blockdev.FaultOp
		n      int
		sticky bool // every operation from the nth on fails (a dead device)
	}{{blockdev.FaultWrite, writes, false}, {blockdev.FaultFlush, flushes, false}, {blockdev.FaultRead, reads, false},
		{blockdev.FaultWrite, writes, true}, {blockdev.FaultRead, reads, true}} {
		for n := 1; n <= c.n; n++ {
			what := fmt.Sprintf("%s #%d", c.op, n)
			mem := blockdev.NewOverlay(base)
			dev := blockdev.NewFaulty(mem)
			f, err := OpenDevice(dev, Options{})
			mustOK(t, err)
			if c.sticky {
				what += " and after"
				dev.FailFrom(c.op, n)
			} else {
				dev.FailAt(c.op, n)
			}
			failedIn, err := runSteps(f, steps)
			if err == nil && c.op == blockdev.FaultRead {
				// a metadata read that fails is retried from the other copy
				mustOK(t, f.Close())
				if got := readTree(t, mem); !sameTree(got, after) {
					t.Errorf("%s: recovered, but the new state is not on disk: %v", what, treeDiff(after, got))
				}
				results["read recovered → new"]++
				continue
			}
			if err == nil {
				t.Fatalf("%s: no error from the workload or its commit", what)
			}
			if !errors.Is(err, blockdev.ErrInjected) || !strings.Contains(err.Error(), c.op.String()+" #") {
				t.Errorf("%s: the error does not name the failed operation: %v", what, err)
			}
			dev.FailAt(c.op, 0) // the device works again: what is written now is what the FS chooses to write
			if failedIn == "commit" {
				if _, err := f.Create(TopLevel, "late", 0o644, 0, 0, 0); err == nil {
					t.Errorf("%s: a change after the failed commit was accepted", what)
				}
				if err := f.Close(); err == nil {
					t.Errorf("%s: Close after the failed commit returned nil", what)
				}
			} else if err := f.Close(); err != nil {
				// a failed data write is not fatal: the rest commits
				t.Errorf("%s (in %s): Close: %v", what, failedIn, err)
			}
			state := "new"
			got := readTree(t, mem)
			switch {
			case sameTree(got, before):
				state = "previous"
			case sameTree(got, after):
			case failedIn != "commit" && anySame(got, failedAt[failedIn]):
				state = "the steps before it" // the failed step changed nothing (or only created its file)
			default:
				t.Errorf("%s (in %s: %v): neither the previous nor the new state: %v", what, failedIn, err, treeDiff(after, got))
			}
			if failedIn == "commit" && state == "new" && !strings.Contains(err.Error(), "superblock") {
				t.Errorf("%s: the commit failed before its superblocks (%v) but the new state is on disk", what, err)
			}
			writeImage(t, mem, scratch)
			if msg := checktest.Problems(scratch); msg != "" {
				t.Errorf("%s (in %s: %v): the image is not clean:\n%s", what, failedIn, err, msg)
			}
			results[failedIn+" → "+state]++
		}
	}
	keys := make([]string, 0, len(results))
	for k := range results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("fault in %s: %d", k, results[k])
	}
}

// runFaulted opens dev, runs the steps and the commit, and returns how
// many writes and flushes that issued.
func runFaulted(t *testing.T, dev *blockdev.Faulty, steps []faultStep) (writes, flushes, reads int) {
	f, err := OpenDevice(dev, Options{})
	mustOK(t, err)
	w0, f0, r0 := dev.Count(blockdev.FaultWrite), dev.Count(blockdev.FaultFlush), dev.Count(blockdev.FaultRead)
	if where, err := runSteps(f, steps); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	writes, flushes, reads = dev.Count(blockdev.FaultWrite)-w0, dev.Count(blockdev.FaultFlush)-f0, dev.Count(blockdev.FaultRead)-r0
	mustOK(t, f.Close())
	return writes, flushes, reads
}

// runSteps runs the steps, then Commit; it stops at the first error and
// says where it happened.
func runSteps(f *FS, steps []faultStep) (string, error) {
	for i, s := range steps {
		if err := s.run(f); err != nil {
			return fmt.Sprintf("step %d", i), err
		}
	}
	return "commit", f.Commit()
}

// readTree opens (a copy-on-write view of) the state on dev and reads the
// top directory (one level of subdirectories).
func readTree(t *testing.T, dev *blockdev.Overlay) tree {
	t.Helper()
	f, err := OpenDevice(blockdev.NewOverlay(dev), Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer f.Close()
	out := tree{}
	var walk func(dir ondisk.InodeRef, prefix string)
	walk = func(dir ondisk.InodeRef, prefix string) {
		ents, err := f.ReadDir(dir)
		if err != nil {
			t.Fatalf("readdir %s: %v", prefix, err)
		}
		for _, e := range ents {
			id, x, err := f.Lookup(dir, e.Name)
			if err != nil {
				t.Fatalf("lookup %s%s: %v", prefix, e.Name, err)
			}
			if x.Mode&item.SIFMT == item.SIFDIR {
				out[prefix+e.Name+"/"] = nil
				walk(id, prefix+e.Name+"/")
				continue
			}
			b, err := f.ReadAt(id, 0, int(x.Size))
			if err != nil {
				t.Fatalf("read %s%s: %v", prefix, e.Name, err)
			}
			out[prefix+e.Name] = b
		}
	}
	walk(TopLevel, "")
	return out
}

func anySame(got tree, want []tree) bool {
	for _, w := range want {
		if sameTree(got, w) {
			return true
		}
	}
	return false
}

func sameTree(a, b tree) bool { return len(treeDiff(a, b)) == 0 }

func treeDiff(want, got tree) []string {
	var d []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			d = append(d, k+": missing")
		case !bytes.Equal(w, g):
			d = append(d, fmt.Sprintf("%s: %d bytes differ from the %d expected", k, len(g), len(w)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k+": unexpected")
		}
	}
	sort.Strings(d)
	return d
}

// writeImage writes the state on ov (its base, then its changes) to a
// sparse file at path, for the checkers.
func writeImage(t *testing.T, ov *blockdev.Overlay, path string) {
	t.Helper()
	fl, err := os.Create(path)
	mustOK(t, err)
	defer fl.Close()
	base := ov.Base().(*blockdev.Memory)
	mustOK(t, fl.Truncate(base.Size()))
	write := func(off int64, p []byte) {
		if _, err := fl.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range nonZeroChunks(base) {
		write(c.off, c.b)
	}
	ov.EachPage(write)
}

type chunk struct {
	off int64
	b   []byte
}

var baseChunks = map[*blockdev.Memory][]chunk{}

// nonZeroChunks lists the 64 KiB chunks of m that are not all zero (once
// per device: the base is never written).
func nonZeroChunks(m *blockdev.Memory) []chunk {
	if c, ok := baseChunks[m]; ok {
		return c
	}
	const size = 64 << 10
	var out []chunk
	zero := make([]byte, size)
	for off := int64(0); off < m.Size(); off += size {
		b := make([]byte, size)
		n, _ := m.ReadAt(b, off)
		if !bytes.Equal(b[:n], zero[:n]) {
			out = append(out, chunk{off, b[:n]})
		}
	}
	baseChunks[m] = out
	return out
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
