package treelog_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func TestRedteamBatch2(t *testing.T) {
	runRT(t, []rtCase{
		{"links-same-dir-unlink-one", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			mustT(t, f.Link(a, d, "a2"))
			mustT(t, f.Commit())
			mustT(t, f.Unlink(d, "a"))
			write(t, f, a, 0, []byte("X"))
			mustT(t, f.Fsync(a))
			data := append([]byte("X"), original[1:]...)
			return map[string]string{"d/a": "", "d/a2": fileDesc(0o644, 1, data)}
		}},
		{"extrefs-unlink-some", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			want := map[string]string{}
			for i := 0; i < 60; i++ {
				mustT(t, f.Link(a, d, fmt.Sprintf("%s%03d", strings.Repeat("L", 200), i)))
			}
			mustT(t, f.Commit())
			for i := 0; i < 60; i += 3 {
				mustT(t, f.Unlink(d, fmt.Sprintf("%s%03d", strings.Repeat("L", 200), i)))
				want[fmt.Sprintf("d/%s%03d", strings.Repeat("L", 200), i)] = ""
			}
			for i := 60; i < 70; i++ {
				mustT(t, f.Link(a, d, fmt.Sprintf("%s%03d", strings.Repeat("L", 200), i)))
			}
			mustT(t, f.Fsync(a))
			want["d/a"] = fileDesc(0o644, 51, original)
			want[fmt.Sprintf("d/%s%03d", strings.Repeat("L", 200), 65)] = fileDesc(0o644, 51, original)
			return want
		}},
		{"extrefs-dir-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			for i := 0; i < 40; i++ {
				mustT(t, f.Link(a, d, fmt.Sprintf("%s%03d", strings.Repeat("L", 200), i)))
			}
			mustT(t, f.Fsync(d))
			return map[string]string{"d/a": fileDesc(0o644, 41, original)}
		}},
		{"many-entries-dir-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			for i := 0; i < 1500; i++ {
				create(t, f, d, fmt.Sprintf("c%04d-%s", i, strings.Repeat("x", 40)), nil)
			}
			mustT(t, f.Commit())
			want := map[string]string{}
			for i := 0; i < 1500; i += 7 {
				mustT(t, f.Unlink(d, fmt.Sprintf("c%04d-%s", i, strings.Repeat("x", 40))))
				want[fmt.Sprintf("d/c%04d-%s", i, strings.Repeat("x", 40))] = ""
			}
			for i := 0; i < 300; i++ {
				create(t, f, d, fmt.Sprintf("n%04d", i), []byte(fmt.Sprint(i)))
			}
			want["d/n0299"] = fileDesc(0o644, 1, []byte("299"))
			mustT(t, f.Fsync(d))
			return want
		}},
		{"many-extents", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			m := create(t, f, d, "m", nil)
			want := make([]byte, 0)
			for i := 0; i < 1500; i++ {
				blk := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 2048)
				write(t, f, m, uint64(i)*8192, blk)
				want = append(want, make([]byte, 8192)...)
				copy(want[i*8192:], blk)
			}
			want = want[:1499*8192+4096]
			mustT(t, f.Fsync(m))
			return map[string]string{"d/m": fileDesc(0o644, 1, want)}
		}},
		{"many-extents-overwrite-committed", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			m := create(t, f, d, "m", bytes.Repeat([]byte("c"), 8<<20))
			mustT(t, f.Commit())
			want := bytes.Repeat([]byte("c"), 8<<20)
			for i := 0; i < 1000; i++ {
				off := uint64(i) * 8192
				write(t, f, m, off, []byte("NEW!"))
				copy(want[off:], "NEW!")
			}
			mustT(t, f.Fsync(m))
			return map[string]string{"d/m": fileDesc(0o644, 1, want)}
		}},
		{"rename-logged-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			e := lookupPath(t, f, "e")
			create(t, f, d, "n", []byte("new in d"))
			mustT(t, f.Fsync(d))
			mustT(t, f.Rename(topDir, "d", e, "D2", 0))
			mustT(t, f.Fsync(d))
			return map[string]string{"d": "", "e/D2/n": fileDesc(0o644, 1, []byte("new in d")), "e/D2/a": fileDesc(0o644, 1, original)}
		}},
		{"rename-dir-then-fsync-child", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			e := lookupPath(t, f, "e")
			mustT(t, f.Rename(topDir, "d", e, "D2", 0))
			write(t, f, a, 0, []byte("Z"))
			mustT(t, f.Fsync(a))
			return nil
		}},
		{"new-dir-in-renamed-dir", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			e := lookupPath(t, f, "e")
			n := mkdir(t, f, d, "N")
			x := create(t, f, n, "x", []byte("deep"))
			mustT(t, f.Rename(topDir, "d", e, "D2", 0))
			mustT(t, f.Fsync(x))
			return nil
		}},
		{"deleted-subvolume", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			svf := lookupPath(t, f, "sv/f")
			write(t, f, svf, 0, []byte("SV"))
			mustT(t, f.Fsync(svf))
			mustT(t, f.DeleteSubvolume(topDir, "sv"))
			write(t, f, a, 0, []byte("A"))
			mustT(t, f.Fsync(a))
			return map[string]string{"d/a": fileDesc(0o644, 1, append([]byte("A"), original[1:]...))}
		}},
		{"old-parent-removed-later", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			e := lookupPath(t, f, "e")
			x := lookupPath(t, f, "e/x")
			mustT(t, f.Rename(e, "x", topDir, "x", 0))
			mustT(t, f.Fsync(x))
			mustT(t, f.Rmdir(topDir, "e"))
			write(t, f, a, 0, []byte("A"))
			mustT(t, f.Fsync(a))
			return map[string]string{"x": fileDesc(0o644, 1, nil), "e": ""}
		}},
		{"log-full", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			want := map[string]string{}
			for i := 0; i < 300; i++ {
				n := create(t, f, d, fmt.Sprintf("f%03d", i), []byte(fmt.Sprint(i)))
				mustT(t, f.Fsync(n))
				want[fmt.Sprintf("d/f%03d", i)] = fileDesc(0o644, 1, []byte(fmt.Sprint(i)))
			}
			return want
		}},
		{"inline-grow", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			d := lookupPath(t, f, "d")
			n := create(t, f, d, "in", []byte("tiny"))
			mustT(t, f.Fsync(n))
			write(t, f, n, 4, bytes.Repeat([]byte("g"), 10000))
			mustT(t, f.Fsync(n))
			return map[string]string{"d/in": fileDesc(0o644, 1, append([]byte("tiny"), bytes.Repeat([]byte("g"), 10000)...))}
		}},
		{"inline-shrink-after-fsync", func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) map[string]string {
			h := lookupPath(t, f, "d/h")
			mustT(t, f.Truncate(h, 0))
			write(t, f, h, 0, []byte("now inline"))
			mustT(t, f.Fsync(h))
			return map[string]string{"d/h": fileDesc(0o644, 1, []byte("now inline"))}
		}},
	})
}
