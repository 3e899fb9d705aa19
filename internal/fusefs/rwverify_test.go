package fusefs

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// imageOffsets returns the offsets in the image file at which pat occurs.
func imageOffsets(t *testing.T, img string, pat []byte) []int64 {
	t.Helper()
	raw, err := os.ReadFile(img)
	must(t, err)
	var at []int64
	for off := 0; ; {
		i := bytes.Index(raw[off:], pat)
		if i < 0 {
			return at
		}
		at = append(at, int64(off+i))
		off += i + 1
	}
}

func flipAt(t *testing.T, img string, off int64) {
	t.Helper()
	checktest.Damaged(img) // on purpose: no end-of-test check
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	b := make([]byte, 16)
	f.ReadAt(b, off)
	for i := range b {
		b[i] ^= 0x5a
	}
	_, err = f.WriteAt(b, off)
	must(t, err)
}

// TestRWMountVerifiesData: reads through the read-write mount check data
// checksums. With DUP data a damaged first copy is replaced by the second
// (and the mount logs it); with one copy the read fails with EIO and a log
// line naming the inode, the file offset and the logical address, while
// other files still read and the mount stays up. Before, the mount
// returned the damaged bytes.
func TestRWMountVerifiesData(t *testing.T) {
	needFuse(t)
	for _, profile := range []string{"single", "dup"} {
		t.Run(profile, func(t *testing.T) {
			var img string
			if profile == "single" {
				img = newImage(t, 256<<20) // our mkfs: single data
			} else {
				img = filepath.Join(t.TempDir(), "dup.img")
				testutil.Mkfs(t, img, 256<<20, "-d", "dup", "-m", "dup")
			}
			data := make([]byte, 256<<10)
			rand.New(rand.NewSource(2)).Read(data)
			tm := mountImage(t, img, Options{})
			must(t, os.WriteFile(tm.path("f"), data, 0o644))
			must(t, os.WriteFile(tm.path("g"), []byte("a good file"), 0o644))
			var st unix.Stat_t
			must(t, unix.Stat(tm.path("f"), &st))
			tm.unmount()
			checktest.Image(t, img)

			const sector = 5 * 4096
			at := imageOffsets(t, img, data[sector:sector+4096])
			if want := map[string]int{"single": 1, "dup": 2}[profile]; len(at) != want {
				t.Fatalf("sector found %d times in the image, want %d", len(at), want)
			}
			flipAt(t, img, at[0]+10)

			tm = mountImage(t, img, Options{})
			got, err := os.ReadFile(tm.path("f"))
			logs := func() string { return tm.logBuf.String() }
			if profile == "dup" {
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("copy 1 damaged: err %v, data equal %v; want the good copy", err, bytes.Equal(got, data))
				}
				if !strings.Contains(logs(), "used copy 2") {
					t.Errorf("no log line about the fallback:\n%s", logs())
				}
				tm.unmount()
				flipAt(t, img, at[1]+10)
				tm = mountImage(t, img, Options{})
				_, err = os.ReadFile(tm.path("f"))
			}
			wantErrno(t, "read of a damaged sector", err, syscall.EIO)
			// the part before the damaged sector still reads
			fd, err := os.Open(tm.path("f"))
			must(t, err)
			head := make([]byte, sector)
			n, err := fd.ReadAt(head, 0)
			fd.Close()
			if err != nil || n != sector || !bytes.Equal(head, data[:sector]) {
				t.Errorf("read before the damaged sector: %d bytes, %v", n, err)
			}
			if b, err := os.ReadFile(tm.path("g")); err != nil || string(b) != "a good file" {
				t.Errorf("other file: %q %v", b, err)
			}
			if _, err := os.ReadDir(tm.path()); err != nil {
				t.Errorf("mount went down: %v", err)
			}
			l := logs()
			for _, want := range []string{fmt.Sprintf("inode %d", st.Ino), fmt.Sprintf("file offset %d", sector), "logical "} {
				if !strings.Contains(l, want) {
					t.Errorf("log lacks %q:\n%s", want, l)
				}
			}
			t.Logf("log: %s", strings.TrimSpace(l))
			tm.unmount()
		})
	}
}

// TestRWMountDirtyOverDamage: bytes written through the mount and not yet
// written back are served from memory even when the disk sector under them
// is damaged; only a read that needs the damaged on-disk bytes fails.
func TestRWMountDirtyOverDamage(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	data := make([]byte, 64<<10)
	rand.New(rand.NewSource(3)).Read(data)
	tm := mountImage(t, img, Options{})
	must(t, os.WriteFile(tm.path("f"), data, 0o644))
	tm.unmount()
	const sector = 5 * 4096
	at := imageOffsets(t, img, data[sector:sector+4096])
	if len(at) != 1 {
		t.Fatalf("sector found %d times", len(at))
	}
	flipAt(t, img, at[0]+10)
	checktest.Damaged(img) // the damaged sector stays referenced (its extent is only partly overwritten)

	tm = mountImage(t, img, Options{DirtyLimit: 1 << 30})
	fresh := bytes.Repeat([]byte{0xab}, 4096)
	w, err := os.OpenFile(tm.path("f"), os.O_WRONLY, 0)
	must(t, err)
	_, err = w.WriteAt(fresh, sector)
	must(t, err)
	// O_DIRECT: the read reaches the daemon, not the kernel's page cache
	r, err := os.OpenFile(tm.path("f"), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		w.Close()
		t.Skipf("O_DIRECT open through the mount: %v", err)
	}
	buf := alignedBuf(3 * 4096)
	n, err := r.ReadAt(buf, sector-4096)
	want := append(append(append([]byte(nil), data[sector-4096:sector]...), fresh...), data[sector+4096:sector+8192]...)
	if err != nil || n != len(buf) || !bytes.Equal(buf, want) {
		t.Errorf("read around the dirty sector: %d bytes, %v (equal %v)", n, err, bytes.Equal(buf[:n], want[:n]))
	}
	r.Close()
	w.Close()
	tm.unmount()
	checktest.Metadata(t, img)
}

// alignedBuf returns n bytes aligned for O_DIRECT.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) & 4095); r != 0 {
		off = 4096 - r
	}
	return b[off : off+n]
}
