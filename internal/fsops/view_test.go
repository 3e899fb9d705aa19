package fsops

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestReadIntoWhileLocked: with the transaction lock held (as a settling
// commit holds it), a read of a file the last commit holds whole is served
// from that commit's trees at once, checksums verified; a read of a file
// changed since, or one whose data fails its checksum, waits for the lock
// and reads the running transaction (which reports the damage).
func TestReadIntoWhileLocked(t *testing.T) {
	img := newImage(t, imageOpts{})
	f := openImage(t, img, Options{})
	defer f.Close()
	data := make([]byte, 64<<10)
	rand.New(rand.NewSource(11)).Read(data)
	a, err := f.Create(TopLevel, "a", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(a, 0, data)
	must(t, err)
	bad, err := f.Create(TopLevel, "bad", 0o644, 0, 0, 0)
	must(t, err)
	badData := make([]byte, 8192)
	rand.New(rand.NewSource(12)).Read(badData)
	_, err = f.WriteAt(bad, 0, badData)
	must(t, err)
	changed, err := f.Create(TopLevel, "changed", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(changed, 0, []byte("committed contents"))
	must(t, err)
	must(t, f.Commit())
	_, err = f.WriteAt(changed, 0, []byte("not committed yet"))
	must(t, err)
	at := flip(t, img, badData[4096:8192], -1)

	type result struct {
		n   int
		err error
		buf []byte
	}
	read := func(id ondisk.InodeRef, size int) chan result {
		c := make(chan result, 1)
		go func() {
			buf := bytes.Repeat([]byte{0x5a}, size)
			n, _, err := f.ReadInto(id, 0, buf)
			c <- result{n, err, buf[:max(n, 0)]}
		}()
		return c
	}
	h, err := f.tx.Begin() // the lock a settling commit holds
	must(t, err)
	before := f.ViewReads()
	select {
	case r := <-read(a, len(data)):
		if r.err != nil || !bytes.Equal(r.buf, data) {
			t.Fatalf("read of committed file with the lock held: %d bytes, %v", r.n, r.err)
		}
	case <-time.After(30 * time.Second):
		h.End()
		t.Fatal("read of a committed file waited for the transaction lock")
	}
	if got := f.ViewReads() - before; got != 1 {
		t.Fatalf("%d reads served from the last commit, want 1", got)
	}
	waiting := []chan result{read(changed, 100), read(bad, len(badData))}
	h.End()
	r := <-waiting[0]
	if r.err != nil || string(r.buf) != "not committed yets" {
		t.Fatalf("read of changed file: %q %v", r.buf, r.err)
	}
	r = <-waiting[1]
	if !errors.Is(r.err, diskio.ErrCorrupt) {
		t.Fatalf("read of damaged file: %d bytes, err %v; want a checksum error", r.n, r.err)
	}
	if got := f.ViewReads() - before; got != 1 {
		t.Fatalf("%d reads served from the last commit, want 1 (the changed and the damaged file must not be)", got)
	}

	// after a commit the changed file reads from the view too
	must(t, f.Commit())
	h, err = f.tx.Begin()
	must(t, err)
	r = <-read(changed, 100)
	h.End()
	if r.err != nil || string(r.buf) != "not committed yets" {
		t.Fatalf("read of changed file after commit: %q %v", r.buf, r.err)
	}
	if got := f.ViewReads() - before; got != 2 {
		t.Fatalf("%d reads served from the last commit, want 2", got)
	}
	flip(t, img, nil, at) // repaired, for the end-of-test check
}

// flip flips one bit of the first copy of sector in img (found by its
// contents when at < 0) and returns where; flip(t, img, nil, at) flips it back.
func flip(t *testing.T, img string, sector []byte, at int64) int64 {
	t.Helper()
	b, err := os.ReadFile(img)
	must(t, err)
	if at < 0 {
		i := bytes.Index(b, sector)
		if i < 0 {
			t.Fatal("sector not found in the image")
		}
		at = int64(i + 100)
	}
	fd, err := os.OpenFile(img, os.O_RDWR, 0)
	must(t, err)
	defer fd.Close()
	_, err = fd.WriteAt([]byte{b[at] ^ 0x10}, at)
	must(t, err)
	return at
}

// TestReadIntoConcurrentCommits: reads of a committed file and of one
// being rewritten, while a writer rewrites it whole and commits in a loop,
// always see one whole version (each version is one repeated byte), and
// the committed file's data; some of the reads come from the last commit.
func TestReadIntoConcurrentCommits(t *testing.T) {
	img := newImage(t, imageOpts{})
	f := openImage(t, img, Options{})
	defer f.Close()
	stable := make([]byte, 32<<10)
	rand.New(rand.NewSource(13)).Read(stable)
	s, err := f.Create(TopLevel, "stable", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(s, 0, stable)
	must(t, err)
	w, err := f.Create(TopLevel, "w", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(w, 0, bytes.Repeat([]byte{0}, 16<<10))
	must(t, err)
	must(t, f.Commit())

	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 1; err == nil; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err = f.WriteAt(w, 0, bytes.Repeat([]byte{byte(i)}, 16<<10)); err == nil && i%4 == 0 {
				err = f.Commit()
			}
		}
		done <- err
	}()
	buf := make([]byte, 32<<10)
	for i := 0; i < 400; i++ {
		n, _, err := f.ReadInto(s, 0, buf)
		if err != nil || !bytes.Equal(buf[:n], stable) {
			t.Fatalf("read %d of the committed file: %d bytes, %v", i, n, err)
		}
		n, _, err = f.ReadInto(w, 0, buf[:16<<10])
		if err != nil || n != 16<<10 || !bytes.Equal(buf[:n], bytes.Repeat(buf[:1], n)) {
			t.Fatalf("read %d of the rewritten file: %d bytes, %v, not one version", i, n, err)
		}
	}
	close(stop)
	must(t, <-done)
	t.Logf("%d of 800 reads served from the last commit", f.ViewReads())
}
