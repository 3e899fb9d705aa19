package gobtrfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestOurLogKernelReplay runs the kernel crash cases' scripts on our FUSE
// mount instead (fsync through our log tree), copies the image while
// still mounted (the power cut), and checks that the copy holds a log
// (no commit happened), that btrfs check accepts it, that the kernel's
// replay of our log shows what our own replay shows, that every path the
// script fsync'd is in the kernel's view as our mount showed it, and that
// btrfs check is clean after the kernel's replay.
func TestOurLogKernelReplay(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	testutil.NeedFuse(t)
	for _, c := range logCases {
		switch c.name {
		case "subvolumes", "quota", "nodatasum":
			continue // btrfs subvolume/quota ioctls and nodatasum: not through our mount
		}
		t.Run(c.name, func(t *testing.T) { ourLogCase(t, c) })
	}
}

// fsyncedPaths are the files and directories script fsyncs with xfs_io.
func fsyncedPaths(script string) []string {
	var out []string
	for _, seg := range strings.Split(script, "&&") {
		f := strings.Fields(seg)
		if len(f) > 1 && f[0] == "xfs_io" && strings.Contains(seg, "fsync") {
			out = append(out, f[len(f)-1])
		}
	}
	return out
}

func ourLogCase(t *testing.T, c logCase) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	testutil.Mkfs(t, img, 256<<20)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	o := fusefs.Options{CommitInterval: time.Hour}
	if c.mount == "compress=zstd" {
		o.Compress = "zstd"
	}
	mt, err := fusefs.New(img, mnt, o)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	mounted := true
	unmount := func() {
		if mounted {
			mounted = false
			if err := mt.Unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
			mt.Wait()
			if err := mt.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}
	t.Cleanup(unmount)
	sh(t, mnt, c.prep)
	if err := mt.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	sh(t, mnt, c.change)
	live := dirView(t, mnt)
	st := mt.FsyncStats()
	crash := filepath.Join(dir, "crash")
	testutil.Run(t, "cp", "--sparse=always", img, crash) // the power cut
	unmount()
	t.Logf("fsync stats %+v", st)
	if c.name == "big" && st.Commits["new-chunk"] > 0 {
		// 9 MB of new data needed a new data chunk: a log cannot point
		// into a chunk the last commit does not have, so that fsync
		// committed (counted); the checks below still apply.
		t.Logf("new chunk: committed instead of logging")
	} else if logRoot(t, crash) == "0" || st.Logged == 0 {
		t.Errorf("no log in the crash copy (log_root %s; fsync stats %+v)", logRoot(t, crash), st)
	}
	testutil.CheckImage(t, crash)
	ours, warns := ourView(t, crash, false)
	if len(warns) > 0 {
		t.Errorf("our replay warned: %q", warns)
	}
	kimg := copyImage(t, crash, "kernel")
	kern := kernelView(t, kimg, "")
	if d := testutil.DiffMaps(kern, ours); len(d) > 0 {
		t.Errorf("our replay of our log differs from the kernel's:\n%s", strings.Join(d, "\n"))
	}
	for _, p := range fsyncedPaths(c.change) {
		want, ok := live[p]
		if !ok {
			continue // renamed or removed after its fsync
		}
		if kern[p] != want {
			t.Errorf("fsync'd %s: the kernel's replay shows %q, our mount showed %q", p, kern[p], want)
		}
		if strings.HasPrefix(want, "mode=4") { // a directory: its entries too
			for q, v := range live {
				if filepath.Dir(q) == p && kern[q] == "" {
					t.Errorf("entry %s of fsync'd %s: missing after the kernel's replay (ours had %q)", q, p, v)
				}
			}
		}
	}
	testutil.CheckImage(t, kimg)
}
