package fsops

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Tests of images with mixed block groups (mkfs.btrfs --mixed): data and
// metadata share DATA|METADATA groups.

// mixedBGChunkTypes returns how many chunks of each type (as btrfs
// inspect-internal dump-tree prints it, e.g. "DATA|METADATA|single") the
// image has, and fails the test unless every chunk but the SYSTEM ones is
// DATA|METADATA with profile.
func mixedBGChunkTypes(t *testing.T, img, profile string) map[string]int {
	t.Helper()
	out := dumpTree(t, img, "chunk")
	types := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "type" && f[0] == "length" {
				types[f[i+1]]++
			}
		}
	}
	for typ := range types {
		if !strings.HasPrefix(typ, "SYSTEM|") && typ != "DATA|METADATA|"+profile {
			t.Fatalf("chunk of type %s on a mixed filesystem (want DATA|METADATA|%s): %v", typ, profile, types)
		}
	}
	return types
}

// TestMixedBGRandomKernel runs the random model test (small and large
// files, inline, holes, clones, fallocate, xattrs, renames, deletions,
// snapshots and subvolumes, compressed on two layouts) and large writes on
// mixed images of 128 MiB, 1 GiB and 256 MiB with DUP: both checkers find each commit
// clean, Linux reads back exactly the model, then Linux changes the image
// and we change Linux's work. The new chunks must all be DATA|METADATA of
// the image's profile.
func TestMixedBGRandomKernel(t *testing.T) {
	testutil.NeedRootLoop(t)
	seed := testutil.Seed(t, *seedFlag)
	layouts := []struct {
		img     imageOpts
		comp    compress.Alg
		profile string
		nops    int
		fills   int // large writes after the random operations (mixedBGBulk)
	}{
		{imageOpts{size: 128 << 20, args: []string{"--mixed"}}, compress.Zstd, "single", 600, 8},
		{imageOpts{size: 1 << 30, args: []string{"--mixed"}}, compress.LZO, "single", 800, 64},
		{imageOpts{size: 256 << 20, args: []string{"--mixed", "-m", "dup", "-d", "dup"}}, compress.None, "DUP", 600, 20},
	}
	for i, l := range layouts {
		t.Run(fmt.Sprintf("%dMiB,%s,compress=%s", l.img.size>>20, l.profile, l.comp), func(t *testing.T) {
			nops := l.nops
			if testing.Short() {
				nops /= 2
			}
			g := runRandom(t, seed+int64(i), l.img, Options{Compress: l.comp}, nops)
			g.mixedBGBulk(l.fills)
			types := mixedBGChunkTypes(t, g.img, l.profile)
			t.Logf("chunks after %d operations: %v", nops, types)
			if types["DATA|METADATA|"+l.profile] < 2 {
				t.Errorf("no DATA|METADATA chunk added to mkfs.btrfs's one: %v", types)
			}
			kernelReadsAndExtendsRig(t, g)
			mixedBGChunkTypes(t, g.img, l.profile)
		})
	}
}

// TestMixedBGFillData fills mixed images with file data until a write
// fails with ENOSPC: the failed write changes nothing, nothing aborts, an
// inline file still fits (metadata keeps its reserve), the data stored is
// close to what Linux stores (it fills 121 of the 123 MiB of a 128 MiB
// image); after close both checkers find the image clean and Linux reads
// every file; deleting everything on the full filesystem works, and
// refilling stores about as much again.
func TestMixedBGFillData(t *testing.T) {
	layouts := []struct {
		name string
		size int64
		args []string
		comp compress.Alg
		// least share of the data+metadata groups' total the data must
		// fill (incompressible data only)
		minShare float64
	}{
		{"128MiB,single", 128 << 20, []string{"--mixed"}, compress.None, 0.90},
		{"128MiB,single,zstd", 128 << 20, []string{"--mixed"}, compress.Zstd, 0},
		{"256MiB,dup", 256 << 20, []string{"--mixed", "-m", "dup", "-d", "dup"}, compress.None, 0.90},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			img := sizedImage(t, l.size, l.args...)
			opts := Options{Compress: l.comp}
			r := rand.New(rand.NewSource(3))
			f := openImage(t, img, opts)
			first := mixedBGFillFiles(t, f, r, "a", l.comp == compress.None)
			id, err := f.Create(TopLevel, "small", 0o644, 0, 0, 0)
			must(t, err)
			_, err = f.WriteAt(id, 0, []byte("still fits inline"))
			must(t, err)
			first["small"] = []byte("still fits inline")
			if _, err = f.WriteAt(id, 1<<20, make([]byte, 4<<20)); !isNoSpace(err) {
				t.Fatalf("4 MiB write on a full mixed filesystem: %v, want ENOSPC", err)
			}
			if err := f.Fallocate(id, 0, 0, 8<<20); !isNoSpace(err) {
				t.Fatalf("fallocate 8 MiB on a full mixed filesystem: %v, want ENOSPC", err)
			}
			verifyFiles(t, f, first)
			g := f.tx.Groups()
			s := g.Space(ondisk.BlockGroupData)
			share := float64(total(first)) / float64(s.Total)
			t.Logf("first fill: %.1f MiB in %d files (%.1f%% of the %d MiB of data+metadata groups); %s",
				float64(total(first))/(1<<20), len(first), 100*share, s.Total>>20, spaceLine(f))
			if share < l.minShare {
				t.Errorf("data filled %.1f%% of the mixed groups, want at least %.0f%%", 100*share, 100*l.minShare)
			}
			must(t, f.Close())
			checktest.Image(t, img)
			kernelVerify(t, img, first)

			f = openImage(t, img, opts)
			names := make([]string, 0, len(first))
			for n := range first {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if err := f.Unlink(TopLevel, n); err != nil {
					t.Fatalf("unlink %s on a full mixed filesystem: %v", n, err)
				}
			}
			notAborted(t, f)
			must(t, f.Close())
			checktest.Image(t, img)

			f = openImage(t, img, opts)
			second := mixedBGFillFiles(t, f, r, "b", l.comp == compress.None)
			t.Logf("refill: %.1f MiB in %d files; %s", float64(total(second))/(1<<20), len(second), spaceLine(f))
			verifyFiles(t, f, second)
			must(t, f.Close())
			checktest.Image(t, img)
			kernelVerify(t, img, second)
			if total(second) < total(first)*9/10 {
				t.Errorf("refilled %d bytes, first fill %d", total(second), total(first))
			}
		})
	}
}

// mixedBGBulk reopens the image runRandom closed and runs n large writes
// (1 to 8 MiB each, so that new chunks are needed), snapshots and unlinks
// among them, then closes and checks it.
func (g *rig) mixedBGBulk(n int) {
	g.t.Helper()
	g.f = openImage(g.t, g.img, g.opts)
	for i := 0; i < n; i++ {
		g.do("fill")
		switch i % 8 {
		case 3:
			g.do("snapshot")
		case 5:
			g.do("unlink")
		}
	}
	g.reopen()
	must(g.t, g.f.Close())
	checktest.Image(g.t, g.img)
}

// mixedBGFillFiles is fillFiles with files of 1 to 6 MiB written in 1 MiB
// pieces, incompressible when random is set (half zeros otherwise), with
// a commit every four files; it returns when a write fails with ENOSPC,
// having checked the write changed nothing.
func mixedBGFillFiles(t *testing.T, f *FS, r *rand.Rand, prefix string, random bool) map[string][]byte {
	t.Helper()
	if !random {
		return fillFiles(t, f, r, prefix)
	}
	files := map[string][]byte{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%03d", prefix, i)
		id, err := f.Create(TopLevel, name, 0o644, 0, 0, 0)
		if err != nil {
			t.Fatalf("create %s on a data-full mixed filesystem: %v", name, err)
		}
		files[name] = nil
		for j, n := 0, 1+r.Intn(6); j < n; j++ {
			chunk := make([]byte, 1<<20)
			r.Read(chunk)
			off := uint64(len(files[name]))
			if _, err := f.WriteAt(id, off, chunk); err != nil {
				if !isNoSpace(err) {
					t.Fatalf("write %s at %d: %v", name, off, err)
				}
				notAborted(t, f)
				if got := readAll(t, f, id); !bytes.Equal(got, files[name]) {
					t.Fatalf("%s: a write that failed with ENOSPC changed the file", name)
				}
				return files
			}
			files[name] = append(files[name], chunk...)
		}
		if i%4 == 3 {
			must(t, f.Commit())
		}
	}
}

// TestMixedBGRandomFull runs random operations with large writes on small
// mixed images (DUP needs 256 MiB) until they run full: any operation but a deletion may fail
// with ENOSPC and must then change nothing; the transaction never aborts
// (no commit runs out of metadata space), and the image stays clean.
func TestMixedBGRandomFull(t *testing.T) {
	seed := testutil.Seed(t, *seedFlag)
	nops := *opsFlag
	if nops == 0 {
		nops = 800
		if testing.Short() {
			nops = 300
		}
	}
	layouts := []struct {
		name    string
		size    int64
		args    []string
		comp    compress.Alg
		prefill bool
	}{
		// (a compressed run is not prefilled: its writes may never fill
		// again what a deleted filler left; runRandomOpsFullOn fills it at
		// the end if the operations did not)
		{"128MiB,single,prefilled", 128 << 20, []string{"--mixed"}, compress.None, true},
		{"128MiB,single,zstd", 128 << 20, []string{"--mixed"}, compress.Zstd, false},
		{"256MiB,dup", 256 << 20, []string{"--mixed", "-m", "dup", "-d", "dup"}, compress.None, false},
	}
	for i, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			img := sizedImage(t, l.size, l.args...)
			runRandomOpsFullOn(t, seed+int64(i), img, Options{Compress: l.comp}, l.prefill, nops)
		})
	}
}

// TestMixedBGReservedData holds data space for buffered writes
// (ReserveData, as the library's write buffer does) on a nearly full mixed
// image: metadata operations may then fail with ENOSPC but never take the
// space held, so writing the held data back (WriteAtReserved) succeeds;
// then the image is clean.
func TestMixedBGReservedData(t *testing.T) {
	img := smallImage(t, "--mixed")
	f := openImage(t, img, Options{})
	r := rand.New(rand.NewSource(8))
	files := mixedBGFillFiles(t, f, r, "a", true)
	// Free some space and commit so that there is room to hold.
	for _, n := range []string{"a000", "a001"} {
		must(t, f.Unlink(TopLevel, n))
		delete(files, n)
	}
	must(t, f.Commit())
	d, err := f.Mkdir(TopLevel, "meta", 0o755, 0, 0)
	must(t, err)
	id, err := f.Create(TopLevel, "buffered", 0o644, 0, 0, 0)
	must(t, err)
	// Hold all the data space there is, then give half back for metadata.
	const piece = 256 << 10
	var held uint64
	for f.ReserveData(piece) == nil {
		held += piece
	}
	if held < 4*piece {
		t.Fatalf("only %d bytes of data space could be held after deleting two files", held)
	}
	f.ReleaseData(held / 2 / piece * piece)
	held -= held / 2 / piece * piece
	t.Logf("hold %d KiB for buffered data; %s", held>>10, spaceLine(f))
	// Metadata operations on what is left: they must fail cleanly before
	// they take what is held.
	created := 0
	for ; created < 20000; created++ {
		id, err := f.Create(d, fmt.Sprintf("m%05d", created), 0o644, 0, 0, 0)
		if err == nil {
			err = f.SetXattr(id, "user.pad", bytes.Repeat([]byte{byte(created)}, 1500), 0)
		}
		if err != nil {
			if !isNoSpace(err) {
				t.Fatal(err)
			}
			break
		}
	}
	notAborted(t, f)
	t.Logf("%d files with xattrs created beside the held data; %s", created, spaceLine(f))
	if created == 0 {
		t.Error("no file could be created in the space not held")
	}
	// Every held byte is written back.
	data := make([]byte, held)
	r.Read(data)
	for off := uint64(0); off < held; off += piece {
		if _, err := f.WriteAtReserved(id, off, data[off:off+piece], piece); err != nil {
			t.Fatalf("write back held data at %d of %d: %v", off, held, err)
		}
	}
	files["buffered"] = data
	notAborted(t, f)
	if got := readAll(t, f, id); !bytes.Equal(got, data) {
		t.Fatal("buffered file differs")
	}
	must(t, f.Close())
	checktest.Image(t, img)
}

// TestMixedBGKernelMadeImage lets Linux write files, a compressed file, a
// snapshot and many small files on a mixed image, then reads all of it with
// fsops and changes it (overwrites, appends, new files large and small,
// deletions, a snapshot of its own); both checkers find the result clean
// and Linux reads back exactly what we wrote.
func TestMixedBGKernelMadeImage(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := sizedImage(t, 256<<20, "--mixed")
	r := rand.New(rand.NewSource(21))
	want := map[string][]byte{}
	mnt := testutil.LoopMount(t, img, "compress=zstd")
	put := func(rel string, b []byte) {
		p := filepath.Join(mnt, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, b, 0o644))
		want[rel] = b
	}
	big := make([]byte, 24<<20)
	r.Read(big)
	put("big", big)
	put("text", bytes.Repeat([]byte("compressible text\n"), 200000))
	for i := 0; i < 300; i++ {
		b := make([]byte, r.Intn(6000))
		r.Read(b)
		put(fmt.Sprintf("small/%03d", i), b)
	}
	testutil.Run(t, "btrfs", "subvolume", "snapshot", mnt, filepath.Join(mnt, "ksnap"))
	mixedBGSnapOf(want, "ksnap/", "")
	testutil.Unmount(t, mnt)
	checktest.Image(t, img)

	f := openImage(t, img, Options{Compress: compress.Zlib})
	mixedBGVerifyTree(t, f, want)
	lookup := func(rel string) ondisk.InodeRef {
		t.Helper()
		id, _, err := f.Resolve(rel, false)
		must(t, err)
		return id
	}
	// overwrite the middle of the big file, append to the text
	patch := make([]byte, 3<<20)
	r.Read(patch)
	_, err := f.WriteAt(lookup("big"), 5<<20, patch)
	must(t, err)
	copy(want["big"][5<<20:], patch)
	_, err = f.WriteAt(lookup("text"), uint64(len(want["text"])), []byte("appended by fsops\n"))
	must(t, err)
	want["text"] = append(append([]byte(nil), want["text"]...), "appended by fsops\n"...)
	for i := 0; i < 300; i += 3 {
		rel := fmt.Sprintf("small/%03d", i)
		must(t, f.Unlink(lookup("small"), fmt.Sprintf("%03d", i)))
		delete(want, rel)
	}
	for i := 0; i < 40; i++ {
		b := make([]byte, r.Intn(3<<20))
		r.Read(b[:len(b)/2])
		id, err := f.Create(lookup("small"), fmt.Sprintf("new%02d", i), 0o644, 0, 0, 0)
		must(t, err)
		_, err = f.WriteAt(id, 0, b)
		must(t, err)
		want[fmt.Sprintf("small/new%02d", i)] = b
	}
	_, err = f.Snapshot(ondisk.FSTreeObjectID, TopLevel, "usnap", false)
	must(t, err)
	mixedBGSnapOf(want, "usnap/", "ksnap/")
	mixedBGVerifyTree(t, f, want)
	must(t, f.Close())
	checktest.Image(t, img)
	mixedBGChunkTypes(t, img, "single")

	mnt = testutil.LoopMount(t, img, "ro")
	got := map[string][]byte{}
	must(t, filepath.Walk(mnt, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		got[rel] = b
		return nil
	}))
	testutil.Unmount(t, mnt)
	if len(got) != len(want) {
		t.Errorf("Linux reads %d files, want %d", len(got), len(want))
	}
	for rel, b := range want {
		if !bytes.Equal(got[rel], b) {
			t.Errorf("Linux reads %s: %d bytes differ from the %d written", rel, len(got[rel]), len(b))
		}
	}
}

// mixedBGSnapOf adds to files a copy of each under prefix, but those under skip
// (another subvolume, which a snapshot does not hold).
func mixedBGSnapOf(files map[string][]byte, prefix, skip string) {
	add := map[string][]byte{}
	for rel, b := range files {
		if skip == "" || !strings.HasPrefix(rel, skip) {
			add[prefix+rel] = append([]byte(nil), b...)
		}
	}
	for rel, b := range add {
		files[rel] = b
	}
}

// mixedBGVerifyTree compares the regular files named in want (relative paths
// from the top level) with their content through fsops.
func mixedBGVerifyTree(t *testing.T, f *FS, want map[string][]byte) {
	t.Helper()
	for rel, b := range want {
		id, _, err := f.Resolve(rel, false)
		if err != nil {
			t.Fatalf("resolve %s: %v", rel, err)
		}
		if got := readAll(t, f, id); !bytes.Equal(got, b) {
			t.Fatalf("%s: %d bytes differ from the %d expected", rel, len(got), len(b))
		}
	}
}

// TestMixedBGDeleteFragmented fills a mixed image mostly with one file
// of tens of thousands of 4 KiB extents (written in two interleaved
// passes), then the rest with large files until ENOSPC, and deletes the
// fragmented file on the full filesystem: the deletion queues a delayed ref
// per extent, and the commit that runs them must find the metadata it
// needs (no abort); then the space is back and the image is clean.
func TestMixedBGDeleteFragmented(t *testing.T) {
	img := smallImage(t, "--mixed")
	f := openImage(t, img, Options{})
	r := rand.New(rand.NewSource(12))
	id, err := f.Create(TopLevel, "frag", 0o644, 0, 0, 0)
	must(t, err)
	const size = 64 << 20
	block := make([]byte, 4096)
	for pass := uint64(0); pass < 2; pass++ {
		for off := pass * 4096; off < size; off += 8192 {
			r.Read(block)
			if _, err := f.WriteAt(id, off, block); err != nil {
				t.Fatalf("write frag at %d: %v", off, err)
			}
		}
		must(t, f.Commit())
	}
	var extents int
	must(t, f.run(func(o *op) error {
		es, err := o.extents(id, 0, ^uint64(0))
		extents = len(es)
		return err
	}))
	if extents < size/8192 {
		t.Fatalf("the fragmented file has %d extents, want at least %d", extents, size/8192)
	}
	t.Logf("fragmented file written: %d extents; %s", extents, spaceLine(f))
	files := mixedBGFillFiles(t, f, r, "a", true)
	t.Logf("then %d MiB in %d files; %s", total(files)>>20, len(files), spaceLine(f))
	must(t, f.Unlink(TopLevel, "frag"))
	notAborted(t, f)
	must(t, f.Commit())
	notAborted(t, f)
	t.Logf("after deleting the fragmented file: %s", spaceLine(f))
	more := mixedBGFillFiles(t, f, r, "b", true)
	if total(more) < size*8/10 {
		t.Errorf("only %d MiB written after deleting the %d MiB file", total(more)>>20, size>>20)
	}
	for n, b := range more {
		files[n] = b
	}
	verifyFiles(t, f, files)
	must(t, f.Close())
	checktest.Image(t, img)
}
