package testimg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func timeNs(sec, nsec int64) time.Time { return time.Unix(sec, nsec) }

// CompareOptions relax Compare where the source of truth cannot be exact.
type CompareOptions struct {
	// MtimeSecondsOnly compares mtimes to the second (mkfs dropped nsec).
	MtimeSecondsOnly bool
	// Atime also compares access times.
	Atime bool
	// SkipRdev does not compare device numbers.
	SkipRdev bool
	// SkipRootMeta skips the mode, owner, times and xattrs of the top directory.
	SkipRootMeta bool
	// SkipTimes reports entries whose times are not meaningful (the
	// kernel's placeholder dirs get the current time).
	SkipTimes func(rel string, st *unix.Stat_t) bool
	// IgnoreXattr skips attributes by name.
	IgnoreXattr func(name string) bool
}

type entry struct {
	rel string
	st  unix.Stat_t
}

func walk(root string) (map[string]*entry, []string, error) {
	m := map[string]*entry{}
	var order []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e := &entry{rel: rel}
		if err := unix.Lstat(p, &e.st); err != nil {
			return err
		}
		m[rel] = e
		order = append(order, rel)
		return nil
	})
	return m, order, err
}

// Compare checks that tree got equals tree want and returns every
// difference (at most 50).
func Compare(want, got string, o CompareOptions) []string {
	var diffs []string
	add := func(format string, args ...any) {
		if len(diffs) < 50 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	wm, order, err := walk(want)
	if err != nil {
		return []string{"walk " + want + ": " + err.Error()}
	}
	gm, gorder, err := walk(got)
	if err != nil {
		return []string{"walk " + got + ": " + err.Error()}
	}
	for _, rel := range gorder {
		if wm[rel] == nil {
			add("%s: extra in %s", rel, got)
		}
	}
	// hard link groups: first path of each inode on each side
	wfirst := map[[2]uint64]string{}
	gfirst := map[[2]uint64]string{}
	for _, rel := range order {
		w, g := wm[rel], gm[rel]
		if g == nil {
			add("%s: missing", rel)
			continue
		}
		compareOne(rel, filepath.Join(want, rel), filepath.Join(got, rel), &w.st, &g.st, o, add)
		if w.st.Mode&unix.S_IFMT != unix.S_IFDIR {
			wk, gk := [2]uint64{w.st.Dev, w.st.Ino}, [2]uint64{g.st.Dev, g.st.Ino}
			wf, ok1 := wfirst[wk]
			gf, ok2 := gfirst[gk]
			if !ok1 {
				wfirst[wk], wf = rel, rel
			}
			if !ok2 {
				gfirst[gk], gf = rel, rel
			}
			if wf != gf {
				add("%s: hard link structure: linked with %q in want, %q in got", rel, wf, gf)
			}
		}
	}
	return diffs
}

func compareOne(rel, wp, gp string, w, g *unix.Stat_t, o CompareOptions, add func(string, ...any)) {
	isRoot := rel == "."
	wt, gt := w.Mode&unix.S_IFMT, g.Mode&unix.S_IFMT
	if wt != gt {
		add("%s: type %o, got %o", rel, wt, gt)
		return
	}
	if !(isRoot && o.SkipRootMeta) {
		if w.Mode != g.Mode {
			add("%s: mode %o, got %o", rel, w.Mode, g.Mode)
		}
		if w.Uid != g.Uid || w.Gid != g.Gid {
			add("%s: owner %d:%d, got %d:%d", rel, w.Uid, w.Gid, g.Uid, g.Gid)
		}
		if o.SkipTimes == nil || !o.SkipTimes(rel, w) {
			compareTime(rel, "mtime", w.Mtim, g.Mtim, o.MtimeSecondsOnly, add)
			if o.Atime {
				compareTime(rel, "atime", w.Atim, g.Atim, o.MtimeSecondsOnly, add)
			}
		}
		compareXattrs(rel, wp, gp, o, add)
	}
	if wt != unix.S_IFDIR && w.Nlink != g.Nlink {
		add("%s: nlink %d, got %d", rel, w.Nlink, g.Nlink)
	}
	switch wt {
	case unix.S_IFREG:
		if w.Size != g.Size {
			add("%s: size %d, got %d", rel, w.Size, g.Size)
			return
		}
		if err := sameContent(wp, gp); err != nil {
			add("%s: %v", rel, err)
		}
	case unix.S_IFLNK:
		wl, _ := os.Readlink(wp)
		gl, _ := os.Readlink(gp)
		if wl != gl {
			add("%s: symlink %q, got %q", rel, wl, gl)
		}
	case unix.S_IFCHR, unix.S_IFBLK:
		if !o.SkipRdev && w.Rdev != g.Rdev {
			add("%s: rdev %d:%d, got %d:%d", rel, unix.Major(w.Rdev), unix.Minor(w.Rdev),
				unix.Major(g.Rdev), unix.Minor(g.Rdev))
		}
	}
}

func compareTime(rel, what string, w, g unix.Timespec, secOnly bool, add func(string, ...any)) {
	if w.Sec != g.Sec || (!secOnly && w.Nsec != g.Nsec) {
		add("%s: %s %d.%09d, got %d.%09d", rel, what, w.Sec, w.Nsec, g.Sec, g.Nsec)
	}
}

// Xattrs lists path's xattrs (not following symlinks).
func Xattrs(p string) (map[string][]byte, error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, err
	}
	out := map[string][]byte{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			return nil, fmt.Errorf("getxattr %s: %w", name, err)
		}
		out[name] = v[:m]
	}
	return out, nil
}

func compareXattrs(rel, wp, gp string, o CompareOptions, add func(string, ...any)) {
	wx, err1 := Xattrs(wp)
	gx, err2 := Xattrs(gp)
	if err1 != nil || err2 != nil {
		add("%s: xattrs: %v / %v", rel, err1, err2)
		return
	}
	var names []string
	for k := range wx {
		names = append(names, k)
	}
	for k := range gx {
		if _, ok := wx[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if o.IgnoreXattr != nil && o.IgnoreXattr(k) {
			continue
		}
		wv, wok := wx[k]
		gv, gok := gx[k]
		switch {
		case !gok:
			add("%s: xattr %s missing", rel, k)
		case !wok:
			add("%s: xattr %s extra", rel, k)
		case !bytes.Equal(wv, gv):
			add("%s: xattr %s = %q, got %q", rel, k, wv, gv)
		}
	}
}

func sameContent(a, b string) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	var off int64
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			for i := 0; i < min(na, nb); i++ {
				if ba[i] != bb[i] {
					return fmt.Errorf("content differs at offset %d", off+int64(i))
				}
			}
			return fmt.Errorf("content length differs near offset %d", off+int64(min(na, nb)))
		}
		off += int64(na)
		if ea != nil || eb != nil {
			return nil
		}
	}
}
