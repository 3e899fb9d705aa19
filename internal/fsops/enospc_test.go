package fsops

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// smallImage makes a 128 MiB filesystem with mkfs.btrfs and extra arguments.
func smallImage(t testing.TB, args ...string) string {
	t.Helper()
	return sizedImage(t, 128<<20, args...)
}

// sizedImage makes a filesystem of size bytes with mkfs.btrfs.
func sizedImage(t testing.TB, size int64, args ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	checktest.Mkfs(t, img, size, args...)
	return img
}

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// kernelVerify mounts img read-only with Linux, when the test may, and
// compares the files of its top level with want.
func kernelVerify(t *testing.T, img string, want map[string][]byte) {
	t.Helper()
	if !testutil.HaveRootLoop() {
		t.Log("no kernel mount check: needs root and loop devices")
		return
	}
	dir := testutil.LoopMount(t, img, "ro")
	defer testutil.Unmount(t, dir)
	ents, err := os.ReadDir(dir)
	must(t, err)
	if len(ents) != len(want) {
		t.Fatalf("kernel sees %d files, want %d", len(ents), len(want))
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("kernel: %v", err)
		}
		if !bytes.Equal(got, w) {
			t.Fatalf("kernel: %s: %d bytes differ from the %d written", name, len(got), len(w))
		}
	}
}

// notAborted fails the test when the filesystem gave up a transaction.
func notAborted(t testing.TB, f *FS) {
	t.Helper()
	if err := f.tx.Aborted(); err != nil {
		t.Fatalf("filesystem aborted: %v", err)
	}
}

// spaceLine describes the block groups for the test log.
func spaceLine(f *FS) string {
	g := f.tx.Groups()
	d, m := g.Space(ondisk.BlockGroupData), g.Space(ondisk.BlockGroupMetadata)
	return fmt.Sprintf("data %d/%d MiB used, metadata %d/%d KiB used, device unallocated %d MiB",
		d.Used>>20, d.Total>>20, m.Used>>10, m.Total>>10, g.Device().Unallocated()>>20)
}

// fillFiles creates files of 1 to 6 MiB written in 1 MiB pieces until a
// write fails with ENOSPC, checking that the failed write changed nothing.
// It returns the content of every file by name.
func fillFiles(t *testing.T, f *FS, r *rand.Rand, prefix string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%03d", prefix, i)
		id, err := f.Create(TopLevel, name, 0o644, 0, 0, 0)
		if err != nil {
			t.Fatalf("create %s on a data-full filesystem: %v", name, err)
		}
		files[name] = nil
		for j, n := 0, 1+r.Intn(6); j < n; j++ {
			chunk := make([]byte, 1<<20-r.Intn(3)*1000)
			r.Read(chunk[:len(chunk)/2]) // half random, half zeros: compressible
			off := uint64(len(files[name]))
			_, err := f.WriteAt(id, off, chunk)
			if err != nil {
				if !isNoSpace(err) {
					t.Fatalf("write %s at %d: %v", name, off, err)
				}
				t.Logf("full after %d files: %v", i+1, err)
				notAborted(t, f)
				if got := readAll(t, f, id); !bytes.Equal(got, files[name]) {
					t.Fatalf("%s: a write that failed with ENOSPC changed the file (size %d, was %d)", name, len(got), len(files[name]))
				}
				checkNBytes(t, f, id)
				return files
			}
			files[name] = append(files[name], chunk...)
		}
		if i%4 == 3 {
			must(t, f.Commit())
		}
	}
}

// verifyFiles compares every file of the top level with want.
func verifyFiles(t *testing.T, f *FS, want map[string][]byte) {
	t.Helper()
	ents, err := f.ReadDir(TopLevel)
	must(t, err)
	if len(ents) != len(want) {
		t.Fatalf("%d files, want %d", len(ents), len(want))
	}
	for _, e := range ents {
		w, ok := want[e.Name]
		if !ok {
			t.Fatalf("unexpected file %s", e.Name)
		}
		id := e.Target(TopLevel.Root)
		if got := readAll(t, f, id); !bytes.Equal(got, w) {
			t.Fatalf("%s: %d bytes differ from the %d written", e.Name, len(got), len(w))
		}
		checkNBytes(t, f, id)
	}
}

func total(files map[string][]byte) (n int) {
	for _, b := range files {
		n += len(b)
	}
	return n
}

// TestENOSPCData fills a 128 MiB filesystem with file data until a write
// fails with ENOSPC: the failed write changes nothing and the filesystem
// keeps working; after a commit everything written is there and both
// checkers find the image clean; deleting every file on the full filesystem
// works, and refilling stores about as much again.
func TestENOSPCData(t *testing.T) {
	layouts := []struct {
		name string
		args []string
		comp compress.Alg
	}{
		{"default", nil, compress.None},
		{"metadata-single,zstd", []string{"-m", "single"}, compress.Zstd},
		{"nodesize-4k,no-no-holes", []string{"--nodesize", "4096", "-O", "^no-holes"}, compress.None},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			img := smallImage(t, l.args...)
			opts := Options{Compress: l.comp}
			r := rand.New(rand.NewSource(1))
			f := openImage(t, img, opts)
			first := fillFiles(t, f, r, "a")
			// More on the full filesystem: data writes fail, small
			// (inline) files still go to metadata.
			id, err := f.Create(TopLevel, "small", 0o644, 0, 0, 0)
			must(t, err)
			_, err = f.WriteAt(id, 0, []byte("still fits inline"))
			must(t, err)
			first["small"] = []byte("still fits inline")
			_, err = f.WriteAt(id, 1<<20, make([]byte, 4<<20))
			if !isNoSpace(err) {
				t.Fatalf("4 MiB write on a full filesystem: %v, want ENOSPC", err)
			}
			err = f.Fallocate(id, 0, 0, 8<<20)
			if !isNoSpace(err) {
				t.Fatalf("fallocate 8 MiB on a full filesystem: %v, want ENOSPC", err)
			}
			verifyFiles(t, f, first)
			t.Logf("first fill: %d MiB in %d files; %s", total(first)>>20, len(first), spaceLine(f))
			must(t, f.Close())
			checktest.Image(t, img)
			kernelVerify(t, img, first)

			f = openImage(t, img, opts)
			verifyFiles(t, f, first)
			names := make([]string, 0, len(first))
			for n := range first {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if err := f.Unlink(TopLevel, n); err != nil {
					t.Fatalf("unlink %s on a full filesystem: %v", n, err)
				}
			}
			notAborted(t, f)
			must(t, f.Close())
			checktest.Image(t, img)

			f = openImage(t, img, opts)
			second := fillFiles(t, f, r, "b")
			t.Logf("refill: %d MiB in %d files; %s", total(second)>>20, len(second), spaceLine(f))
			verifyFiles(t, f, second)
			must(t, f.Close())
			checktest.Image(t, img)
			if total(second) < total(first)*9/10 {
				t.Errorf("refilled %d bytes, first fill %d", total(second), total(first))
			}
		})
	}
}

// TestENOSPCMetadata fills the metadata of a 128 MiB filesystem with
// inline files and xattrs until creating fails with ENOSPC, without the
// transaction aborting; on the full filesystem creations fail cleanly,
// deletions (unlink, rmdir, removexattr, truncate) and inode updates work;
// then creating works again.
func TestENOSPCMetadata(t *testing.T) {
	img := smallImage(t)
	f := openImage(t, img, Options{})
	content := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 1000) }
	dir, err := f.Mkdir(TopLevel, "d", 0o755, 0, 0)
	must(t, err)
	var ids []ondisk.InodeRef
	var full error
	for i := 0; full == nil; i++ {
		id, err := f.Create(dir, fmt.Sprintf("m%05d", i), 0o644, 0, 0, 0)
		if err != nil {
			full = err
			break
		}
		ids = append(ids, id)
		if _, err := f.WriteAt(id, 0, content(i)); err != nil {
			full = err
			break
		}
		if err := f.SetXattr(id, "user.pad", content(i + 1)[:1500], 0); err != nil {
			full = err
			break
		}
		if i%2000 == 1999 {
			must(t, f.Commit())
		}
	}
	if !isNoSpace(full) {
		t.Fatalf("filling metadata ended with %v, want ENOSPC", full)
	}
	notAborted(t, f)
	t.Logf("%d files; then %v; %s", len(ids), full, spaceLine(f))
	// The last file may lack its data or xattr; drop it from the check.
	must(t, f.Unlink(dir, fmt.Sprintf("m%05d", len(ids)-1)))
	ids = ids[:len(ids)-1]
	for i := 0; i < 50; i++ {
		_, err := f.Mkdir(TopLevel, fmt.Sprintf("nd%d", i), 0o755, 0, 0)
		if isNoSpace(err) {
			break
		}
		must(t, err)
	}
	if _, err := f.Mkdir(TopLevel, "nomore", 0o755, 0, 0); !isNoSpace(err) {
		t.Fatalf("mkdir on a full filesystem: %v, want ENOSPC", err)
	}
	notAborted(t, f)

	// Deletions work on the full filesystem, and so do inode updates
	// (chmod, touch), as with Linux.
	_, err = f.Setattr(ids[3], SetAttr{Valid: SetMode | SetMtime, Mode: 0o600, Mtime: time.Unix(1e9, 0)})
	must(t, err)
	must(t, f.RemoveXattr(ids[0], "user.pad"))
	must(t, f.Truncate(ids[1], 10))
	if _, _, err := f.Lookup(TopLevel, "nd0"); err == nil {
		must(t, f.Rmdir(TopLevel, "nd0"))
	}
	deleted := map[int]bool{}
	for i := 2; i < len(ids); i += 3 {
		if err := f.Unlink(dir, fmt.Sprintf("m%05d", i)); err != nil {
			t.Fatalf("unlink m%05d on a full filesystem: %v", i, err)
		}
		deleted[i] = true
	}
	notAborted(t, f)
	must(t, f.Commit())
	// and make room: creating works again.
	nid, err := f.Create(TopLevel, "again", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(nid, 0, []byte("after deletions"))
	must(t, err)
	must(t, f.Close())
	checktest.Image(t, img)

	f = openImage(t, img, Options{})
	for i, id := range ids {
		if deleted[i] {
			continue
		}
		want := content(i)
		switch i {
		case 1:
			want = want[:10]
		}
		if got := readAll(t, f, id); !bytes.Equal(got, want) {
			t.Fatalf("m%05d: content differs (%d bytes, want %d)", i, len(got), len(want))
		}
		_, err := f.GetXattr(id, "user.pad")
		if i == 0 && !errors.Is(err, syscall.ENODATA) || i != 0 && err != nil {
			t.Fatalf("m%05d: xattr: %v", i, err)
		}
	}
	must(t, f.Close())
}

// TestRandomOpsFull runs the random model test on a 128 MiB filesystem
// with large writes that keep it full: any operation but a deletion may
// fail with ENOSPC, and must then change nothing; the transaction never
// aborts, and the image stays clean. Replay with -seed.
func TestRandomOpsFull(t *testing.T) {
	seed := testutil.Seed(t, *seedFlag)
	nops := *opsFlag
	if nops == 0 {
		nops = 1000
		if testing.Short() {
			nops = 300
		}
	}
	layouts := []struct {
		name    string
		args    []string
		comp    compress.Alg
		prefill bool
	}{
		{"default", nil, compress.None, false},
		{"nodesize-4k,no-no-holes,lzo", []string{"--nodesize", "4096", "-O", "^no-holes"}, compress.LZO, false},
		{"metadata-single,prefilled", []string{"-m", "single"}, compress.None, true},
	}
	for i, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			img := smallImage(t, l.args...)
			runRandomOpsFullOn(t, seed+int64(i), img, Options{Compress: l.comp}, l.prefill, nops)
		})
	}
}

// runRandomOpsFullOn runs nops random operations with large writes on img
// (opened with opts), prefilled first if asked, until it has run full:
// every ENOSPC must have changed nothing; the image is checked at the end.
func runRandomOpsFullOn(t *testing.T, seed int64, img string, opts Options, prefill bool, nops int) *rig {
	t.Helper()
	g := &rig{t: t, r: rand.New(rand.NewSource(seed)), img: img, opts: opts,
		noSpace: true, noSpaces: map[string]int{}}
	g.f = openImage(t, img, opts)
	g.ss = int(g.f.SectorSize())
	x, err := g.f.Stat(TopLevel)
	must(t, err)
	g.m = &model{root: &mnode{mode: x.Mode, uid: x.UID, gid: x.GID, xattrs: map[string]string{},
		kids: map[string]*mnode{}, id: TopLevel, subvol: ondisk.FSTreeObjectID}}
	if prefill {
		g.prefill()
	}
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
	if len(g.noSpaces) == 0 && !prefill {
		// This seed's mix of writes and deletes left room: fill
		// the rest and go on, so every run exercises ENOSPC.
		t.Logf("not full after %d ops (%s); filling", nops, spaceLine(g.f))
		g.prefill()
		for end := g.nops + 300; g.nops < end; g.nops++ {
			g.step()
		}
	}
	g.reopen()
	t.Logf("ENOSPC answers: %v; %s", g.noSpaces, spaceLine(g.f))
	must(t, g.f.Close())
	checktest.Image(t, img)
	if len(g.noSpaces) == 0 {
		t.Errorf("the filesystem never ran full")
	}
	return g
}

// prefill makes both data and metadata nearly full: a filler file takes
// the data space (so that metadata cannot grow), small inline files with
// xattrs the metadata; then a little of each goes.
func (g *rig) prefill() {
	t, f := g.t, g.f
	add := func(dir *mnode, name string, id ondisk.InodeRef, mode uint32) *mnode {
		n := &mnode{mode: mode, xattrs: map[string]string{}, id: id}
		if mode&item.SIFMT == item.SIFDIR {
			n.kids = map[string]*mnode{}
		}
		dir.kids[name] = n
		return n
	}
	fid, err := f.Create(TopLevel, "filler", 0o644, 0, 0, 0)
	must(t, err)
	filler := add(g.m.root, "filler", fid, item.SIFREG|0o644)
	chunk := make([]byte, 1<<20)
	for {
		g.r.Read(chunk)
		if _, err := f.WriteAt(fid, uint64(len(filler.data)), chunk); err != nil {
			if !isNoSpace(err) {
				t.Fatal(err)
			}
			break
		}
		filler.data = append(filler.data, chunk...)
	}
	did, err := f.Mkdir(TopLevel, "pad", 0o755, 0, 0)
	must(t, err)
	pad := add(g.m.root, "pad", did, item.SIFDIR|0o755)
	var names []string
	for i := 0; ; i++ {
		name := fmt.Sprintf("p%05d", i)
		id, err := f.Create(did, name, 0o644, 0, 0, 0)
		if isNoSpace(err) {
			break
		}
		must(t, err)
		n := add(pad, name, id, item.SIFREG|0o644)
		names = append(names, name)
		data := g.randomData(1500 + g.r.Intn(500))
		if _, err := f.WriteAt(id, 0, data); isNoSpace(err) {
			break
		} else {
			must(t, err)
		}
		n.data = data
		val := string(g.randomData(1000))
		if err := f.SetXattr(id, "user.pad", []byte(val), 0); isNoSpace(err) {
			break
		} else {
			must(t, err)
		}
		n.xattrs["user.pad"] = val
	}
	notAborted(t, f)
	t.Logf("prefilled: %d MiB filler, %d small files; %s", len(filler.data)>>20, len(names), spaceLine(f))
	for i := 0; i < len(names); i += 20 {
		must(t, f.Unlink(did, names[i]))
		delete(pad.kids, names[i])
	}
	// Give back 4 MiB of data space (or half the filler, when the space
	// left for it was less: a prefill after a run that used most of it).
	cut := max(len(filler.data)-4<<20, len(filler.data)/2)
	must(t, f.Truncate(fid, uint64(cut)))
	filler.data = filler.data[:cut]
	must(t, f.Commit())
	g.verify("after prefill")
}
