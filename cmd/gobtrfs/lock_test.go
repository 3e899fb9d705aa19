package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// gobtrfsCmd runs this test binary as the gobtrfs command in a process of
// its own.
func gobtrfsCmd(ctx context.Context, args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// lockSource makes a host tree of n files of random data (about size bytes
// in all) whose content depends on seed.
func lockSource(t *testing.T, seed int64, n int, size int) map[string][]byte {
	rng := rand.New(rand.NewSource(seed))
	files := map[string][]byte{}
	for i := 0; i < n; i++ {
		b := make([]byte, size/n+rng.Intn(4096))
		rng.Read(b)
		files[fmt.Sprintf("d%d/f%03d", i%3, i)] = b
	}
	return files
}

func writeTree(t *testing.T, dir string, files map[string][]byte) {
	for p, b := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentWritersOneImage: N `gobtrfs put` processes on one image at
// once. Each either finishes (and everything it put is there, intact) or
// fails at once with an error naming the image and its holder; those retry
// until they get their turn. btrfs check --check-data-csum is clean at the
// end. Before the image lock, all exited 0 and whole trees were lost.
func TestConcurrentWritersOneImage(t *testing.T) {
	testutil.NeedProgs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := gobtrfs.CreateImage(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	const writers = 4
	want := map[string][]byte{}
	srcs := make([]string, writers)
	for w := range writers {
		files := lockSource(t, int64(w+1), 24, 24<<20)
		srcs[w] = filepath.Join(dir, fmt.Sprintf("src%d", w))
		writeTree(t, srcs[w], files)
		for p, b := range files {
			want[fmt.Sprintf("w%d/%s", w, p)] = b
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var mu sync.Mutex
	refused := 0
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; ; attempt++ {
				var stderr bytes.Buffer
				cmd := gobtrfsCmd(ctx, "put", img, srcs[w], fmt.Sprintf("/w%d", w))
				cmd.Stderr = &stderr
				err := cmd.Run()
				if err == nil {
					return
				}
				msg := stderr.String()
				if !strings.Contains(msg, img+": in use by ") || !strings.Contains(msg, "pid ") || ctx.Err() != nil {
					t.Errorf("writer %d: %v: want success or a clear in-use error naming the holder, got:\n%s", w, err, msg)
					return
				}
				mu.Lock()
				refused++
				mu.Unlock()
				// A refused writer changed nothing; a half-done put would leave
				// /wN behind, so the retry starts from an empty name.
				time.Sleep(time.Duration(20+10*w) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d writers, %d refusals while another held the image", writers, refused)
	if refused == 0 {
		t.Errorf("no writer was ever refused: the writers did not overlap, or the image is not locked")
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for p, b := range want {
		got, err := fsys.ReadFile(p)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: acknowledged write lost or damaged (%d bytes, want %d): %v", p, len(got), len(b), err)
		}
	}
	checktest.Image(t, img)
}

// TestWriterRefusedBesideOpenRW: the library's OpenRW on an image another
// writer holds fails with ErrLocked naming the holder (this process), and
// a reader is told that what it reads may be stale.
func TestWriterRefusedBesideOpenRW(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = gobtrfs.OpenRW(img, nil)
	if !errors.Is(err, gobtrfs.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second OpenRW: %v; want ErrLocked naming pid %d", err, os.Getpid())
	}
	// the CLI writers and mkfs are refused the same way
	for _, args := range [][]string{{"mkdir", img, "/x"}, {"mkfs", "-f", img}} {
		var stderr bytes.Buffer
		cmd := gobtrfsCmd(context.Background(), args...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "in use by") {
			t.Errorf("%v beside an open writer: %v, stderr %q; want refusal naming the holder", args, err, stderr.String())
		}
	}
	var warnings []string
	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	fsys.Close()
	if len(warnings) == 0 || !strings.Contains(strings.Join(warnings, "\n"), "may be stale") {
		t.Errorf("reader of an image open for writing: warnings %q, want a stale-data warning", warnings)
	}
	warnings = nil
	fsys, err = gobtrfs.Open(img, &gobtrfs.Options{NoInUseWarning: true, Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	fsys.Close()
	if len(warnings) != 0 {
		t.Errorf("NoInUseWarning: still warned %q", warnings)
	}
	for _, args := range [][]string{{"ls", img}, {"check", img}, {"inspect", "dump-super", img}} {
		var stderr bytes.Buffer
		cmd := gobtrfsCmd(context.Background(), args...)
		cmd.Stderr = &stderr
		cmd.Run()
		if !strings.Contains(stderr.String(), "may be stale") {
			t.Errorf("%v on an image open for writing: no stale warning in %q", args, stderr.String())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatalf("OpenRW after the first writer closed: %v", err)
	}
	w2.Close()
}

// TestWriteRefusedOnTruncatedImage: an image file shorter than the
// filesystem it holds is not written to.
func TestWriteRefusedOnTruncatedImage(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 200<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := gobtrfs.OpenRW(img, nil); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("OpenRW of a truncated image: %v, want a refusal", err)
	}
	var stderr bytes.Buffer
	cmd := gobtrfsCmd(context.Background(), "mkdir", img, "/x")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Errorf("mkdir on a truncated image succeeded")
	}
	if st, _ := os.Stat(img); st.Size() != 200<<20 {
		t.Errorf("truncated image was written to: now %d bytes", st.Size())
	}
}
