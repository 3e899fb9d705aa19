package treelog_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var seedFlag = flag.Int64("seed", 0, "seed of the random tests (0: time-based)")

// crashFile is one file of the crash test: every content it had, and the
// first of them that must survive (the last one fsync'd or committed).
type crashFile struct {
	name     string
	id       ondisk.InodeRef
	versions []version
	durable  int // index in versions
}

// version is one state of a crash file: its name and content, or absent
// (before it was created).
type version struct {
	name   string
	data   []byte
	absent bool
}

// TestFsyncCrashPrefixes records every write and flush of a workload of
// overwrites, appends and truncates with fsyncs (and an occasional commit),
// then rebuilds the device at every flush: each prefix must open (our
// replay of its log, btrfs check on the image as left, and, as root, a
// kernel mount with btrfs check after the kernel's replay), and every file
// must hold the content of its last completed fsync or a later one.
func TestFsyncCrashPrefixes(t *testing.T) {
	testutil.NeedProgs(t)
	seed := testutil.Seed(t, *seedFlag)
	r := rand.New(rand.NewSource(seed))
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 256<<20)
	base, err := os.ReadFile(img)
	mustT(t, err)
	rec := blockdev.NewRecording(base)
	f, err := fsops.OpenDevice(rec, fsops.Options{})
	mustT(t, err)
	files := make([]*crashFile, 3)
	for i := range files {
		name := fmt.Sprintf("f%d", i)
		id, err := f.Create(topDir, name, 0o100644, 0, 0, 0)
		mustT(t, err)
		data := bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1))
		_, err = f.WriteAt(id, 0, data)
		mustT(t, err)
		files[i] = &crashFile{name: name, id: id, versions: []version{{name: name, data: data}}}
	}
	mustT(t, f.Commit())
	// done[k] is the number of recorded operations when the k-th durable
	// point (fsync or commit) returned, and what it made durable.
	type point struct {
		ops     int
		durable []int
	}
	var points []point
	mark := func() {
		p := point{ops: len(rec.Ops())}
		for _, cf := range files {
			p.durable = append(p.durable, cf.durable)
		}
		points = append(points, p)
	}
	// A file created after a point is absent (version 0) there.
	mark()
	steps := 10
	if testing.Short() {
		steps = 5
	}
	for s := 0; s < steps; s++ {
		cf := files[r.Intn(len(files))]
		last := cf.versions[len(cf.versions)-1]
		cur := append([]byte(nil), last.data...)
		name := last.name
		switch r.Intn(5) {
		case 0: // overwrite
			off := r.Intn(len(cur) + 1)
			b := bytes.Repeat([]byte{byte('A' + s)}, 1+r.Intn(9000))
			_, err = f.WriteAt(cf.id, uint64(off), b)
			cur = append(cur[:off], append(b, cur[min(len(cur), off+len(b)):]...)...)
		case 1: // append
			b := bytes.Repeat([]byte{byte('k' + s)}, 1+r.Intn(20000))
			_, err = f.WriteAt(cf.id, uint64(len(cur)), b)
			cur = append(cur, b...)
		case 2: // truncate
			n := r.Intn(len(cur) + 1)
			err = f.Truncate(cf.id, uint64(n))
			cur = cur[:n]
		case 3: // a new file
			nm := fmt.Sprintf("new%d", s)
			b := bytes.Repeat([]byte{byte('n' + s)}, 1+r.Intn(12000))
			cf = &crashFile{name: nm, versions: []version{{name: nm, absent: true}}}
			if cf.id, err = f.Create(topDir, nm, 0o100644, 0, 0, 0); err == nil {
				_, err = f.WriteAt(cf.id, 0, b)
			}
			files = append(files, cf)
			cur, name = b, nm
		case 4: // a rename
			name = fmt.Sprintf("%s.r%d", cf.name, s)
			err = f.Rename(topDir, last.name, topDir, name, 0)
		}
		mustT(t, err)
		cf.versions = append(cf.versions, version{name: name, data: cur})
		if r.Intn(6) == 0 {
			mustT(t, f.Commit())
			for _, o := range files {
				o.durable = len(o.versions) - 1
			}
		} else {
			mustT(t, f.Fsync(cf.id))
			cf.durable = len(cf.versions) - 1
		}
		mark()
	}
	st := f.FsyncStats()
	t.Logf("seed %d: %d ops, %d flushes, fsync stats %+v", seed, len(rec.Ops()), len(rec.Flushes()), st)
	if st.Logged == 0 {
		t.Fatalf("no fsync used the log: %+v", st)
	}
	scratch := filepath.Join(t.TempDir(), "prefix.img")
	kernel := testutil.HaveRootLoop()
	for i, fl := range rec.Flushes() {
		n := fl + 1
		// The durable state is that of the last point completed within n ops.
		var want point
		for _, p := range points {
			if p.ops <= n {
				want = p
			}
		}
		if want.durable == nil {
			continue // before the files were first committed
		}
		what := fmt.Sprintf("flush %d (op %d)", i, n)
		dev := rec.StateAt(n)
		writeImage(t, scratch, dev)
		checktest.Image(t, scratch)
		verifyPrefix(t, what+" ours", files, want.durable, func(name string) ([]byte, error) {
			// (each file's version 0 is its state before the first point it is in)
			return readOurs(rec.StateAt(n), name)
		})
		if kernel {
			dir := testutil.LoopMount(t, scratch, "")
			verifyPrefix(t, what+" kernel", files, want.durable, func(name string) ([]byte, error) {
				return os.ReadFile(filepath.Join(dir, name))
			})
			testutil.Unmount(t, dir)
			checktest.Image(t, scratch)
		}
	}
	mustT(t, f.Close())
}

func writeImage(t *testing.T, path string, dev *blockdev.Memory) {
	out, err := os.Create(path)
	mustT(t, err)
	defer out.Close()
	_, err = dev.WriteTo(out)
	mustT(t, err)
}

// readOurs opens dev with fsops (replaying its log) and reads name.
func readOurs(dev *blockdev.Memory, name string) ([]byte, error) {
	f, err := fsops.OpenDevice(dev, fsops.Options{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	id, ii, err := f.Lookup(topDir, name)
	if err != nil {
		return nil, err
	}
	return f.ReadAt(id, 0, int(ii.Size))
}

// verifyPrefix checks every file holds its durable version or a later one.
func verifyPrefix(t *testing.T, what string, files []*crashFile, durable []int, read func(string) ([]byte, error)) {
	t.Helper()
	for i, cf := range files {
		d := 0 // files created after this point: anything from "absent" on
		if i < len(durable) {
			d = durable[i]
		}
		ok := false
		var seen []string
		for _, v := range cf.versions[d:] {
			got, err := read(v.name)
			switch {
			case v.absent:
				ok = ok || errors.Is(err, fs.ErrNotExist)
			case err == nil:
				ok = ok || bytes.Equal(got, v.data)
			}
			seen = append(seen, fmt.Sprintf("%s: %d bytes %.20q %v", v.name, len(got), got, err))
		}
		if !ok {
			w := cf.versions[d]
			t.Fatalf("%s: file %d: want version %d (%s, absent %v, %d bytes %.30q) or later; have %v", what, i,
				d, w.name, w.absent, len(w.data), w.data, seen)
		}
	}
}
