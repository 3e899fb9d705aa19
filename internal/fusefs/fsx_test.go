package fusefs

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"golang.org/x/sys/unix"
)

var fsxOps = flag.Int("fsx.ops", 3000, "operations of TestFSX")

// fsxFile is one file of the exerciser: its open descriptor and the model.
type fsxFile struct {
	name  string
	f     *os.File
	model []byte
}

type fsx struct {
	t     *testing.T
	rng   *rand.Rand
	seed  int64
	img   string
	tm    *testMount
	opts  Options
	files []*fsxFile
	op    int
	log   []string // recent operations, printed on failure
}

func (x *fsx) logf(format string, args ...any) {
	x.log = append(x.log, fmt.Sprintf("%d: "+format, append([]any{x.op}, args...)...))
	if os.Getenv("FSX_TRACE") != "" {
		fmt.Fprintln(os.Stderr, x.log[len(x.log)-1])
	}
	if len(x.log) > 40 {
		x.log = x.log[1:]
	}
}

func (x *fsx) fatalf(format string, args ...any) {
	x.t.Helper()
	x.t.Fatalf("seed %d (replay: go test -run TestFSX -seed %d) op %d: %s\nrecent operations:\n%s",
		x.seed, x.seed, x.op, fmt.Sprintf(format, args...), joinLines(x.log))
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func (x *fsx) check(err error, what string) {
	x.t.Helper()
	if err != nil {
		x.fatalf("%s: %v", what, err)
	}
}

func (x *fsx) open(fl *fsxFile) {
	f, err := os.OpenFile(x.tm.path(fl.name), os.O_RDWR|os.O_CREATE, 0o644)
	x.check(err, "open "+fl.name)
	fl.f = f
}

// grow extends b with zeros to n bytes.
func grow(b []byte, n int) []byte {
	if n > len(b) {
		b = append(b, make([]byte, n-len(b))...)
	}
	return b
}

// randRange picks an offset and length, sometimes sector aligned, sometimes past EOF.
func (x *fsx) randRange(size int) (int, int) {
	const maxLen = 256 << 10
	off := x.rng.Intn(max(size, 1) + 64<<10)
	n := 1 + x.rng.Intn(maxLen)
	if x.rng.Intn(3) == 0 {
		off &^= 4095
		n = (n + 4095) &^ 4095
	}
	return off, n
}

func (x *fsx) compare(fl *fsxFile, off, n int) {
	x.t.Helper()
	buf := make([]byte, n)
	k, err := fl.f.ReadAt(buf, int64(off))
	if err != nil && k < n && off+k < len(fl.model) {
		x.fatalf("read %s at %d+%d: %d, %v", fl.name, off, n, k, err)
	}
	want := []byte{}
	if off < len(fl.model) {
		want = fl.model[off:min(off+n, len(fl.model))]
	}
	if !bytes.Equal(buf[:k], want) {
		i := 0
		for i < min(k, len(want)) && buf[i] == want[i] {
			i++
		}
		x.fatalf("read %s at %d+%d: got %d bytes, want %d; first difference at file offset %d", fl.name, off, n, k, len(want), off+i)
	}
	var st unix.Stat_t
	x.check(unix.Fstat(int(fl.f.Fd()), &st), "fstat")
	if st.Size != int64(len(fl.model)) {
		x.fatalf("size of %s is %d, model %d", fl.name, st.Size, len(fl.model))
	}
}

func (x *fsx) compareAll() {
	x.t.Helper()
	for _, fl := range x.files {
		x.compare(fl, 0, len(fl.model)+1)
	}
}

func (x *fsx) remount() {
	x.t.Helper()
	for _, fl := range x.files {
		fl.f.Close()
	}
	x.tm.unmount()
	checktest.Image(x.t, x.img)
	x.tm = mountImage(x.t, x.img, x.opts)
	for _, fl := range x.files {
		x.open(fl)
	}
	x.compareAll()
}

func (x *fsx) step() {
	fl := x.files[x.rng.Intn(len(x.files))]
	size := len(fl.model)
	fd := int(fl.f.Fd())
	switch r := x.rng.Intn(100); {
	case r < 30: // write
		off, n := x.randRange(size)
		data := make([]byte, n)
		x.rng.Read(data)
		x.logf("write %s %d+%d", fl.name, off, n)
		_, err := fl.f.WriteAt(data, int64(off))
		x.check(err, "write")
		fl.model = grow(fl.model, off+n)
		copy(fl.model[off:], data)
	case r < 50: // read
		off, n := x.randRange(size)
		x.logf("read %s %d+%d", fl.name, off, n)
		x.compare(fl, off, n)
	case r < 56: // truncate
		n := x.rng.Intn(size + 128<<10)
		x.logf("truncate %s %d", fl.name, n)
		x.check(fl.f.Truncate(int64(n)), "truncate")
		if n < size {
			fl.model = fl.model[:n]
		} else {
			fl.model = grow(fl.model, n)
		}
	case r < 61: // fallocate, maybe keep size
		off, n := x.randRange(size)
		mode := uint32(0)
		if x.rng.Intn(2) == 0 {
			mode = unix.FALLOC_FL_KEEP_SIZE
		}
		x.logf("fallocate %s mode %d %d+%d", fl.name, mode, off, n)
		x.check(unix.Fallocate(fd, mode, int64(off), int64(n)), "fallocate")
		if mode == 0 {
			fl.model = grow(fl.model, off+n)
		}
	case r < 66: // punch a hole
		off, n := x.randRange(size)
		x.logf("punch %s %d+%d", fl.name, off, n)
		x.check(unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n)), "punch")
		if off < size {
			clear(fl.model[off:min(off+n, size)])
		}
	case r < 72: // copy_file_range (reflink when aligned)
		src := x.files[x.rng.Intn(len(x.files))]
		off, n := x.randRange(len(src.model))
		doff, _ := x.randRange(size)
		if src == fl && off < doff+n && doff < off+n {
			return // overlapping within one file: EINVAL by the VFS
		}
		x.logf("copy_file_range %s %d+%d -> %s %d", src.name, off, n, fl.name, doff)
		offIn, offOut := int64(off), int64(doff)
		// one call: a second would see a file the first one grew
		done, err := unix.CopyFileRange(int(src.f.Fd()), &offIn, fd, &offOut, n, 0)
		x.check(err, "copy_file_range")
		want := 0
		if off < len(src.model) {
			want = min(n, len(src.model)-off)
		}
		if done != want {
			var st unix.Stat_t
			unix.Fstat(int(src.f.Fd()), &st)
			x.fatalf("copy_file_range copied %d, want %d (source size %d, model %d)", done, want, st.Size, len(src.model))
		}
		if want > 0 {
			part := append([]byte(nil), src.model[off:off+want]...)
			fl.model = grow(fl.model, doff+want)
			copy(fl.model[doff:], part)
		}
	case r < 77: // mmap read (in a helper process, see helper_test.go)
		if size == 0 {
			return
		}
		x.logf("mmap read %s", fl.name)
		sum, err := mmapRun("read", x.tm.path(fl.name), size, 0, nil)
		x.check(err, "mmap read")
		if sum != fmt.Sprintf("%x", sha256.Sum256(fl.model)) {
			x.fatalf("mmap read of %s differs from the model", fl.name)
		}
	case r < 82: // mmap write
		if size == 0 {
			return
		}
		off := x.rng.Intn(size)
		n := 1 + x.rng.Intn(min(size-off, 64<<10))
		x.logf("mmap write %s %d+%d", fl.name, off, n)
		data := make([]byte, n)
		x.rng.Read(data)
		_, err := mmapRun("write", x.tm.path(fl.name), size, off, data)
		x.check(err, "mmap write")
		copy(fl.model[off:], data)
	case r < 88: // close and reopen
		x.logf("reopen %s", fl.name)
		fl.f.Close()
		x.open(fl)
	case r < 92:
		x.logf("fsync %s", fl.name)
		x.check(fl.f.Sync(), "fsync")
	case r < 95:
		x.logf("sync")
		d, err := os.Open(x.tm.path())
		x.check(err, "open root")
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, d.Fd(), btrfsIocSync, 0)
		d.Close()
		if errno != 0 {
			x.fatalf("BTRFS_IOC_SYNC: %v", errno)
		}
	case r < 97:
		x.logf("compare all")
		x.compareAll()
	default:
		x.logf("remount")
		x.remount()
	}
}

// TestFSX is a seeded fsx-style exerciser: writes, reads, truncates,
// fallocate, punch, copy_file_range (reflinks), mmap reads and writes,
// reopen, fsync, sync and remount, every read compared with a model.
func TestFSX(t *testing.T) {
	needFuse(t)
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay: go test -run TestFSX -seed %d)", seed, seed)
	x := &fsx{t: t, rng: rand.New(rand.NewSource(seed)), seed: seed, img: newImage(t, 1<<30)}
	// the seed also picks the compression of new data
	x.opts = Options{CommitInterval: 2 * time.Second, DirtyLimit: 8 << 20,
		Compress: []string{"", "zstd", "lzo", "zlib"}[x.rng.Intn(4)]}
	t.Logf("compress=%q", x.opts.Compress)
	x.tm = mountImage(t, x.img, x.opts)
	for i := 0; i < 4; i++ {
		fl := &fsxFile{name: fmt.Sprintf("f%d", i)}
		x.open(fl)
		x.files = append(x.files, fl)
	}
	t.Cleanup(func() { // before the unmount (cleanups run last first)
		for _, fl := range x.files {
			fl.f.Close()
		}
	})
	ops := *fsxOps
	if testing.Short() {
		ops = min(ops, 500)
	}
	for x.op = 0; x.op < ops; x.op++ {
		x.step()
	}
	x.compareAll()
	for _, fl := range x.files {
		fl.f.Close()
	}
	finish(t, x.tm, x.img)
}
