package fusefs

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestStreamTailDisturbed: 4 KiB streams (plain, NOCOW, preallocated
// ahead) whose last extent grows on disk, disturbed every few hundred KiB
// by copy_file_range of what was just written into another file, fsync,
// a commit, a punch into the written part, or a preallocation ahead of
// the stream. After one fsync a crash copy is taken: it checks clean and
// the kernel's replay reads the fsync'd bytes. At the end every file
// reads what was written, through the mount and the kernel, and the image
// checks clean with its data checksums.
func TestStreamTailDisturbed(t *testing.T) {
	needFuse(t)
	seed := redteamSeed(t)
	rng := rand.New(rand.NewSource(seed))
	size, imgSize := 16<<20, int64(512<<20)
	if os.Getenv("GOBTRFS_STRESS") != "" {
		size, imgSize = 160<<20, 2<<30
	}
	img := newImage(t, imgSize)
	tm := mountImage(t, img, Options{DirtyLimit: 4 << 20})
	models := map[string][]byte{}
	crashed := false
	for _, kind := range []string{"plain", "nocow", "prealloc"} {
		f, err := os.Create(tm.path(kind))
		must(t, err)
		fd := int(f.Fd())
		if kind == "nocow" {
			must(t, unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, 0x00800000)) // FS_NOCOW_FL
		}
		data := make([]byte, size)
		rng.Read(data)
		model := make([]byte, 0, size)
		clones := 0
		for off := 0; off < size; off += 4096 {
			if _, err := f.Write(data[off : off+4096]); err != nil {
				t.Fatalf("%s: write at %d: %v", kind, off, err)
			}
			model = append(model, data[off:off+4096]...)
			if rng.Intn(64) != 0 {
				continue
			}
			switch rng.Intn(5) {
			case 0: // copy_file_range of the latest bytes
				n := min(len(model), 4096*(1+rng.Intn(64)))
				name := fmt.Sprintf("%s-copy%d", kind, clones)
				clones++
				g, err := os.Create(tm.path(name))
				must(t, err)
				src, dst := int64(len(model)-n), int64(0)
				if k, err := unix.CopyFileRange(fd, &src, int(g.Fd()), &dst, n, 0); err != nil || k != n {
					t.Fatalf("%s: copy_file_range of %d bytes: %d, %v", kind, n, k, err)
				}
				g.Close()
				models[name] = append([]byte(nil), model[len(model)-n:]...)
			case 1:
				must(t, f.Sync())
				if !crashed && canKernelMount() {
					crashed = true
					t.Logf("crash copy after an fsync of %s at %d bytes", kind, len(model))
					crashCheck(t, img, kind, model)
				}
			case 2:
				must(t, tm.Sync())
			case 3: // punch into what was written
				n := 4096 * (1 + rng.Intn(8))
				at := len(model) - n - 4096*rng.Intn(4)
				if at < 0 {
					continue
				}
				must(t, unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(at), int64(n)))
				clear(model[at : at+n])
			case 4:
				if kind == "prealloc" {
					must(t, unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, int64(len(model)), 4<<20))
				}
			}
		}
		must(t, f.Close())
		models[kind] = model
	}
	for name, want := range models {
		if b, err := os.ReadFile(tm.path(name)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s through the mount: %d bytes (%v), want the %d written", name, len(b), err, len(want))
		}
	}
	finish(t, tm, img)
}

// crashCheck copies the mounted img as a crash would leave it right after
// an fsync of name, checks the copy, and has the kernel replay its log:
// name must read want.
func crashCheck(t *testing.T, img, name string, want []byte) {
	t.Helper()
	crash := filepath.Join(t.TempDir(), "crash.img")
	if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	checktest.Image(t, crash)
	if t.Failed() {
		return
	}
	dir := testutil.LoopMount(t, crash, "")
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("kernel replay of the crash copy after an fsync of %s: %d bytes (%v), want the %d fsync'd", name, len(got), err, len(want))
	}
	testutil.Unmount(t, dir)
	checktest.Image(t, crash)
}
