package treelog_test

import (
	"bytes"
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"io/fs"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestFsyncRandomNames runs random name operations (create, mkdir,
// rename within and across directories and over existing names, hard
// links, unlink, rmdir) with writes and file and directory fsyncs in one
// transaction; at some fsyncs the image is copied (the power cut). Each
// copy must pass btrfs check as left, our replay and the kernel's must
// show the same tree, btrfs check must be clean after both, and every file
// fsync'd and not touched since must be there with its fsync'd content.
// Seeded: -seed N replays a run.
func TestFsyncRandomNames(t *testing.T) {
	testutil.NeedProgs(t)
	seed := testutil.Seed(t, *seedFlag)
	r := rand.New(rand.NewSource(seed))
	img, f, _ := newLoggedImage(t)
	type file struct {
		id      ondisk.InodeRef
		path    string
		data    []byte
		durable string // path the last fsync made durable ("" none)
		ddata   []byte
		stable  bool // not changed since that fsync
	}
	var files []*file
	dirs := []string{"", "d"}
	idOf := map[string]ondisk.InodeRef{"": topDir, "d": lookupPath(t, f, "d")}
	pick := func() *file {
		var live []*file
		for _, x := range files {
			if x.path != "" {
				live = append(live, x)
			}
		}
		if len(live) == 0 {
			return nil
		}
		return live[r.Intn(len(live))]
	}
	unstableAll := func() {
		for _, x := range files {
			x.stable = false
		}
	}
	byPath := func(p string) *file {
		for _, x := range files {
			if x.path == p {
				return x
			}
		}
		return nil
	}
	steps := 40
	crashes := 0
	for s := 0; s < steps; s++ {
		dir := dirs[r.Intn(len(dirs))]
		switch op := r.Intn(12); {
		case op == 10 && len(dirs) > 2: // rename a directory (not into itself)
			from := dirs[2+r.Intn(len(dirs)-2)]
			if dir == from || strings.HasPrefix(dir, from+"/") {
				continue
			}
			to := path.Join(dir, fmt.Sprintf("D%d", s))
			mustT(t, f.Rename(idOf[dirOf(from)], path.Base(from), idOf[dir], path.Base(to), 0))
			move := func(p string) string {
				if p == from || strings.HasPrefix(p, from+"/") {
					return to + p[len(from):]
				}
				return p
			}
			for i, d := range dirs {
				dirs[i] = move(d)
			}
			nid := map[string]ondisk.InodeRef{}
			for p, id := range idOf {
				nid[move(p)] = id
			}
			idOf = nid
			for _, x := range files {
				if x.path != "" {
					x.path = move(x.path)
				}
			}
			unstableAll()
		case op == 11 && len(dirs) > 2: // rmdir an empty directory
			k := 2 + r.Intn(len(dirs)-2)
			victim := dirs[k]
			empty := true
			for _, x := range files {
				empty = empty && !strings.HasPrefix(x.path, victim+"/")
			}
			for _, d := range dirs {
				empty = empty && !strings.HasPrefix(d, victim+"/")
			}
			if !empty {
				continue
			}
			mustT(t, f.Rmdir(idOf[dirOf(victim)], path.Base(victim)))
			dirs = append(dirs[:k], dirs[k+1:]...)
			delete(idOf, victim)
		case op < 3 || len(files) == 0: // create + write
			name := fmt.Sprintf("f%d", s)
			p := path.Join(dir, name)
			id, err := f.Create(idOf[dir], name, 0o100644, 0, 0, 0)
			mustT(t, err)
			data := bytes.Repeat([]byte{byte('a' + s%26)}, 1+r.Intn(9000))
			_, err = f.WriteAt(id, 0, data)
			mustT(t, err)
			files = append(files, &file{id: id, path: p, data: data})
		case op == 3: // mkdir
			name := fmt.Sprintf("m%d", s)
			id, err := f.Mkdir(idOf[dir], name, 0o40755, 0, 0)
			mustT(t, err)
			dirs = append(dirs, path.Join(dir, name))
			idOf[path.Join(dir, name)] = id
		case op == 4: // rename a file, maybe over another
			x := pick()
			if x == nil {
				continue
			}
			to := path.Join(dir, fmt.Sprintf("r%d", s))
			if o := pick(); o != nil && o.id != x.id && r.Intn(3) == 0 {
				to = o.path
			}
			err := f.Rename(idOf[dirOf(x.path)], path.Base(x.path), idOf[dirOf(to)], path.Base(to), 0)
			mustT(t, err)
			if o := byPath(to); o != nil {
				o.path, o.stable = "", false
			}
			x.path, x.stable = to, false
		case op == 5: // hard link (tracked as a new file sharing the inode: not checked for content)
			x := pick()
			if x == nil {
				continue
			}
			name := fmt.Sprintf("l%d", s)
			mustT(t, f.Link(x.id, idOf[dir], name))
			x.stable = false
			unstableAll() // both names show each other's writes: keep it simple
			files = append(files, &file{id: x.id, path: path.Join(dir, name), data: x.data})
		case op == 6: // unlink
			x := pick()
			if x == nil {
				continue
			}
			mustT(t, f.Unlink(idOf[dirOf(x.path)], path.Base(x.path)))
			x.path, x.stable = "", false
		case op == 7: // write
			x := pick()
			if x == nil {
				continue
			}
			b := bytes.Repeat([]byte{byte('A' + s%26)}, 1+r.Intn(5000))
			off := r.Intn(len(x.data) + 1)
			_, err := f.WriteAt(x.id, uint64(off), b)
			mustT(t, err)
			for _, o := range files {
				if o.id == x.id {
					nd := append([]byte(nil), o.data...)
					if end := off + len(b); end > len(nd) {
						nd = append(nd, make([]byte, end-len(nd))...)
					}
					copy(nd[off:], b)
					o.data, o.stable = nd, false
				}
			}
		case op == 8: // fsync a file
			x := pick()
			if x == nil {
				continue
			}
			mustT(t, f.Fsync(x.id))
			x.durable, x.ddata, x.stable = x.path, x.data, true
		default: // fsync a directory
			mustT(t, f.Fsync(idOf[dir]))
		}
		if op := s % 8; op == 7 || s == steps-1 {
			crashes++
			crash := copyFile(t, img)
			what := fmt.Sprintf("seed %d step %d", seed, s)
			testutil.CheckImage(t, crash, "--check-data-csum")
			ours := fsopsView(t, copyFile(t, crash))
			for _, x := range files {
				if x.stable && x.durable != "" && x.durable == x.path {
					if got, ok := ours[x.durable]; !ok || got != string(x.ddata) {
						t.Fatalf("%s: fsync'd %s: our replay shows %d bytes (present %v), want %d", what, x.durable, len(got), ok, len(x.ddata))
					}
				}
			}
			if testutil.HaveRootLoop() {
				kern := kernelTree(t, crash)
				if d := testutil.DiffMaps(kern, ours); len(d) > 0 {
					t.Fatalf("%s: our replay differs from the kernel's:\n%s", what, strings.Join(d, "\n"))
				}
				testutil.CheckImage(t, crash, "--check-data-csum")
			}
		}
	}
	st := f.FsyncStats()
	t.Logf("seed %d: %d crash points; fsync stats %+v", seed, crashes, st)
	if st.Logged == 0 {
		t.Fatalf("no fsync used the log: %+v", st)
	}
}

// dirOf is the directory of p as the test names them ("" for the top).
func dirOf(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// fsopsView opens img with fsops (replaying its log) and maps every path
// to its content (files), its target (symlinks) or "dir".
func fsopsView(t *testing.T, img string) map[string]string {
	t.Helper()
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		t.Fatalf("our replay: open %s: %v", img, err)
	}
	defer func() { mustT(t, f.Close()) }()
	view := map[string]string{}
	var walk func(id ondisk.InodeRef, p string)
	walk = func(id ondisk.InodeRef, p string) {
		ents, err := f.ReadDir(id)
		mustT(t, err)
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		for _, e := range ents {
			q := path.Join(p, e.Name)
			cid, ii, err := f.Lookup(id, e.Name)
			mustT(t, err)
			switch ii.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				if cid.Root != id.Root {
					continue // another subvolume: not this test's
				}
				view[q] = "dir"
				walk(cid, q)
			case unix.S_IFREG:
				b, err := f.ReadAt(cid, 0, int(ii.Size))
				mustT(t, err)
				view[q] = string(b)
			default:
				view[q] = fmt.Sprintf("mode %o", ii.Mode)
			}
		}
	}
	walk(topDir, "")
	return view
}

// kernelTree mounts img with the kernel (which replays the log) and maps
// it as fsopsView does.
func kernelTree(t *testing.T, img string) map[string]string {
	t.Helper()
	mnt := testutil.LoopMount(t, img, "")
	defer testutil.Unmount(t, mnt)
	view := map[string]string{}
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		if rel == "." {
			return nil
		}
		if rel == "sv" {
			return filepath.SkipDir // another subvolume
		}
		switch {
		case d.IsDir():
			view[rel] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			view[rel] = string(b)
		default:
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			view[rel] = fmt.Sprintf("mode %o", st.Mode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view
}
