package fsops

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var (
	seedFlag = flag.Int64("seed", 0, "seed of TestRandomOps (0: time based)")
	opsFlag  = flag.Int("ops", 0, "operations per configuration in TestRandomOps (0: 3000, 600 with -short)")
)

// mnode is the model of one inode.
type mnode struct {
	mode     uint32
	uid, gid uint32
	rdev     ondisk.DevT
	data     []byte
	target   string
	xattrs   map[string]string
	kids     map[string]*mnode // directories
	subvol   ondisk.ObjectID   // set on the root directory of a subvolume
	readonly bool
	id       ondisk.InodeRef
	times    *[3]time.Time // atime, mtime, ctime when set explicitly and untouched since
}

func (n *mnode) isDir() bool { return n.kids != nil }
func (n *mnode) isReg() bool { return n.mode&item.SIFMT == item.SIFREG }

// model is the expected content of the whole filesystem.
type model struct {
	root *mnode
}

// place is a name in a directory of the model, with where it lives.
type place struct {
	dir      *mnode
	dirID    ondisk.InodeRef
	name     string
	node     *mnode
	path     string
	readonly bool
}

// walk lists every directory (with name == "") and every name, depth first.
func (m *model) walk(fn func(p place)) {
	var rec func(d *mnode, path string, ro bool)
	rec = func(d *mnode, path string, ro bool) {
		fn(place{node: d, dirID: d.id, path: path, readonly: ro})
		names := make([]string, 0, len(d.kids))
		for k := range d.kids {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			c := d.kids[k]
			cro := ro
			if c.subvol != 0 {
				cro = c.readonly
			}
			fn(place{dir: d, dirID: d.id, name: k, node: c, path: path + "/" + k, readonly: ro})
			if c.isDir() {
				rec(c, path+"/"+k, cro)
			}
		}
	}
	rec(m.root, "", false)
}

// nlinks counts the names of every node.
func (m *model) nlinks() map[*mnode]int {
	n := map[*mnode]int{}
	m.walk(func(p place) {
		if p.name != "" {
			n[p.node]++
		}
	})
	return n
}

// describe renders the model as path -> description.
func (m *model) describe() map[string]string {
	links := m.nlinks()
	out := map[string]string{}
	m.walk(func(p place) {
		if p.name == "" {
			return
		}
		n := p.node
		nl := links[n]
		if n.isDir() {
			nl = 1
		}
		var body string
		switch {
		case n.isReg():
			body = fmt.Sprintf("size %d sha %x", len(n.data), sha256.Sum256(n.data))
		case n.mode&item.SIFMT == item.SIFLNK:
			body = "-> " + n.target
		case n.rdev != 0:
			body = fmt.Sprintf("rdev %d", n.rdev)
		}
		out[p.path] = describeLine(n.mode, n.uid, n.gid, uint32(nl), body, n.xattrs)
	})
	return out
}

func describeLine(mode, uid, gid, nlink uint32, body string, xattrs map[string]string) string {
	var xs []string
	for k, v := range xattrs {
		xs = append(xs, fmt.Sprintf("%s=%x", k, v))
	}
	sort.Strings(xs)
	return fmt.Sprintf("mode %o uid %d gid %d nlink %d %s xattrs [%s]", mode, uid, gid, nlink, body,
		strings.Join(xs, " "))
}

// publicReader, when set (by a test file of package fsops_test), reads an
// image with the public gobtrfs package and describes it as model.describe.
var publicReader func(img string) (map[string]string, error)

// rig runs random operations on an image and on the model side by side.
type rig struct {
	t    *testing.T
	r    *rand.Rand
	img  string
	opts Options
	f    *FS
	m    *model
	ss   int
	nops int
	log  []string

	// noSpace lets operations fail with ENOSPC (a filesystem run full):
	// they must then change nothing; deletions must never fail so.
	noSpace  bool
	noSpaces map[string]int // ENOSPC answers per operation
}

func (g *rig) logf(format string, args ...any) {
	g.log = append(g.log, fmt.Sprintf(format, args...))
	if len(g.log) > 30 {
		g.log = g.log[1:]
	}
}

func (g *rig) fatalf(format string, args ...any) {
	g.t.Helper()
	g.t.Fatalf("op %d: %s\nlast operations:\n  %s", g.nops, fmt.Sprintf(format, args...), strings.Join(g.log, "\n  "))
}

// expect compares an operation's error with the model's verdict. On a
// filesystem run full (noSpace), ENOSPC is accepted where success is
// expected, and expect returns false: the operation must have changed
// nothing.
func (g *rig) expect(what string, err error, want syscall.Errno) bool {
	g.t.Helper()
	if g.noSpace {
		if aerr := g.f.tx.Aborted(); aerr != nil {
			g.fatalf("%s: filesystem aborted: %v", what, aerr)
		}
		if want == 0 && errors.Is(err, syscall.ENOSPC) {
			g.noSpaces[strings.Fields(what)[0]]++
			g.logf("  -> ENOSPC")
			return false
		}
	}
	return g.expectStrict(what, err, want)
}

// expectStrict is expect for operations that free space: ENOSPC is a failure.
func (g *rig) expectStrict(what string, err error, want syscall.Errno) bool {
	g.t.Helper()
	if want == 0 {
		if err != nil {
			g.fatalf("%s: %v", what, err)
		}
		return true
	}
	if !errors.Is(err, want) {
		g.fatalf("%s: got %v, want %v", what, err, want)
	}
	return false
}

// pick chooses among the places that match.
func (g *rig) pick(match func(p place) bool) (place, bool) {
	var ps []place
	g.m.walk(func(p place) {
		if match(p) {
			ps = append(ps, p)
		}
	})
	if len(ps) == 0 {
		return place{}, false
	}
	return ps[g.r.Intn(len(ps))], true
}

func (g *rig) pickDir(writable bool) (place, bool) {
	return g.pick(func(p place) bool {
		if p.name != "" {
			return false
		}
		ro := p.readonly
		if p.node.subvol != 0 {
			ro = p.node.readonly
		}
		return !writable || !ro
	})
}

func (g *rig) pickFile(writable bool) (place, bool) {
	return g.pick(func(p place) bool {
		return p.name != "" && p.node.isReg() && (!writable || !p.readonly)
	})
}

func (g *rig) newName(d *mnode) string {
	for {
		var n string
		switch g.r.Intn(10) {
		case 0:
			n = strings.Repeat(string(rune('a'+g.r.Intn(26))), 1+g.r.Intn(200))
		default:
			n = fmt.Sprintf("n%d", g.r.Intn(1000))
		}
		if _, ok := d.kids[n]; !ok || g.r.Intn(8) == 0 {
			return n
		}
	}
}

func (g *rig) size() int {
	switch g.r.Intn(6) {
	case 0:
		return 1 + g.r.Intn(100)
	case 1, 2:
		return 1 + g.r.Intn(3*g.ss)
	case 3, 4:
		return 1 + g.r.Intn(40*g.ss)
	}
	return 1 + g.r.Intn(300<<10)
}

func (g *rig) offset(size int) int {
	switch g.r.Intn(5) {
	case 0:
		return 0
	case 1:
		return size
	case 2:
		return g.r.Intn(size+1) / g.ss * g.ss
	}
	return g.r.Intn(size + 2*g.ss + 1)
}

func (g *rig) randomData(n int) []byte {
	b := make([]byte, n)
	switch g.r.Intn(3) {
	case 0:
		g.r.Read(b)
	case 1:
		c := byte(g.r.Intn(256))
		for i := range b {
			b[i] = c
		}
	default: // compressible text
		for i := range b {
			b[i] = "abcdefgh"[(i/7+int(b[0]))%8]
		}
	}
	return b
}

func ensure(b []byte, n int) []byte {
	if n > len(b) {
		b = append(b, make([]byte, n-len(b))...)
	}
	return b
}

// weights of the operations.
var opWeights = []struct {
	name string
	w    int
}{
	{"create", 10}, {"mkdir", 5}, {"symlink", 3}, {"mknod", 2}, {"write", 25}, {"truncate", 6},
	{"fallocate", 4}, {"punch", 4}, {"clone", 5}, {"rename", 8}, {"link", 4}, {"unlink", 5},
	{"rmdir", 2}, {"setxattr", 4}, {"rmxattr", 2}, {"setattr", 3}, {"snapshot", 1}, {"subvol", 1},
	{"delsubvol", 1}, {"readonly", 1},
}

// fullWeights adds large writes that fill a small filesystem.
var fullWeights = append([]struct {
	name string
	w    int
}{{"fill", 6}}, opWeights...)

func (g *rig) step() {
	ws := opWeights
	if g.noSpace {
		ws = fullWeights
	}
	total := 0
	for _, o := range ws {
		total += o.w
	}
	x := g.r.Intn(total)
	for _, o := range ws {
		if x < o.w {
			g.do(o.name)
			return
		}
		x -= o.w
	}
}

func (g *rig) touch(n *mnode) { n.times = nil }

// unchanged checks a file an operation refused to change.
func (g *rig) unchanged(p place) {
	g.t.Helper()
	got, err := g.f.ReadAt(p.node.id, 0, len(p.node.data)+1)
	if err != nil {
		g.fatalf("read %s after a refused change: %v", p.path, err)
	}
	if !bytes.Equal(got, p.node.data) {
		g.fatalf("%s changed although the operation failed (size %d, model %d)", p.path, len(got), len(p.node.data))
	}
	checkNBytes(g.t, g.f, p.node.id)
}

func (g *rig) do(op string) {
	f, r := g.f, g.r
	uid, gid := uint32(r.Intn(3)*1000), uint32(r.Intn(3)*100)
	switch op {
	case "create", "mkdir", "symlink", "mknod":
		d, ok := g.pickDir(true)
		if !ok {
			return
		}
		name := g.newName(d.node)
		_, exists := d.node.kids[name]
		want := syscall.Errno(0)
		if exists {
			want = syscall.EEXIST
		}
		n := &mnode{uid: uid, gid: gid, xattrs: map[string]string{}}
		var id ondisk.InodeRef
		var err error
		switch op {
		case "create":
			n.mode = item.SIFREG | uint32(r.Intn(0o1000))
			id, err = f.Create(d.node.id, name, n.mode, uid, gid, 0)
		case "mkdir":
			n.mode = item.SIFDIR | uint32(r.Intn(0o1000))
			n.kids = map[string]*mnode{}
			id, err = f.Mkdir(d.node.id, name, n.mode, uid, gid)
		case "symlink":
			n.mode = item.SIFLNK | 0o777
			n.target = strings.Repeat("t/", r.Intn(60)) + fmt.Sprint(r.Intn(100))
			id, err = f.Symlink(d.node.id, name, n.target, uid, gid)
		case "mknod":
			n.mode = []uint32{item.SIFIFO, item.SIFCHR, item.SIFBLK, item.SIFSOCK}[r.Intn(4)] | 0o640
			if n.mode&item.SIFMT == item.SIFCHR || n.mode&item.SIFMT == item.SIFBLK {
				n.rdev = ondisk.MakeDevT(uint32(r.Intn(300)), uint32(r.Intn(1<<20)))
			}
			id, err = f.Create(d.node.id, name, n.mode, uid, gid, n.rdev)
		}
		g.logf("%s %s/%s", op, d.path, name)
		if g.expect(op+" "+d.path+"/"+name, err, want) {
			n.id = id
			d.node.kids[name] = n
			g.touch(d.node)
		}
	case "write":
		p, ok := g.pickFile(true)
		if !ok {
			return
		}
		off := g.offset(len(p.node.data))
		data := g.randomData(g.size())
		g.logf("write %s %d+%d", p.path, off, len(data))
		_, err := f.WriteAt(p.node.id, uint64(off), data)
		if !g.expect("write "+p.path, err, 0) {
			g.unchanged(p)
			return
		}
		p.node.data = ensure(p.node.data, off+len(data))
		copy(p.node.data[off:], data)
		g.touch(p.node)
	case "fill":
		p, ok := g.pickFile(true)
		if !ok {
			return
		}
		off := len(p.node.data)
		if g.r.Intn(3) == 0 {
			off = g.offset(len(p.node.data))
		}
		data := g.randomData(1<<20 + g.r.Intn(7<<20))
		g.logf("fill %s %d+%d", p.path, off, len(data))
		_, err := f.WriteAt(p.node.id, uint64(off), data)
		if !g.expect("fill "+p.path, err, 0) {
			g.unchanged(p)
			return
		}
		p.node.data = ensure(p.node.data, off+len(data))
		copy(p.node.data[off:], data)
		g.touch(p.node)
	case "truncate":
		p, ok := g.pickFile(true)
		if !ok {
			return
		}
		n := g.r.Intn(2*len(p.node.data) + 3*g.ss)
		g.logf("truncate %s %d", p.path, n)
		if !g.expect("truncate "+p.path, f.Truncate(p.node.id, uint64(n)), 0) {
			g.unchanged(p)
			return
		}
		if n < len(p.node.data) {
			p.node.data = p.node.data[:n]
		}
		p.node.data = ensure(p.node.data, n)
		g.touch(p.node)
	case "fallocate", "punch":
		p, ok := g.pickFile(true)
		if !ok {
			return
		}
		off := g.offset(len(p.node.data))
		n := 1 + g.r.Intn(g.size())
		mode := uint32(0)
		if op == "punch" {
			mode = FallocPunchHole | FallocKeepSize
		} else if r.Intn(2) == 0 {
			mode = FallocKeepSize
		}
		g.logf("fallocate %s %#x %d+%d", p.path, mode, off, n)
		if !g.expect("fallocate "+p.path, f.Fallocate(p.node.id, mode, uint64(off), uint64(n)), 0) {
			g.unchanged(p)
			return
		}
		end := off + n
		if op == "punch" {
			if off < len(p.node.data) {
				clear(p.node.data[off:min(end, len(p.node.data))])
			}
		} else if mode == 0 {
			p.node.data = ensure(p.node.data, end)
		}
		g.touch(p.node)
	case "clone":
		src, ok1 := g.pickFile(false)
		dst, ok2 := g.pickFile(true)
		if !ok1 || !ok2 || len(src.node.data) == 0 {
			return
		}
		ss := g.ss
		srcLen := len(src.node.data)
		so := g.r.Intn(srcLen) / ss * ss
		var n int
		if g.r.Intn(3) == 0 {
			n = srcLen - so // to EOF, maybe unaligned
		} else {
			n = (1 + g.r.Intn((srcLen-so+ss-1)/ss)) * ss
			if so+n > srcLen {
				n = srcLen - so
			}
		}
		do := g.r.Intn(len(dst.node.data)+ss) / ss * ss
		if n%ss != 0 && do+n < len(dst.node.data) {
			do = (len(dst.node.data) - n + ss) / ss * ss
		}
		if src.node == dst.node && so < do+n && do < so+n {
			return
		}
		g.logf("clone %s %d+%d -> %s %d", src.path, so, n, dst.path, do)
		if !g.expect("clone", f.Clone(src.node.id, uint64(so), dst.node.id, uint64(do), uint64(n)), 0) {
			g.unchanged(dst)
			return
		}
		data := append([]byte(nil), src.node.data[so:so+n]...)
		dst.node.data = ensure(dst.node.data, do+n)
		copy(dst.node.data[do:], data)
		g.touch(dst.node)
	case "rename":
		g.rename()
	case "link":
		src, ok := g.pick(func(p place) bool { return p.name != "" && !p.node.isDir() && !p.readonly })
		if !ok {
			return
		}
		d, ok := g.pickDir(true)
		if !ok {
			return
		}
		name := g.newName(d.node)
		want := syscall.Errno(0)
		switch {
		case d.node.id.Root != src.node.id.Root:
			want = syscall.EXDEV
		case d.node.kids[name] != nil:
			want = syscall.EEXIST
		}
		g.logf("link %s %s/%s", src.path, d.path, name)
		if g.expect("link "+src.path+" "+d.path+"/"+name, f.Link(src.node.id, d.node.id, name), want) {
			d.node.kids[name] = src.node
			g.touch(d.node)
			g.touch(src.node)
		}
	case "unlink", "rmdir":
		p, ok := g.pick(func(p place) bool {
			return p.name != "" && !p.readonly && (p.node.isDir() == (op == "rmdir"))
		})
		if !ok {
			return
		}
		want := syscall.Errno(0)
		if op == "rmdir" && len(p.node.kids) > 0 {
			want = syscall.ENOTEMPTY
		}
		if op == "rmdir" && p.node.subvol != 0 && (len(p.node.kids) > 0 || g.hasSubvols(p.node)) {
			want = syscall.ENOTEMPTY
		}
		g.logf("%s %s", op, p.path)
		var err error
		if op == "rmdir" {
			err = f.Rmdir(p.dirID, p.name)
		} else {
			err = f.Unlink(p.dirID, p.name)
		}
		if g.expectStrict(op+" "+p.path, err, want) {
			delete(p.dir.kids, p.name)
			g.touch(p.dir)
			g.touch(p.node)
		}
	case "setxattr", "rmxattr":
		p, ok := g.pick(func(p place) bool {
			return p.name != "" && !p.readonly && p.node.subvol == 0
		})
		if !ok {
			return
		}
		name := fmt.Sprintf("user.x%d", g.r.Intn(6))
		if !p.node.isReg() && !p.node.isDir() {
			name = fmt.Sprintf("trusted.x%d", g.r.Intn(3)) // Linux allows user.* on files and dirs only
		}
		if op == "setxattr" {
			val := string(g.randomData(g.r.Intn(300)))
			g.logf("setxattr %s %s", p.path, name)
			if !g.expect("setxattr "+p.path, f.SetXattr(p.node.id, name, []byte(val), 0), 0) {
				return
			}
			p.node.xattrs[name] = val
		} else {
			_, has := p.node.xattrs[name]
			want := syscall.Errno(0)
			if !has {
				want = syscall.ENODATA
			}
			g.logf("rmxattr %s %s", p.path, name)
			g.expectStrict("removexattr "+p.path, f.RemoveXattr(p.node.id, name), want)
			delete(p.node.xattrs, name)
		}
		g.touch(p.node)
	case "setattr":
		p, ok := g.pick(func(p place) bool { return p.name != "" && !p.readonly && p.node.subvol == 0 })
		if !ok {
			return
		}
		n := p.node
		a := SetAttr{Valid: SetMode | SetUID | SetGID | SetAtime | SetMtime | SetCtime,
			Mode: uint32(r.Intn(0o10000)), UID: uid, GID: gid,
			Atime: time.Unix(r.Int63n(2e9), r.Int63n(1e9)), Mtime: time.Unix(r.Int63n(2e9), r.Int63n(1e9)),
			Ctime: time.Unix(r.Int63n(2e9), r.Int63n(1e9))}
		if n.mode&item.SIFMT == item.SIFLNK {
			a.Mode = 0o777
		}
		g.logf("setattr %s", p.path)
		_, err := f.Setattr(n.id, a)
		if !g.expect("setattr "+p.path, err, 0) {
			return
		}
		n.mode = n.mode&item.SIFMT | a.Mode
		n.uid, n.gid = uid, gid
		n.times = &[3]time.Time{a.Atime, a.Mtime, a.Ctime}
	case "snapshot":
		src, ok := g.pick(func(p place) bool {
			return (p.name == "" && p.path == "") || (p.name != "" && p.node.subvol != 0)
		})
		if !ok || g.hasSubvols(src.node) {
			return
		}
		d, ok := g.pickDir(true)
		if !ok {
			return
		}
		name := g.newName(d.node)
		want := syscall.Errno(0)
		if d.node.kids[name] != nil {
			want = syscall.EEXIST
		}
		ro := g.r.Intn(3) == 0
		g.logf("snapshot %s -> %s/%s ro=%v", src.path, d.path, name, ro)
		id, err := f.Snapshot(src.node.id.Root, d.node.id, name, ro)
		if g.expect("snapshot", err, want) {
			c := copyTree(src.node, id, map[*mnode]*mnode{})
			c.subvol, c.readonly = id, ro
			d.node.kids[name] = c
			g.touch(d.node)
		}
	case "subvol":
		d, ok := g.pickDir(true)
		if !ok {
			return
		}
		name := g.newName(d.node)
		want := syscall.Errno(0)
		if d.node.kids[name] != nil {
			want = syscall.EEXIST
		}
		g.logf("subvolume create %s/%s", d.path, name)
		id, err := f.CreateSubvolume(d.node.id, name, 0o755, uid, gid)
		if g.expect("create subvolume", err, want) {
			d.node.kids[name] = &mnode{mode: item.SIFDIR | 0o755, uid: uid, gid: gid, xattrs: map[string]string{},
				kids: map[string]*mnode{}, subvol: id, id: ondisk.InodeRef{Root: id, Ino: RootDirIno}}
			g.touch(d.node)
		}
	case "delsubvol":
		p, ok := g.pick(func(p place) bool { return p.name != "" && p.node.subvol != 0 && !p.readonly })
		if !ok {
			return
		}
		want := syscall.Errno(0)
		if g.hasSubvols(p.node) {
			want = syscall.ENOTEMPTY
		}
		g.logf("subvolume delete %s", p.path)
		if g.expectStrict("delete subvolume "+p.path, f.DeleteSubvolume(p.dirID, p.name), want) {
			delete(p.dir.kids, p.name)
			g.touch(p.dir)
		}
	case "readonly":
		d, ok := g.pick(func(p place) bool { return p.name != "" && p.node.subvol != 0 && p.node.readonly })
		if !ok {
			return
		}
		_, err := f.Create(d.node.id, "nope", 0o644, 0, 0, 0)
		g.expect("create in read-only "+d.path, err, syscall.EROFS)
	}
}

// hasSubvols reports a subvolume linked below n (n itself excluded).
func (g *rig) hasSubvols(n *mnode) bool {
	for _, c := range n.kids {
		if c.subvol != 0 || (c.isDir() && g.hasSubvols(c)) {
			return true
		}
	}
	return false
}

// copyTree copies a subvolume's model for a snapshot with tree id.
func copyTree(n *mnode, root ondisk.ObjectID, seen map[*mnode]*mnode) *mnode {
	if c, ok := seen[n]; ok {
		return c
	}
	c := *n
	c.id = ondisk.InodeRef{Root: root, Ino: n.id.Ino}
	c.data = append([]byte(nil), n.data...)
	c.xattrs = map[string]string{}
	for k, v := range n.xattrs {
		c.xattrs[k] = v
	}
	c.subvol, c.readonly = 0, false
	seen[n] = &c
	if n.kids != nil {
		c.kids = map[string]*mnode{}
		for k, v := range n.kids {
			c.kids[k] = copyTree(v, root, seen)
		}
	}
	return &c
}

// rename picks two names, works out what the filesystem must answer, and
// checks it.
func (g *rig) rename() {
	src, ok := g.pick(func(p place) bool { return p.name != "" && !p.readonly })
	if !ok {
		return
	}
	d, ok := g.pickDir(true)
	if !ok {
		return
	}
	if g.r.Intn(4) != 0 && d.node.id.Root != src.dirID.Root {
		return // mostly within one subvolume
	}
	var dname string
	if len(d.node.kids) > 0 && g.r.Intn(2) == 0 {
		names := make([]string, 0, len(d.node.kids))
		for k := range d.node.kids {
			names = append(names, k)
		}
		sort.Strings(names)
		dname = names[g.r.Intn(len(names))]
	} else {
		dname = g.newName(d.node)
	}
	var flags uint32
	switch g.r.Intn(6) {
	case 0:
		flags = RenameNoReplace
	case 1, 2:
		flags = RenameExchange
	}
	dst := d.node.kids[dname]
	sn := src.node
	want := syscall.Errno(0)
	noop := false
	switch {
	case d.node.id.Root != src.dirID.Root:
		want = syscall.EXDEV
	case dst == nil && flags == RenameExchange:
		want = syscall.ENOENT
	case dst != nil && flags == RenameNoReplace:
		want = syscall.EEXIST
	case dst == sn:
		noop = true
	case dst != nil && flags != RenameExchange && sn.isDir() && !dst.isDir():
		want = syscall.ENOTDIR
	case dst != nil && flags != RenameExchange && !sn.isDir() && dst.isDir():
		want = syscall.EISDIR
	case dst != nil && flags != RenameExchange && dst.subvol != 0:
		want = syscall.EBUSY
	case dst != nil && flags != RenameExchange && len(dst.kids) > 0:
		want = syscall.ENOTEMPTY
	case sn.isDir() && sn.subvol == 0 && inside(sn, d.node):
		want = syscall.EINVAL
	case flags == RenameExchange && dst.isDir() && dst.subvol == 0 && inside(dst, src.dir):
		want = syscall.EINVAL
	}
	g.logf("rename %s -> %s/%s flags %d", src.path, d.path, dname, flags)
	err := g.f.Rename(src.dirID, src.name, d.node.id, dname, flags)
	if !g.expect(fmt.Sprintf("rename %s -> %s/%s flags %d", src.path, d.path, dname, flags), err, want) || noop {
		return
	}
	if flags == RenameExchange {
		src.dir.kids[src.name], d.node.kids[dname] = dst, sn
		g.touch(dst)
	} else {
		if dst != nil {
			g.touch(dst) // loses a link: ctime
		}
		delete(src.dir.kids, src.name)
		d.node.kids[dname] = sn
	}
	g.touch(sn)
	g.touch(src.dir)
	g.touch(d.node)
}

// inside reports whether dir is n or below n (within n's subvolume).
func inside(n, dir *mnode) bool {
	if n == dir {
		return true
	}
	for _, c := range n.kids {
		if c.isDir() && c.subvol == 0 && inside(c, dir) {
			return true
		}
	}
	return false
}

// verify reads the whole filesystem back through FS and compares it with
// the model, including inode identity of hard links and explicit times.
func (g *rig) verify(what string) {
	g.t.Helper()
	links := g.m.nlinks()
	got := map[string]string{}
	var walk func(dir ondisk.InodeRef, n *mnode, path string)
	walk = func(dir ondisk.InodeRef, n *mnode, path string) {
		ents, err := g.f.ReadDir(dir)
		if err != nil {
			g.fatalf("%s: readdir %s: %v", what, path, err)
		}
		for _, e := range ents {
			p := path + "/" + e.Name
			id := e.Target(dir.Root)
			x, err := g.f.Stat(id)
			if err != nil {
				g.fatalf("%s: stat %s: %v", what, p, err)
			}
			mn := n.kids[e.Name]
			if mn != nil && mn.id != id {
				g.fatalf("%s: %s is inode %v, model says %v", what, p, id, mn.id)
			}
			var body string
			switch {
			case isReg(x.Mode):
				data, err := g.f.ReadAt(id, 0, int(x.Size))
				if err != nil {
					g.fatalf("%s: read %s: %v", what, p, err)
				}
				body = fmt.Sprintf("size %d sha %x", x.Size, sha256.Sum256(data))
				if mn != nil && !bytes.Equal(data, mn.data) {
					i := 0
					for i < len(data) && i < len(mn.data) && data[i] == mn.data[i] {
						i++
					}
					g.fatalf("%s: %s differs from byte %d (size %d, model %d)", what, p, i, len(data), len(mn.data))
				}
				checkNBytes(g.t, g.f, id)
			case isLnk(x.Mode):
				target, err := g.f.Readlink(id)
				if err != nil {
					g.fatalf("%s: readlink %s: %v", what, p, err)
				}
				body = "-> " + target
			case x.Rdev != 0:
				body = fmt.Sprintf("rdev %d", x.Rdev)
			}
			names, err := g.f.ListXattr(id)
			if err != nil {
				g.fatalf("%s: listxattr %s: %v", what, p, err)
			}
			xs := map[string]string{}
			for _, name := range names {
				v, err := g.f.GetXattr(id, name)
				if err != nil {
					g.fatalf("%s: getxattr %s %s: %v", what, p, name, err)
				}
				xs[name] = string(v)
			}
			got[p] = describeLine(x.Mode, x.UID, x.GID, x.NLink, body, xs)
			if mn != nil && mn.times != nil {
				ts := [3]item.Timespec{item.TimespecOf(mn.times[0]), item.TimespecOf(mn.times[1]), item.TimespecOf(mn.times[2])}
				if ts != [3]item.Timespec{x.Atime, x.Mtime, x.Ctime} {
					g.fatalf("%s: %s times %v %v %v, model %v", what, p, x.Atime, x.Mtime, x.Ctime, ts)
				}
			}
			if isDir(x.Mode) {
				if mn == nil {
					mn = &mnode{}
				}
				walk(id, mn, p)
			}
		}
	}
	walk(TopLevel, g.m.root, "")
	_ = links
	g.compare(what, "fsops", got)
}

func (g *rig) compare(what, reader string, got map[string]string) {
	g.t.Helper()
	if diffs := testutil.DiffMaps(g.m.describe(), got); len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = diffs[:20]
		}
		g.fatalf("%s: %s view differs from the model:\n  %s", what, reader, strings.Join(diffs, "\n  "))
	}
}

// reopen commits, closes, checks the image with btrfs check and the public
// reader, and opens it again.
func (g *rig) reopen() {
	g.t.Helper()
	g.verify("before close")
	if err := g.f.Close(); err != nil {
		g.fatalf("close: %v", err)
	}
	checktest.Image(g.t, g.img)
	if publicReader != nil {
		got, err := publicReader(g.img)
		if err != nil {
			g.fatalf("public reader: %v", err)
		}
		g.compare("after close", "gobtrfs package", got)
	}
	g.f = openImage(g.t, g.img, g.opts)
	g.verify("after reopen")
}

// TestRandomOps runs a seeded random sequence of operations against the
// model on several image layouts. Replay with -seed.
func TestRandomOps(t *testing.T) {
	seed := testutil.Seed(t, *seedFlag)
	nops := *opsFlag
	if nops == 0 {
		nops = 3000
		if testing.Short() {
			nops = 600
		}
	}
	t.Logf("%d operations per layout; public reader check: %v", nops, publicReader != nil)
	layouts := []struct {
		img  imageOpts
		comp compress.Alg
	}{
		{imageOpts{}, compress.None},
		{imageOpts{nodesize: "4096", csum: "xxhash", features: "^no-holes"}, compress.Zstd},
		{imageOpts{csum: "sha256"}, compress.LZO},
		{imageOpts{nodesize: "8192", csum: "blake2", features: "^extref,^no-holes"}, compress.Zlib},
	}
	for i, l := range layouts {
		t.Run(fmt.Sprintf("%s,compress=%s", l.img, l.comp), func(t *testing.T) {
			runRandom(t, seed+int64(i), l.img, Options{Compress: l.comp}, nops)
		})
	}
}

func runRandom(t *testing.T, seed int64, io imageOpts, opts Options, nops int) *rig {
	if io.size == 0 {
		io.size = 1 << 30
	}
	img := newImage(t, io)
	g := &rig{t: t, r: rand.New(rand.NewSource(seed)), img: img, opts: opts}
	g.f = openImage(t, img, opts)
	g.ss = int(g.f.SectorSize())
	x, err := g.f.Stat(TopLevel)
	must(t, err)
	g.m = &model{root: &mnode{mode: x.Mode, uid: x.UID, gid: x.GID, xattrs: map[string]string{},
		kids: map[string]*mnode{}, id: TopLevel, subvol: ondisk.FSTreeObjectID}}
	for g.nops = 0; g.nops < nops; g.nops++ {
		g.step()
		switch {
		case g.nops%400 == 399:
			g.reopen()
		case g.nops%50 == 49:
			if err := g.f.Commit(); err != nil {
				g.fatalf("commit: %v", err)
			}
		}
	}
	g.reopen()
	must(t, g.f.Close())
	checktest.Image(t, img)
	return g
}
