package fsops_test

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// The random test also reads every image it writes back through the public
// read-only package, an implementation independent of fsops.
func init() {
	fsops.SetPublicReaderForTest(describePublic)
}

func describePublic(img string) (map[string]string, error) {
	f, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := f.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			fi, err := f.Lstat(p)
			if err != nil {
				return err
			}
			st := fi.Sys().(*gobtrfs.Stat)
			var body string
			switch st.Mode & 0o170000 {
			case 0o100000:
				data, err := f.ReadFile(p)
				if err != nil {
					return err
				}
				body = fmt.Sprintf("size %d sha %x", len(data), sha256.Sum256(data))
			case 0o120000:
				target, err := f.ReadLink(p)
				if err != nil {
					return err
				}
				body = "-> " + target
			default:
				if st.Rdev != 0 {
					body = fmt.Sprintf("rdev %d", ondisk.DecodeDevT(st.Rdev))
				}
			}
			xs, err := xattrsOf(f, p, fi)
			if err != nil {
				return err
			}
			out["/"+p] = fsops.DescribeLineForTest(st.Mode, st.UID, st.GID, st.Nlink, body, xs)
			if fi.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return nil, err
	}
	return out, nil
}

func xattrsOf(f *gobtrfs.FS, p string, _ fs.FileInfo) (map[string]string, error) {
	xs, err := f.Xattrs(p)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, x := range xs {
		m[x.Name] = string(x.Value)
	}
	return m, nil
}
