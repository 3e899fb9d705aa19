package fsops_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
)

// gatedDevice stops the first flush after arm until release: a commit is
// then between writing its tree blocks and writing its superblock.
type gatedDevice struct {
	*blockdev.Recording
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (g *gatedDevice) arm() {
	g.mu.Lock()
	g.armed, g.reached, g.release = true, make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedDevice) Flush() error {
	g.mu.Lock()
	armed, reached, release := g.armed, g.reached, g.release
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(reached)
		<-release
	}
	return g.Recording.Flush()
}

// TestCommitUnblocked stops a commit at its first flush (its tree blocks
// written, its superblock not) and runs operations meanwhile: they must
// not wait for the commit, they go into the next transaction (rewriting
// and freeing blocks of the committing one), and the device as a crash
// would leave it after any flush, also torn, holds exactly the state
// before the commit, the committed one, or the next one, and passes btrfs
// check.
func TestCommitUnblocked(t *testing.T) {
	mem := blockdev.NewMemory(128 << 20)
	mustOK(t, mkfs.Make(mem, mkfs.Config{}))
	f, err := fsops.OpenDevice(mem, fsops.Options{})
	mustOK(t, err)
	before := tree{"a": bytes.Repeat([]byte("a"), 10000), "b": []byte("base b")}
	for _, n := range []string{"a", "b"} {
		mustOK(t, createWrite(f, fsops.TopLevel, n, before[n]))
	}
	mustOK(t, f.Close())
	var img bytes.Buffer
	if _, err := mem.WriteTo(&img); err != nil {
		t.Fatal(err)
	}
	dev := &gatedDevice{Recording: blockdev.NewRecording(img.Bytes())}
	f, err = fsops.OpenDevice(dev, fsops.Options{})
	mustOK(t, err)

	// Transaction N: enough files to fill several leaves.
	r := rand.New(rand.NewSource(1))
	stateN := tree{"b": before["b"]}
	for i := range 200 {
		name := fmt.Sprintf("n%03d", i)
		data := make([]byte, 100+r.Intn(3000))
		r.Read(data)
		mustOK(t, createWrite(f, fsops.TopLevel, name, data))
		stateN[name] = data
	}
	id, _, err := f.Lookup(fsops.TopLevel, "a")
	mustOK(t, err)
	newA := bytes.Repeat([]byte("A"), 20000)
	_, err = f.WriteAt(id, 0, newA)
	mustOK(t, err)
	stateN["a"] = newA

	dev.arm()
	committed := make(chan error, 1)
	go func() { committed <- f.Commit() }()
	<-dev.reached

	// Transaction N+1, while N waits for its flush: rewrite and remove
	// what N wrote, add more.
	stateN1 := tree{}
	for k, v := range stateN {
		stateN1[k] = v
	}
	next := make(chan error, 1)
	go func() {
		next <- func() error {
			for i := 0; i < 200; i += 3 {
				name := fmt.Sprintf("n%03d", i)
				if err := f.Unlink(fsops.TopLevel, name); err != nil {
					return err
				}
				delete(stateN1, name)
			}
			for i := range 100 {
				name := fmt.Sprintf("m%03d", i)
				data := bytes.Repeat([]byte{byte(i)}, 50+i*40)
				if err := createWrite(f, fsops.TopLevel, name, data); err != nil {
					return err
				}
				stateN1[name] = data
			}
			newerA := bytes.Repeat([]byte("Z"), 300000)
			if _, err := f.WriteAt(id, 0, newerA); err != nil {
				return err
			}
			stateN1["a"] = newerA
			return nil
		}()
	}()
	select {
	case err := <-next:
		mustOK(t, err)
	case <-time.After(20 * time.Second):
		close(dev.release)
		t.Fatal("operations during the commit's writes waited for the commit")
	}
	select {
	case err := <-committed:
		t.Fatalf("the commit returned (%v) before its flush was let through", err)
	default:
	}
	close(dev.release)
	mustOK(t, <-committed)
	mustOK(t, f.Close())

	got := readTree(t, blockdev.NewOverlay(dev.StateAt(len(dev.Ops()))))
	if !sameTree(got, stateN1) {
		t.Fatalf("final state: %v", treeDiff(stateN1, got))
	}
	scratch := filepath.Join(t.TempDir(), "crash.img")
	tr := rand.New(rand.NewSource(2))
	seen := map[string]int{}
	verify := func(what string, m *blockdev.Memory) {
		t.Helper()
		ov := blockdev.NewOverlay(m)
		got := readTree(t, ov)
		switch {
		case sameTree(got, before):
			seen["before"]++
		case sameTree(got, stateN):
			seen["N"]++
		case sameTree(got, stateN1):
			seen["N+1"]++
		default:
			t.Fatalf("%s: neither the state before, N nor N+1: %v", what, treeDiff(stateN1, got))
		}
		writeImage(t, ov, scratch)
		if msg := checktest.Problems(scratch); msg != "" {
			t.Fatalf("%s: the image is not clean:\n%s", what, msg)
		}
	}
	for i, fl := range dev.Flushes() {
		verify(fmt.Sprintf("after flush %d", i), dev.StateAt(fl+1))
		verify(fmt.Sprintf("torn after flush %d", i), dev.TornAt(fl+1, tr, 4096))
	}
	t.Logf("crash states: %v", seen)
	if seen["N"] == 0 || seen["N+1"] == 0 {
		t.Errorf("crash states %v: want some at N and some at N+1", seen)
	}
}
