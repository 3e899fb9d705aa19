package gobtrfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gobtrfs/gobtrfs"
)

// tempDir is a directory for an example's images; the example removes it.
func tempDir() string {
	dir, err := os.MkdirTemp("", "gobtrfs-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// Make an image, write to it, then read it back through io/fs. This is
// the README's example.
func Example() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "disk.img")

	// mkfs with btrfs-progs' defaults, then change the image without mounting it
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		log.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, &gobtrfs.RWOptions{Compress: "zstd"})
	if err != nil {
		log.Fatal(err)
	}
	w.MkdirAll("/etc", 0o755)
	w.WriteFile("/etc/hostname", []byte("box\n"), 0o644)
	w.CreateSubvolume("/data")
	w.Snapshot("/data", "/data@1", true)
	if err := w.Close(); err != nil { // commits; the kernel mounts the result
		log.Fatal(err)
	}

	fsys, err := gobtrfs.Open(img, nil) // read-only, the default subvolume as "/"
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	data, err := fs.ReadFile(fsys, "etc/hostname") // *gobtrfs.FS is an io/fs.FS
	if err != nil {
		log.Fatal(err)
	}
	info, err := fsys.Stat("data@1")
	if err != nil {
		log.Fatal(err)
	}
	st := info.Sys().(*gobtrfs.Stat) // ino, subvolume, nlink, uid, gid, rdev, ns times, flags
	fmt.Printf("hostname: %s", data)
	fmt.Printf("data@1: %v, inode %d of subvolume %d\n", info.Mode(), st.Ino, st.Subvol)
	// Output:
	// hostname: box
	// data@1: drwxr-xr-x, inode 256 of subvolume 257
}

// Mkfs takes mkfs.btrfs's options; Rootdir fills the new filesystem from
// a host directory.
func ExampleMkfs() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "docs"), 0o755)
	os.WriteFile(filepath.Join(src, "docs", "readme.txt"), []byte(strings.Repeat("compress me ", 1000)), 0o644)
	img := filepath.Join(dir, "disk.img")

	err := gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{
		Size:            256 << 20,
		Label:           "example",
		Csum:            "xxhash",
		MetadataProfile: "dup",
		NodeSize:        16384,
		Features:        "block-group-tree",
		Rootdir:         src,
		Compress:        "zstd",
	})
	if err != nil {
		log.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	b, err := fs.ReadFile(fsys, "docs/readme.txt") // stored zstd-compressed
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(b), "bytes,", strings.Count(string(b), "compress me"), "times \"compress me\"")

	// an existing filesystem is only overwritten with Force
	err = gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{})
	fmt.Println(err != nil)
	// Output:
	// 12000 bytes, 1000 times "compress me"
	// true
}

// Files of an *FS are io.ReaderAt and io.Seeker, with SEEK_DATA and
// SEEK_HOLE.
func ExampleFS_OpenFile() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "disk.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		log.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	w.WriteAt("/big.bin", []byte("data after a hole"), 1<<20) // 1 MiB hole, then data
	w.Close()

	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	f, err := fsys.OpenFile("big.bin")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4)
	f.ReadAt(buf, 1<<20)
	next, _ := f.Seek(0, gobtrfs.SeekData)
	fmt.Printf("%q at %d; data starts at %d\n", buf, 1<<20, next)
	// Output:
	// "data" at 1048576; data starts at 1048576
}

// RW.Create returns an *RWFile: an io.Writer, io.WriterAt and io.Seeker
// whose writes go into the image's running transaction.
func ExampleRW_Create() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "disk.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		log.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	f, err := w.Create("/log.txt")
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		fmt.Fprintf(f, "line %d\n", i)
	}
	f.WriteAt([]byte("LINE"), 0)
	io.Copy(f, strings.NewReader("copied\n"))
	f.Seek(0, io.SeekStart)
	b, _ := io.ReadAll(f)
	f.Close()
	fmt.Print(string(b))
	// Output:
	// LINE 0
	// line 1
	// line 2
	// copied
}

// RW.FS is an io/fs view of the image being written, uncommitted changes
// included.
func ExampleRW_FS() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "disk.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		log.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	w.MkdirAll("/a/b", 0o755)
	w.WriteFile("/a/b/c.txt", []byte("c"), 0o644)
	w.Symlink("b/c.txt", "/a/link")

	fs.WalkDir(w.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Println(p, d.Type())
		return nil
	})
	// Output:
	// . d---------
	// a d---------
	// a/b d---------
	// a/b/c.txt ----------
	// a/link L---------
}

// Opening something that is not btrfs fails with ErrNotBtrfs; a closed FS
// answers fs.ErrClosed.
func Example_errors() {
	dir := tempDir()
	defer os.RemoveAll(dir)
	notBtrfs := filepath.Join(dir, "notes.txt")
	os.WriteFile(notBtrfs, []byte("hello"), 0o644)
	_, err := gobtrfs.Open(notBtrfs, nil)
	fmt.Println(errors.Is(err, gobtrfs.ErrNotBtrfs))

	img := filepath.Join(dir, "disk.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		log.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		log.Fatal(err)
	}
	fsys.Close()
	_, err = fsys.Open(".")
	fmt.Println(errors.Is(err, fs.ErrClosed))
	// Output:
	// true
	// true
}

// A filesystem of several devices is opened from all of them, in any
// order; what needs a missing device fails with ErrMissingDevice.
func ExampleOpenDevices() {
	fsys, err := gobtrfs.OpenDevices([]string{"d1.img", "d2.img"}, &gobtrfs.Options{
		Warn: func(msg string) { log.Print(msg) }, // a missing device is named here
	})
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	if _, err := fs.ReadFile(fsys, "some/file"); errors.Is(err, gobtrfs.ErrMissingDevice) {
		log.Print("the file has no copy on the devices given")
	}
}

// SuperMirror numbers the superblock copies from 0, as btrfs restore -u
// and btrfs check -s do: read an image from the copy at 64 MiB.
func ExampleOptions_superMirror() {
	fsys, err := gobtrfs.Open("damaged.img", &gobtrfs.Options{SuperMirror: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
}
