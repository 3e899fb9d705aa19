package main

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// readImageFile reads a file of an image with the read-only package.
func readImageFile(t *testing.T, img, p string) []byte {
	t.Helper()
	f, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.ReadFile(strings.TrimPrefix(p, "/"))
	if err != nil {
		t.Fatalf("read %s from the image: %v", p, err)
	}
	return data
}

// imageHas reports whether path exists in the image.
func imageHas(t *testing.T, img, p string) bool {
	t.Helper()
	f, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Lstat(strings.TrimPrefix(p, "/"))
	return err == nil
}

// TestPutRmFullImage copies a tree larger than a 128 MiB image into it:
// put fails with ENOSPC naming the file that did not fit, the files copied
// before it are committed and intact, and the image is clean. rm then works
// on the full image, and after it put has room again.
func TestPutRmFullImage(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 128<<20)
	src := filepath.Join(t.TempDir(), "src")
	r := rand.New(rand.NewSource(3))
	host := map[string][]byte{}
	mk := func(rel string, n int) {
		data := make([]byte, n)
		r.Read(data)
		full := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
		host[rel] = data
	}
	mk("a", 3<<20)
	mk("b", 2<<20+123)
	mk("c", 5<<20)
	mk("dir/big", 100<<20) // copied last (entries go in name order)

	var stderr bytes.Buffer
	err := putMain([]string{img, src, "/"}, &stderr)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("put of %d MiB into a 128 MiB image: %v, want ENOSPC", len(host["dir/big"])>>20, err)
	}
	msg := err.Error()
	t.Logf("put: %s", msg)
	if !strings.Contains(msg, "/src/dir/big") || !strings.Contains(msg, "no space left on device") {
		t.Fatalf("put error %q does not name /src/dir/big and ENOSPC", msg)
	}
	checktest.Image(t, img)
	for _, rel := range []string{"a", "b", "c"} {
		if got := readImageFile(t, img, "/src/"+rel); !bytes.Equal(got, host[rel]) {
			t.Fatalf("/src/%s: %d bytes in the image differ from the %d copied", rel, len(got), len(host[rel]))
		}
	}
	part := readImageFile(t, img, "/src/dir/big")
	if len(part) == 0 || !bytes.HasPrefix(host["dir/big"], part) {
		t.Fatalf("/src/dir/big: %d bytes kept, not a prefix of the source", len(part))
	}
	t.Logf("kept %d MiB of /src/dir/big", len(part)>>20)

	// Still full: another file does not fit either, and says so.
	more := filepath.Join(t.TempDir(), "more")
	if err := os.WriteFile(more, bytes.Repeat([]byte("more data "), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	err = putMain([]string{img, more, "/more"}, &stderr)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "/more") {
		t.Fatalf("put into the full image: %v, want ENOSPC naming /more", err)
	}
	checktest.Image(t, img)

	// rm works on the full image.
	runW(t, img, rmMain, img, "/src/a", "/more")
	checktest.Image(t, img)
	if imageHas(t, img, "/src/a") || imageHas(t, img, "/more") {
		t.Fatal("rm left files behind")
	}
	runW(t, img, rmMain, "-r", img, "/src/dir")
	checktest.Image(t, img)
	runW(t, img, putMain, img, more, "/more")
	checktest.Image(t, img)
	if got, want := readImageFile(t, img, "/more"), bytes.Repeat([]byte("more data "), 1<<20); !bytes.Equal(got, want) {
		t.Fatal("/more differs after rm made room")
	}
	for _, rel := range []string{"b", "c"} {
		if got := readImageFile(t, img, "/src/"+rel); !bytes.Equal(got, host[rel]) {
			t.Fatalf("/src/%s changed", rel)
		}
	}
}
