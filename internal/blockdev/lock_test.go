package blockdev_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

func tempImage(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOneWriter: a second read-write open of an image is refused with
// ErrLocked naming the holder; readers are told a writer holds it; once
// the writer closes, the next one gets in.
func TestOneWriter(t *testing.T) {
	img := tempImage(t)
	w, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = blockdev.OpenFile(img, false)
	var le *blockdev.LockedError
	if !errors.Is(err, blockdev.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	if le.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("holder %+v (%v), want pid %d", le.Holder, err, os.Getpid())
	}
	r, err := blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatalf("reader beside a writer: %v", err)
	}
	if h, busy := r.InUse(); !busy || h.PID != os.Getpid() {
		t.Errorf("reader: InUse = %+v, %v; want the writer", h, busy)
	}
	r.Close()
	if _, busy := blockdev.Probe(img); !busy {
		t.Errorf("Probe while a writer holds the image: not busy")
	}
	w.Close()
	if _, busy := blockdev.Probe(img); busy {
		t.Errorf("Probe after the writer closed: busy")
	}
	r, err = blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, busy := r.InUse(); busy {
		t.Errorf("reader after the writer closed: InUse")
	}
	// a reader keeps no lock: a writer gets in beside it
	w, err = blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatalf("writer beside a reader: %v", err)
	}
	w.Close()
	r.Close()
}

// TestSharedLockKeepsWritersOut: a read-only mount's shared lock refuses
// writers and admits readers and more shared holders.
func TestSharedLockKeepsWritersOut(t *testing.T) {
	img := tempImage(t)
	s1, err := blockdev.LockShared(img)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := blockdev.LockShared(img)
	if err != nil {
		t.Fatalf("second shared holder: %v", err)
	}
	if _, err := blockdev.OpenFile(img, false); !errors.Is(err, blockdev.ErrLocked) {
		t.Errorf("writer beside shared holders: %v, want ErrLocked", err)
	}
	s1.Close()
	s2.Close()
	w, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blockdev.LockShared(img); !errors.Is(err, blockdev.ErrLocked) {
		t.Errorf("shared lock beside a writer: %v, want ErrLocked", err)
	}
	w.Close()
}

// TestWaitUnlocked: a waiter says once who it waits for and gets the image
// when the holder lets go; with nobody holding it, it does not wait.
func TestWaitUnlocked(t *testing.T) {
	img := tempImage(t)
	var said atomic.Int32
	if err := blockdev.WaitUnlocked(img, time.Minute, func(blockdev.Holder) { said.Add(1) }); err != nil || said.Load() != 0 {
		t.Fatalf("free image: %v, said %d times", err, said.Load())
	}
	w, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() { time.Sleep(300 * time.Millisecond); w.Close(); close(released) }()
	var holder blockdev.Holder
	if err := blockdev.WaitUnlocked(img, time.Minute, func(h blockdev.Holder) { said.Add(1); holder = h }); err != nil {
		t.Fatal(err)
	}
	<-released
	if said.Load() != 1 || holder.PID != os.Getpid() {
		t.Errorf("waiter said %d times, holder %+v; want once, this process", said.Load(), holder)
	}
	w2, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatalf("writer after the wait: %v", err)
	}
	w2.Close()
}

// TestLoopAttachedRefused: an image file attached to a loop device (which
// the kernel may have mounted) is not opened for writing.
func TestLoopAttachedRefused(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := tempImage(t)
	loop := testutil.Loop(t, img)
	_, err := blockdev.OpenFile(img, false)
	if !errors.Is(err, blockdev.ErrLocked) || !strings.Contains(err.Error(), loop) {
		t.Errorf("writer of a loop-attached image: %v, want ErrLocked naming %s", err, loop)
	}
	r, err := blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatalf("reader of a loop-attached image: %v", err)
	}
	r.Close()
}

// TestLoopDeviceSharesFileLock: a writer through a loop device of the image
// file and a writer through the file itself exclude each other, and a
// reader of either is warned (before, two mounts wrote the same image).
func TestLoopDeviceSharesFileLock(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := tempImage(t)
	loop := testutil.Loop(t, img)
	w, err := blockdev.OpenFile(loop, false)
	if err != nil {
		t.Fatalf("writer through %s: %v", loop, err)
	}
	if _, err := blockdev.OpenFile(img, false); !errors.Is(err, blockdev.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("writer through the file beside one through %s: %v, want ErrLocked naming this process", loop, err)
	}
	r, err := blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, busy := r.InUse(); !busy {
		t.Errorf("reader of the file: not told that %s is open for writing", loop)
	}
	r.Close()
	w.Close()

	f, err := blockdev.OpenFile(img, false)
	if err == nil {
		f.Close()
		t.Errorf("writer through a loop-attached file accepted")
	}
	// the file locked by a writer: the loop device is refused too
	shared, err := blockdev.LockShared(img)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if _, err := blockdev.OpenFile(loop, false); !errors.Is(err, blockdev.ErrLocked) {
		t.Errorf("writer through %s while the file is held: %v, want ErrLocked", loop, err)
	}
}
