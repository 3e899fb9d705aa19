package treelog_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// rtCase is one red-team workload: run changes the image after
// newLoggedImage's commit (d/a, d/h, e/x, e2, sv/f, b) and returns the
// paths whose description both replays must show ("" absent).
type rtCase struct {
	name string
	run  func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string
}

// runRT runs the cases; exploratory (each case is about a second): only
// with GOBTRFS_REDTEAM=1.
func runRT(t *testing.T, cases []rtCase) {
	if os.Getenv("GOBTRFS_REDTEAM") == "" {
		t.Skip("exploratory: set GOBTRFS_REDTEAM=1")
	}
	testutil.NeedProgs(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img, f, a := newLoggedImage(t)
			want := c.run(t, f, a)
			logStats(t, f)
			crashCheck(t, img, want)
		})
	}
}

func TestRedteamBatch1(t *testing.T) {
	runRT(t, []rtCase{
		{"rename-chain", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d, e := lookupPath(t, f, "d"), lookupPath(t, f, "e")
			mustT(t, f.Rename(d, "a", d, "b1", 0))
			mustT(t, f.Fsync(a))
			mustT(t, f.Rename(d, "b1", e, "c", 0))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": "", "d/b1": "", "e/c": fileDesc(0o644, 1, original)}
		}},
		{"rename-away-and-back", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d, e := lookupPath(t, f, "d"), lookupPath(t, f, "e")
			mustT(t, f.Rename(d, "a", e, "a", 0))
			mustT(t, f.Fsync(a))
			mustT(t, f.Rename(e, "a", d, "a", 0))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": fileDesc(0o644, 1, original), "e/a": ""}
		}},
		{"rename-away-and-back-dirfsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d, e := lookupPath(t, f, "d"), lookupPath(t, f, "e")
			mustT(t, f.Rename(d, "a", e, "a", 0))
			mustT(t, f.Rename(e, "a", d, "a", 0))
			mustT(t, f.Fsync(d))
			return map[string]string{"d/a": fileDesc(0o644, 1, original), "e/a": ""}
		}},
		{"link-new-dir-unlink-old", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			n := mkdir(t, f, topDir, "n")
			mustT(t, f.Link(a, n, "a2"))
			mustT(t, f.Unlink(d, "a"))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": "", "n/a2": fileDesc(0o644, 1, original)}
		}},
		{"link-fsync-unlink-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.Link(a, topDir, "a2"))
			mustT(t, f.Fsync(a))
			mustT(t, f.Unlink(d, "a"))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": "", "a2": fileDesc(0o644, 1, original)}
		}},
		{"dir-over-empty-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			q := mkdir(t, f, topDir, "q")
			create(t, f, q, "inq", []byte("in q"))
			mustT(t, f.Rename(topDir, "q", topDir, "e2", 0))
			mustT(t, f.Fsync(q))
			return map[string]string{"q": "", "e2": "dir 755", "e2/inq": fileDesc(0o644, 1, []byte("in q"))}
		}},
		{"committed-dir-over-empty-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			mustT(t, f.Rename(topDir, "d", topDir, "e2", 0))
			dd := lookupPath(t, f, "e2")
			mustT(t, f.Fsync(dd))
			return map[string]string{"d": "", "e2": "dir 755", "e2/a": fileDesc(0o644, 1, original)}
		}},
		{"exchange-same-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(d, "a", d, "h", fsops.RenameExchange))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/h": fileDesc(0o644, 1, original), "d/a": fileDesc(0o644, 1, bytes.Repeat([]byte("h"), 64<<10))}
		}},
		{"exchange-file-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(d, "a", topDir, "e2", fsops.RenameExchange))
			mustT(t, f.Fsync(a))
			return map[string]string{"e2": fileDesc(0o644, 1, original), "d/a": "dir 755"}
		}},
		{"unlink-recreate", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			write(t, f, a, 0, []byte("FIRST"))
			mustT(t, f.Fsync(a))
			mustT(t, f.Unlink(d, "a"))
			n := create(t, f, d, "a", []byte("second a"))
			mustT(t, f.Fsync(n))
			return map[string]string{"d/a": fileDesc(0o644, 1, []byte("second a"))}
		}},
		{"unlink-recreate-dirfsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.Fsync(d))
			mustT(t, f.Unlink(d, "a"))
			create(t, f, d, "a", []byte("second a"))
			mustT(t, f.Fsync(d))
			return map[string]string{"d/a": fileDesc(0o644, 1, []byte("second a"))}
		}},
		{"symlink", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			l, err := f.Symlink(d, "l", strings.Repeat("t", 300), 0, 0)
			mustT(t, err)
			mustT(t, f.Fsync(l))
			return map[string]string{"d/l": describe(unix.S_IFLNK|0o777, 1, 300, nil, strings.Repeat("t", 300), nil)}
		}},
		{"long-names", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			n1 := strings.Repeat("N", 255)
			dd := mkdir(t, f, topDir, n1)
			x := create(t, f, dd, n1, []byte("long"))
			mustT(t, f.Link(x, dd, strings.Repeat("M", 255)))
			mustT(t, f.Fsync(x))
			return map[string]string{n1 + "/" + n1: fileDesc(0o644, 2, []byte("long"))}
		}},
		{"dir-xattr", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.SetXattr(d, "user.dx", []byte("on a dir"), 0))
			mustT(t, f.Fsync(d))
			return map[string]string{"d": describe(unix.S_IFDIR|0o755, 0, 0, nil, "", map[string]string{"user.dx": "on a dir"})}
		}},
		{"xattr-removed", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			mustT(t, f.SetXattr(a, "user.keep", []byte("k"), 0))
			mustT(t, f.SetXattr(a, "user.gone", []byte("g"), 0))
			mustT(t, f.Fsync(a))
			mustT(t, f.RemoveXattr(a, "user.gone"))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": describe(unix.S_IFREG|0o644, 1, uint64(len(original)), original, "", map[string]string{"user.keep": "k"})}
		}},
		{"prealloc-write", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			p := create(t, f, d, "p", nil)
			mustT(t, f.Fallocate(p, 0, 0, 1<<20))
			mustT(t, f.Fallocate(p, fsops.FallocKeepSize, 1<<20, 1<<20))
			mustT(t, f.Commit())
			data := bytes.Repeat([]byte("p"), 8192)
			write(t, f, p, 4096, data)
			mustT(t, f.Fsync(p))
			want := make([]byte, 1<<20)
			copy(want[4096:], data)
			return map[string]string{"d/p": fileDesc(0o644, 1, want)}
		}},
		{"nocow-overwrite", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			p := create(t, f, d, "nc", nil)
			_, err := f.Setattr(p, fsops.SetAttr{Valid: fsops.SetFlags, Flags: item.InodeNoDataCow})
			mustT(t, err)
			write(t, f, p, 0, bytes.Repeat([]byte("1"), 16384))
			mustT(t, f.Commit())
			write(t, f, p, 4096, bytes.Repeat([]byte("2"), 4096))
			mustT(t, f.Fsync(p))
			want := bytes.Repeat([]byte("1"), 16384)
			copy(want[4096:], bytes.Repeat([]byte("2"), 4096))
			return map[string]string{"d/nc": fileDesc(0o644, 1, want)}
		}},
		{"clone-committed", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			h := lookupPath(t, f, "d/h")
			d := lookupPath(t, f, "d")
			c := create(t, f, d, "c", nil)
			mustT(t, f.Clone(h, 0, c, 0, 64<<10))
			mustT(t, f.Fsync(c))
			return map[string]string{"d/c": fileDesc(0o644, 1, bytes.Repeat([]byte("h"), 64<<10))}
		}},
		{"clone-new-data-both-fsynced", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			src := create(t, f, d, "src", bytes.Repeat([]byte("s"), 64<<10))
			c := create(t, f, d, "c", nil)
			mustT(t, f.Clone(src, 0, c, 0, 64<<10))
			mustT(t, f.Clone(src, 0, src, 64<<10, 64<<10))
			mustT(t, f.Fsync(c))
			mustT(t, f.Fsync(src))
			return map[string]string{"d/c": fileDesc(0o644, 1, bytes.Repeat([]byte("s"), 64<<10)),
				"d/src": fileDesc(0o644, 1, bytes.Repeat([]byte("s"), 128<<10))}
		}},
		{"punch-hole", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			h := lookupPath(t, f, "d/h")
			mustT(t, f.Fallocate(h, fsops.FallocPunchHole|fsops.FallocKeepSize, 8192, 16384))
			mustT(t, f.Fsync(h))
			want := bytes.Repeat([]byte("h"), 64<<10)
			copy(want[8192:8192+16384], make([]byte, 16384))
			return map[string]string{"d/h": fileDesc(0o644, 1, want)}
		}},
	})
}
