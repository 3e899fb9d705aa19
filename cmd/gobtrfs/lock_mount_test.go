package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// startMount runs `gobtrfs mount IMG DIR` in the foreground in a process of
// its own and waits until DIR is mounted.
type mountProc struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error // the process's exit
}

func startMount(t *testing.T, img, dir string) *mountProc {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := gobtrfsCmd(context.Background(), "mount", img, dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if testutil.IsMounted(dir) {
			exec.Command("umount", "-l", dir).Run()
		}
		cmd.Process.Kill()
	})
	deadline := time.Now().Add(30 * time.Second)
	for !testutil.IsMounted(dir) {
		select {
		case err := <-exited:
			t.Fatalf("mount %s on %s exited before it was mounted: %v\n%s", img, dir, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mount %s on %s: not mounted after 30 s\n%s", img, dir, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &mountProc{cmd: cmd, out: &out, done: exited}
}

// TestMountHoldsImage: while a read-write mount serves an image, `gobtrfs
// put` is refused with an error naming the mount and its pid, and nothing
// written through the mount is damaged. Right after umount, a new mount of
// the same image waits for the old daemon to finish instead of failing.
func TestMountHoldsImage(t *testing.T) {
	testutil.NeedFuse(t)
	testutil.NeedProgs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := gobtrfs.CreateImage(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	m1 := startMount(t, img, mnt)
	data := bytes.Repeat([]byte("mounted "), 1<<20) // 8 MiB, still being written back at umount
	if err := os.WriteFile(filepath.Join(mnt, "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	writeTree(t, src, map[string][]byte{"x": []byte("put")})
	var stderr bytes.Buffer
	put := gobtrfsCmd(context.Background(), "put", img, src, "/p")
	put.Stderr = &stderr
	err := put.Run()
	want := fmt.Sprintf("in use by a gobtrfs mount on %s, pid %d", mnt, m1.cmd.Process.Pid)
	if err == nil || !strings.Contains(stderr.String(), want) {
		t.Errorf("put while mounted read-write: %v, stderr %q; want a refusal containing %q", err, stderr.String(), want)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	mnt2 := filepath.Join(dir, "mnt2")
	m2 := startMount(t, img, mnt2) // at once: the first daemon may still be committing
	if err := <-m1.done; err != nil {
		t.Errorf("first mount: %v\n%s", err, m1.out.String())
	}
	got, err := os.ReadFile(filepath.Join(mnt2, "a"))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("file written through the first mount: %d bytes, %v; want %d bytes intact", len(got), err, len(data))
	}
	if _, err := os.Stat(filepath.Join(mnt2, "p")); err == nil {
		t.Errorf("the refused put left /p behind")
	}
	if err := unix.Unmount(mnt2, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-m2.done; err != nil {
		t.Errorf("second mount: %v\n%s", err, m2.out.String())
	}
	t.Logf("second mount said:\n%s", m2.out.String())
	checktest.Image(t, img)
}
