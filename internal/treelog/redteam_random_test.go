package treelog_test

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

var rtSteps = flag.Int("rtsteps", 60, "steps of TestRedteamRandom")

// TestRedteamRandom runs random operations of every kind fsops has (names,
// data, xattrs, fallocate, clone, symlinks, exchange) with file and
// directory fsyncs in one transaction; at every few steps the image is
// copied and crashCheck compares both replays; every inode fsync'd and not
// changed since must show its fsync'd content at its fsync'd path.
// Exploratory: runs only with GOBTRFS_REDTEAM=1.
func TestRedteamRandom(t *testing.T) {
	if os.Getenv("GOBTRFS_REDTEAM") == "" {
		t.Skip("exploratory: set GOBTRFS_REDTEAM=1")
	}
	testutil.NeedProgs(t)
	seed := testutil.Seed(t, *seedFlag)
	r := rand.New(rand.NewSource(seed))
	img, f, _ := newLoggedImage(t)
	type synced struct {
		id   ondisk.InodeRef
		path string
		seq  uint64
		ct   item.Timespec
		desc string
	}
	var syncs []synced
	walk := func() (files, dirs []string, ids map[string]ondisk.InodeRef) {
		ids = map[string]ondisk.InodeRef{"": topDir}
		dirs = []string{""}
		var rec func(id ondisk.InodeRef, p string)
		rec = func(id ondisk.InodeRef, p string) {
			ents, err := f.ReadDir(id)
			mustT(t, err)
			sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
			for _, e := range ents {
				q := path.Join(p, e.Name)
				cid, ii, err := f.Lookup(id, e.Name)
				mustT(t, err)
				if cid.Root != topDir.Root {
					continue
				}
				ids[q] = cid
				if ii.Mode&unix.S_IFMT == unix.S_IFDIR {
					dirs = append(dirs, q)
					rec(cid, q)
				} else {
					files = append(files, q)
				}
			}
		}
		rec(topDir, "")
		return
	}
	parentOf := func(ids map[string]ondisk.InodeRef, p string) (ondisk.InodeRef, string) {
		return ids[dirOf(p)], path.Base(p)
	}
	descOf := func(id ondisk.InodeRef) string {
		ii, err := f.Stat(id)
		mustT(t, err)
		xs := map[string]string{}
		names, err := f.ListXattr(id)
		mustT(t, err)
		for _, n := range names {
			v, err := f.GetXattr(id, n)
			mustT(t, err)
			xs[n] = string(v)
		}
		var content []byte
		var target string
		switch ii.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			content, err = f.ReadAt(id, 0, int(ii.Size))
			mustT(t, err)
		case unix.S_IFLNK:
			target, err = f.Readlink(id)
			mustT(t, err)
		}
		return describe(ii.Mode, uint64(ii.NLink), ii.Size, content, target, xs)
	}
	var log []string
	lastGen := f.CommittedGeneration()
	for s := 0; s < *rtSteps; s++ {
		if g := f.CommittedGeneration(); g != lastGen {
			log = append(log, fmt.Sprintf("   (committed: generation %d)", g))
			lastGen = g
		}
		files, dirs, ids := walk()
		pickF := func() string {
			if len(files) == 0 {
				return ""
			}
			return files[r.Intn(len(files))]
		}
		dir := dirs[r.Intn(len(dirs))]
		did := ids[dir]
		any := func() string {
			all := append(append([]string(nil), files...), dirs[1:]...)
			if len(all) == 0 {
				return ""
			}
			return all[r.Intn(len(all))]
		}
		op := r.Intn(22)
		var err error
		what := ""
		switch op {
		case 0, 1:
			name := fmt.Sprintf("f%d", s)
			what = "create " + path.Join(dir, name)
			create(t, f, did, name, bytes.Repeat([]byte{byte('a' + s%26)}, r.Intn(20000)))
		case 2:
			name := fmt.Sprintf("m%d", s)
			what = "mkdir " + path.Join(dir, name)
			mkdir(t, f, did, name)
		case 3:
			name := fmt.Sprintf("s%d", s)
			what = "symlink " + path.Join(dir, name)
			_, err = f.Symlink(did, name, strings.Repeat("t", 1+r.Intn(100)), 0, 0)
		case 4, 5:
			from := any()
			if from == "" {
				continue
			}
			to := path.Join(dir, fmt.Sprintf("r%d", s))
			flags := uint32(0)
			if o := any(); o != "" && r.Intn(2) == 0 {
				to = o
				if r.Intn(2) == 0 {
					flags = fsops.RenameExchange
				}
			}
			what = fmt.Sprintf("rename %s %s %d", from, to, flags)
			sd, sn := parentOf(ids, from)
			td, tn := parentOf(ids, to)
			err = f.Rename(sd, sn, td, tn, flags)
		case 6:
			x := pickF()
			if x == "" {
				continue
			}
			name := fmt.Sprintf("l%d", s)
			what = "link " + x + " " + path.Join(dir, name)
			err = f.Link(ids[x], did, name)
		case 7:
			x := any()
			if x == "" {
				continue
			}
			pd, pn := parentOf(ids, x)
			if strings.Contains(x, "m") && contains(dirs, x) {
				what = "rmdir " + x
				err = f.Rmdir(pd, pn)
			} else {
				what = "unlink " + x
				err = f.Unlink(pd, pn)
			}
		case 8, 9, 10:
			x := pickF()
			if x == "" {
				continue
			}
			off := uint64(r.Intn(40000))
			what = fmt.Sprintf("write %s %d", x, off)
			_, err = f.WriteAt(ids[x], off, bytes.Repeat([]byte{byte('A' + s%26)}, 1+r.Intn(12000)))
		case 11:
			x := pickF()
			if x == "" {
				continue
			}
			sz := uint64(r.Intn(30000))
			what = fmt.Sprintf("truncate %s %d", x, sz)
			err = f.Truncate(ids[x], sz)
		case 12:
			x := pickF()
			if x == "" {
				continue
			}
			off := uint64(r.Intn(8)) * 4096
			mode := []uint32{0, fsops.FallocKeepSize, fsops.FallocPunchHole | fsops.FallocKeepSize, fsops.FallocZeroRange}[r.Intn(4)]
			what = fmt.Sprintf("fallocate %s %#x %d", x, mode, off)
			err = f.Fallocate(ids[x], mode, off, uint64(1+r.Intn(4))*4096)
		case 13:
			x, y := pickF(), pickF()
			if x == "" {
				continue
			}
			what = fmt.Sprintf("clone %s %s", x, y)
			err = f.Clone(ids[x], 0, ids[y], uint64(r.Intn(4))*4096, 0)
		case 14:
			x := any()
			if x == "" {
				x = dir
			}
			if ii, err := f.Stat(ids[x]); err == nil && ii.Mode&unix.S_IFMT == unix.S_IFLNK {
				continue // user xattrs are not allowed on symlinks
			}
			what = "setxattr " + x
			err = f.SetXattr(ids[x], fmt.Sprintf("user.x%d", r.Intn(3)), bytes.Repeat([]byte("v"), r.Intn(200)), 0)
		case 15:
			x := any()
			if x == "" {
				continue
			}
			what = "removexattr " + x
			err = f.RemoveXattr(ids[x], fmt.Sprintf("user.x%d", r.Intn(3)))
		case 16, 17, 18:
			x := pickF()
			if x == "" {
				continue
			}
			what = "fsync " + x
			mustT(t, f.Fsync(ids[x]))
			ii, err := f.Stat(ids[x])
			mustT(t, err)
			syncs = append(syncs, synced{ids[x], x, ii.Sequence, ii.Ctime, descOf(ids[x])})
		case 19, 20:
			what = "fsync dir " + dir
			mustT(t, f.Fsync(did))
		case 21:
			switch r.Intn(16) {
			case 0:
				what = "commit"
				mustT(t, f.Commit())
			case 1:
				// a new mount: caches of free inode numbers and
				// directory indexes start over
				what = "reopen"
				f = reopen(t, img, f)
			default:
				continue
			}
			syncs = nil
		}
		if err != nil {
			what += " (" + err.Error() + ")"
		}
		log = append(log, fmt.Sprintf("%d: %s", s, what))
		if s%6 == 5 || s == *rtSteps-1 {
			want := map[string]string{}
			for _, x := range syncs {
				ii, err := f.Stat(x.id)
				if err != nil || ii.Sequence != x.seq || ii.Ctime != x.ct {
					continue
				}
				want[fmt.Sprintf("#%d", x.id.Ino)] = x.desc
			}
			t.Logf("step %d: committed generation %d, fsync stats %+v", s, f.CommittedGeneration(), f.FsyncStats())
			ok := t.Run(fmt.Sprintf("crash-step-%d", s), func(t *testing.T) { crashCheck(t, img, want) })
			if !ok {
				t.Fatalf("seed %d: workload:\n%s", seed, strings.Join(log, "\n"))
			}
		}
	}
	logStats(t, f)
	if testing.Verbose() {
		t.Logf("workload:\n%s", strings.Join(log, "\n"))
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
