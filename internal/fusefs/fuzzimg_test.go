package fusefs

import (
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/testutil/fuzzimg"
)

// FuzzMountRead serves each damaged image (fuzzimg.Script over our own
// image of every inode kind) through the mount's read path without a
// kernel: the go-fuse bridge (fs.NewNodeFS) over our nodes over the
// read-only backend, then over the read-write backend, driven with the
// requests the kernel sends for `ls -lR` plus reading every file:
// OPENDIR/READDIR/RELEASEDIR, LOOKUP, GETATTR, OPEN/READ/LSEEK/RELEASE,
// READLINK, LISTXATTR/GETXATTR, STATFS. Any reply is fine; a panic, a hang
// or memory beyond testutil.DefaultFuzzBounds is not.
func FuzzMountRead(f *testing.F) {
	img, err := fuzzimg.Base()
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(fuzzimg.TempDir(f), "fuzz.img")
	for _, s := range img.CoreSeeds() {
		if !fuzzMountKnownBad[s.Name] {
			f.Add(s.Script)
		}
	}
	quiet := log.New(io.Discard, "", 0)
	f.Fuzz(func(t *testing.T, script []byte) {
		testutil.FuzzBound(t, script, func() {
			for _, ro := range []bool{true, false} {
				// the read-write backend may write (orphan cleanup, commit
				// at close): each gets a fresh copy of the damaged image
				if err := img.Apply(script).WriteFile(path); err != nil {
					t.Fatal(err)
				}
				o := Options{ReadOnly: ro, NoDataCsum: fuzzimg.NoVerify(script), Logger: quiet}
				raw, closeFn, err := fuzzServe(path, o)
				if err != nil {
					continue
				}
				bad := fuzzKernelWalk(raw)
				closeFn()
				for _, b := range bad {
					t.Errorf("read-only %v: %s", ro, b)
				}
			}
		})
	})
}

// fuzzMountKnownBad are seeds that fail today (see
// /work/notes/fuzz-findings/README.md); none.
var fuzzMountKnownBad = map[string]bool{}

// fuzzServe opens image as New does, without mounting: the raw FUSE
// filesystem the kernel would talk to, and what closes it.
func fuzzServe(image string, o Options) (fuse.RawFileSystem, func(), error) {
	m := &fsys{log: o.Logger, opts: o}
	if o.ReadOnly {
		b, err := openRO(image, &o, func(string) {})
		if err != nil {
			return nil, nil, err
		}
		m.b = b
	} else {
		r, err := openRW(image, &o, m)
		if err != nil {
			return nil, nil, err
		}
		m.b, m.rw = r, r
		go r.flusher() // Close waits for it
	}
	rootID := m.b.Root()
	m.ids = newInoMap(rootID.Root)
	ra, err := m.b.Getattr(rootID)
	if err != nil {
		m.b.Close()
		return nil, nil, err
	}
	mt := &Mount{Image: image, m: m}
	raw := fs.NewNodeFS(&Node{m: m, id: rootID}, mt.fsOptions(&o, m.stableAttr(rootID, &ra)))
	return raw, func() { m.b.Close() }, nil
}

// fuzzWalkLimit bounds the walk itself (a damaged image may hold many
// names for one directory); file reads are bounded by fuzzReadLimit.
const (
	fuzzWalkLimit = 5000
	fuzzReadLimit = 16 << 20
)

// fuzzKernelWalk sends what `ls -lR` and `cat` of every file send: each
// directory listed, each entry looked up and stat'ed, files read to the
// end, links read, xattrs listed and read. Directories are entered once
// (by the inode number the mount reports), as ls -R does. It returns the
// names READDIR should never have handed the kernel: with '/' or NUL, or
// "." and ".." anywhere but first.
func fuzzKernelWalk(raw fuse.RawFileSystem) (bad []string) {
	var st fuse.StatfsOut
	raw.StatFs(nil, &fuse.InHeader{NodeId: 1}, &st)
	seen := map[uint64]bool{}
	queue := []uint64{1}
	visits := 0
	for len(queue) > 0 && visits < fuzzWalkLimit {
		dir := queue[0]
		queue = queue[1:]
		for i, name := range fuzzReadDir(raw, dir) {
			if visits++; visits >= fuzzWalkLimit {
				break
			}
			if (name == "." || name == "..") && i < 2 {
				continue
			}
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
				bad = append(bad, fmt.Sprintf("READDIR of node %d returned the name %q", dir, name))
				continue
			}
			var out fuse.EntryOut
			if raw.Lookup(nil, &fuse.InHeader{NodeId: dir}, name, &out) != fuse.OK || out.NodeId == 0 {
				continue
			}
			fuzzVisit(raw, out.NodeId, out.Attr.Mode)
			if out.Attr.Mode&syscall.S_IFMT == syscall.S_IFDIR && !seen[out.Attr.Ino] {
				seen[out.Attr.Ino] = true
				queue = append(queue, out.NodeId)
			}
		}
	}
	return bad
}

// fuzzReadDir lists dir with READDIR requests of one page each.
func fuzzReadDir(raw fuse.RawFileSystem, dir uint64) []string {
	h := fuse.InHeader{NodeId: dir}
	var open fuse.OpenOut
	if raw.OpenDir(nil, &fuse.OpenIn{InHeader: h}, &open) != fuse.OK {
		return nil
	}
	defer raw.ReleaseDir(&fuse.ReleaseIn{InHeader: h, Fh: open.Fh})
	var names []string
	buf := make([]byte, 4096)
	off := uint64(0)
	for round := 0; round < fuzzWalkLimit && len(names) < fuzzWalkLimit; round++ {
		clear(buf)
		list := fuse.NewDirEntryList(buf, off)
		if raw.ReadDir(nil, &fuse.ReadIn{InHeader: h, Fh: open.Fh, Offset: off, Size: uint32(len(buf))}, list) != fuse.OK {
			break
		}
		got := parseDirents(buf)
		if len(got) == 0 || list.Offset == off {
			break
		}
		names = append(names, got...)
		off = list.Offset
	}
	return names
}

// parseDirents decodes struct fuse_dirent records (ino, off, namelen,
// type, name padded to 8 bytes) up to the first zero ino.
func parseDirents(b []byte) []string {
	var names []string
	for len(b) >= 24 {
		ino := binary.LittleEndian.Uint64(b)
		n := int(binary.LittleEndian.Uint32(b[16:]))
		if ino == 0 || 24+n > len(b) {
			break
		}
		names = append(names, string(b[24:24+n]))
		b = b[min(len(b), 24+(n+7)&^7):]
	}
	return names
}

// fuzzVisit stats node and reads what its type has.
func fuzzVisit(raw fuse.RawFileSystem, node uint64, mode uint32) {
	h := fuse.InHeader{NodeId: node}
	var ao fuse.AttrOut
	raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: h}, &ao)
	xbuf := make([]byte, 64<<10)
	if sz, s := raw.ListXAttr(nil, &h, xbuf); s == fuse.OK && int(sz) <= len(xbuf) {
		for _, name := range splitNul(xbuf[:sz]) {
			val := make([]byte, 64<<10)
			raw.GetXAttr(nil, &h, name, val)
		}
	}
	switch mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		raw.Readlink(nil, &h)
	case syscall.S_IFREG:
		var open fuse.OpenOut
		if raw.Open(nil, &fuse.OpenIn{InHeader: h, Flags: syscall.O_RDONLY}, &open) != fuse.OK {
			return
		}
		defer raw.Release(nil, &fuse.ReleaseIn{InHeader: h, Fh: open.Fh})
		buf := make([]byte, 128<<10)
		for off := uint64(0); off < fuzzReadLimit; off += uint64(len(buf)) {
			res, s := raw.Read(nil, &fuse.ReadIn{InHeader: h, Fh: open.Fh, Offset: off, Size: uint32(len(buf))}, buf)
			if s != fuse.OK {
				break
			}
			data, s := res.Bytes(buf)
			res.Done()
			if s != fuse.OK || len(data) < len(buf) {
				break
			}
		}
		for _, whence := range []uint32{3, 4} { // SEEK_DATA, SEEK_HOLE
			var lo fuse.LseekOut
			for off, i := uint64(0), 0; i < 64; i++ {
				if raw.Lseek(nil, &fuse.LseekIn{InHeader: h, Fh: open.Fh, Offset: off, Whence: whence}, &lo) != fuse.OK || lo.Offset <= off && i > 0 {
					break
				}
				off = lo.Offset + 4096
			}
		}
	}
}

func splitNul(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		b = b[min(len(b), i+1):]
	}
	return out
}
