package gobtrfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestMixedBGOpenRW fills an image with mixed block groups (mkfs.btrfs
// --mixed: data and metadata share the groups) through OpenRW: streams of
// 4 KiB WriteAt calls (gathered in memory with their space reserved, so
// ENOSPC comes from WriteAt itself) alternating with small files stored
// inline (metadata). Every call accepted reaches the disk: Close writes
// the last gathered stream without error, although the small files took
// from the same space. The image is clean, holds exactly what was
// accepted (Linux reads it too), and removing everything on the full
// image works and makes the room again.
func TestMixedBGOpenRW(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	checktest.Mkfs(t, img, 128<<20, "--mixed")
	r := rand.New(rand.NewSource(6))
	fill := func(prefix string) map[string][]byte {
		t.Helper()
		w, err := gobtrfs.OpenRW(img, nil)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		full := false
		for i := 0; !full; i++ {
			name := fmt.Sprintf("/%s%03d", prefix, i)
			var data []byte
			chunk := make([]byte, 4096)
			for j, n := 0, 1+r.Intn(1536); j < n; j++ { // up to 6 MiB
				r.Read(chunk)
				if _, err := w.WriteAt(name, chunk, int64(len(data))); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("write %s: %v", name, err)
					}
					full = true
					break
				}
				data = append(data, chunk...)
			}
			files[name] = data
			for k := 0; k < 20 && !full; k++ {
				small := fmt.Sprintf("%s.s%02d", name, k)
				b := make([]byte, 200+r.Intn(1500))
				r.Read(b)
				if err := w.WriteFile(small, b, 0o644); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("write %s: %v", small, err)
					}
					w.Remove(small) // may have been created
					full = true
					break
				}
				files[small] = b
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("close after ENOSPC (writes the gathered stream): %v", err)
		}
		return files
	}
	verify := func(files map[string][]byte) {
		t.Helper()
		f, err := gobtrfs.Open(img, &gobtrfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ents, err := f.ReadDir(".")
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != len(files) {
			t.Fatalf("%d files in the image, %d written", len(ents), len(files))
		}
		for name, want := range files {
			got, err := f.ReadFile(name[1:])
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes (%v), %d written", name, len(got), err, len(want))
			}
		}
	}
	sum := func(files map[string][]byte) (n int) {
		for _, b := range files {
			n += len(b)
		}
		return n
	}
	first := fill("a")
	checktest.Image(t, img)
	verify(first)
	t.Logf("first fill: %d files, %d MiB", len(first), sum(first)>>20)
	if testutil.HaveRootLoop() {
		mnt := testutil.LoopMount(t, img, "ro")
		for name, want := range first {
			if got, err := os.ReadFile(filepath.Join(mnt, name)); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Linux reads %s: %d bytes (%v), %d written", name, len(got), err, len(want))
			}
		}
		testutil.Unmount(t, mnt)
	}

	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name := range first {
		if err := w.Remove(name); err != nil {
			t.Fatalf("remove %s on a full mixed image: %v", name, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checktest.Image(t, img)
	second := fill("b")
	checktest.Image(t, img)
	verify(second)
	t.Logf("refill: %d files, %d MiB", len(second), sum(second)>>20)
	if sum(second) < sum(first)*9/10 {
		t.Errorf("refilled %d bytes, first fill %d", sum(second), sum(first))
	}
}
