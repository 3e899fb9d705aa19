package mkfs

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// kernelRoundTrip mounts img, makes a directory, a 10 MiB file and a
// subvolume with a file in it, unmounts, runs btrfs check, and mounts again
// read-only to read the data back.
func kernelRoundTrip(t *testing.T, img string) {
	t.Helper()
	data := make([]byte, 10<<20)
	rand.New(rand.NewSource(int64(len(img)))).Read(data)
	small := []byte("hello from a subvolume\n")

	mnt := testutil.LoopMount(t, img, "")
	if err := os.MkdirAll(filepath.Join(mnt, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "d", "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "btrfs", "subvolume", "create", filepath.Join(mnt, "sv"))
	if err := os.WriteFile(filepath.Join(mnt, "sv", "g"), small, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(mnt, "d", "f"), filepath.Join(mnt, "d", "e", "f2")); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "sync")
	testutil.Unmount(t, mnt)
	t.Logf("kernel: wrote 10 MiB, a hard link and a subvolume")
	btrfsCheck(t, img)

	mnt = testutil.LoopMount(t, img, "ro")
	defer testutil.Unmount(t, mnt)
	got, err := os.ReadFile(filepath.Join(mnt, "d", "e", "f2"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back 10 MiB file: %d bytes, err %v, equal %v", len(got), err, bytes.Equal(got, data))
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "sv", "g")); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read back subvolume file: %q, %v", got, err)
	}
}
