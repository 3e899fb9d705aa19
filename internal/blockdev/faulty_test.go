package blockdev_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
)

// TestFaulty: the Nth operation of a kind fails (once, or from then on),
// the error names the operation and offset and wraps ErrInjected, and a
// failed write leaves the device unchanged.
func TestFaulty(t *testing.T) {
	mem := blockdev.NewMemory(1 << 16)
	d := blockdev.NewFaulty(mem)
	d.FailAt(blockdev.FaultWrite, 2)
	if _, err := d.WriteAt([]byte("a"), 0); err != nil {
		t.Fatalf("write 1: %v", err)
	}
	_, err := d.WriteAt([]byte("b"), 4096)
	var fe *blockdev.FaultError
	if !errors.As(err, &fe) || !errors.Is(err, blockdev.ErrInjected) || fe.Off != 4096 ||
		!strings.Contains(err.Error(), "write #2 of 1 bytes at 4096") {
		t.Fatalf("write 2: %v", err)
	}
	if mem.Bytes()[4096] != 0 {
		t.Fatal("a failed write reached the device")
	}
	if _, err := d.WriteAt([]byte("c"), 8192); err != nil {
		t.Fatalf("write 3 (FailAt fails one): %v", err)
	}

	d.FailFrom(blockdev.FaultFlush, 1)
	for i := 0; i < 3; i++ {
		if err := d.Flush(); err == nil || !strings.Contains(err.Error(), "flush #") {
			t.Fatalf("flush %d after FailFrom: %v", i, err)
		}
	}
	d.FailAt(blockdev.FaultFlush, 0)
	if err := d.Flush(); err != nil {
		t.Fatalf("flush after disarming: %v", err)
	}

	d.FailAt(blockdev.FaultRead, 1)
	if _, err := d.ReadAt(make([]byte, 10), 100); err == nil || !strings.Contains(err.Error(), "read #1 of 10 bytes at 100") {
		t.Fatalf("read: %v", err)
	}
	if n := len(d.Injected()); n != 5 || d.Count(blockdev.FaultWrite) != 3 {
		t.Fatalf("%d injected, %d writes", n, d.Count(blockdev.FaultWrite))
	}
}
