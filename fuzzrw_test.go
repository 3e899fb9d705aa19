package gobtrfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/testutil/fuzzimg"
)

// FuzzRWImage opens each damaged image (FuzzImageWalk's mutation
// scripts) read-write and changes it through RW and RWFile as a library
// user would: create, write, append, truncate, rename, link, remove what
// the top directory lists, a snapshot, commits. Calls may fail; none may
// panic, and each input ends within testutil.DefaultFuzzBounds.
func FuzzRWImage(f *testing.F) {
	img := fuzzImgBase(f)
	for _, s := range img.CoreSeeds() {
		f.Add(s.Script)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		path := filepath.Join(fuzzimg.TempDir(t), "rw.img")
		if err := img.Apply(script).WriteFile(path); err != nil {
			t.Fatal(err)
		}
		testutil.FuzzBound(t, script, func() {
			w, err := gobtrfs.OpenRW(path, nil)
			if err != nil {
				return
			}
			defer w.Close()
			ents, _ := w.ReadDir("/")
			if f, err := w.OpenFile("/fz", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
				f.Write(make([]byte, 10000))
				f.Write([]byte("tail"))
				f.Truncate(5000)
				f.Close()
			}
			w.Commit()
			for i, e := range ents {
				if i >= 6 {
					break
				}
				n := "/" + e.Name()
				w.Stat(n)
				w.WriteAt(n, []byte("x"), 4096)
				w.Link(n, n+".l")
				w.Rename(n, n+".r")
				w.Setxattr(n+".r", "user.fz", []byte("v"), 0)
				if e.IsDir() {
					w.RemoveAll(n + ".r")
				} else {
					w.Remove(n + ".r")
				}
			}
			w.Snapshot("/", "/snap", false)
			fs.WalkDir(w.FS(), ".", func(string, fs.DirEntry, error) error { return nil })
			w.Commit()
		})
	})
}
