package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
)

func mkfsCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runMkfs(args, &out)
	return out.String(), err
}

func TestMkfsNewFileDefaults(t *testing.T) {
	img := filepath.Join(t.TempDir(), "new.img")
	out, err := mkfsCmd(t, img)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Metadata:", "DUP", "51.19MiB", "free-space-tree", "crc32c"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	st, err := os.Stat(img)
	if err != nil || st.Size() != 1<<30 {
		t.Fatalf("new image: %v, size %d, want 1 GiB", err, st.Size())
	}
	if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 16<<20 {
		t.Errorf("new image has %d bytes allocated; want it sparse", blocks)
	}
	checktest.Image(t, img)
	if f := testimg.OpenFS(t, img); f.Super.TotalBytes != 1<<30 {
		t.Errorf("total_bytes %d", f.Super.TotalBytes)
	}
}

func TestMkfsRefusesExistingFilesystem(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if _, err := mkfsCmd(t, "-q", "-b", "200M", img); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(img)
	_, err := mkfsCmd(t, "-q", img)
	if err == nil || !strings.Contains(err.Error(), "existing filesystem (btrfs)") || !strings.Contains(err.Error(), "-f") {
		t.Fatalf("second mkfs without -f: %v", err)
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Fatal("refused mkfs changed the image")
	}
	// Flags after the image name work too.
	if _, err := mkfsCmd(t, img, "-f", "-q", "-m", "single", "-L", "again", "-U", "01234567-89ab-cdef-0123-456789abcdef"); err != nil {
		t.Fatal(err)
	}
	checktest.Image(t, img)
	f := testimg.OpenFS(t, img)
	if f.Super.LabelString() != "again" || f.Super.FSID.String() != "01234567-89ab-cdef-0123-456789abcdef" {
		t.Errorf("label %q fsid %v", f.Super.LabelString(), f.Super.FSID)
	}
}

func TestMkfsErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-b", "100M"}, "-b 100M is too small: the minimum for metadata profile dup is 109.00MiB (114294784 bytes)"},
		{[]string{"-b", "40M", "-m", "single"}, "-b 40M is too small: the minimum for metadata profile single is 45.00MiB"},
		{[]string{"-b", "12Q"}, "invalid size \"12Q\""},
		{[]string{"-s", "12Q"}, "invalid sector size \"12Q\""},
		{[]string{"-n", "12288"}, "power of two"},
		{[]string{"-n", "2048"}, "smaller than the sectorsize"},
		{[]string{"-n", "128K"}, "larger than 65536"},
		{[]string{"-O", "turbo"}, `unknown feature "turbo"`},
		{[]string{"-O", "^free-space-tree,block-group-tree"}, "requires the no-holes and free-space-tree"},
		{[]string{"-O", "raid56"}, "not supported"},
		{[]string{"--csum", "md5"}, `unknown checksum type "md5"`},
		{[]string{"-m", "raid1"}, "several devices"},
		{[]string{"--compress", "zstd"}, "--rootdir"},
		{[]string{"--compress", "lz4", "--rootdir", dir}, "unknown algorithm"},
		{[]string{"--rootdir", filepath.Join(dir, "no-such-dir")}, "rootdir"},
	}
	for _, c := range cases {
		img := filepath.Join(dir, "x.img")
		_, err := mkfsCmd(t, append(c.args, img)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mkfs %v: error %v, want %q", c.args, err, c.want)
		}
		if _, serr := os.Stat(img); serr == nil {
			t.Errorf("mkfs %v left %s behind", c.args, img)
			os.Remove(img)
		}
	}
	if _, err := mkfsCmd(t, "a", "b"); err == nil {
		t.Error("two images accepted")
	}
}

func TestMkfsGrowsFileAndFeatures(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mkfsCmd(t, "-q", "-b", "300M", "-n", "4k", "--csum", "xxhash", "-O", "block-group-tree", img); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(img); st.Size() != 300<<20 {
		t.Fatalf("image is %d bytes, want 300 MiB", st.Size())
	}
	checktest.Image(t, img)
	f := testimg.OpenFS(t, img)
	if f.BlockGroupTreeID() != 11 || f.Super.NodeSize != 4096 || f.Csum.String() != "xxhash64" {
		t.Errorf("bgt %d nodesize %d csum %v", f.BlockGroupTreeID(), f.Super.NodeSize, f.Csum)
	}
	out, err := mkfsCmd(t, "-O", "list-all")
	if err != nil || !strings.Contains(out, "block-group-tree") {
		t.Errorf("list-all: %v\n%s", err, out)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"4096": 4096, "4k": 4096, "16K": 16384, "1G": 1 << 30,
		"1GiB": 1 << 30, "512M": 512 << 20, "2T": 2 << 40, "10GB": 10 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "-1", "1.5G", "99999999999E"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}
