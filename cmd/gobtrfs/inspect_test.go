package main

import (
	"bytes"
	"fmt"
	mrand "math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// The tests below run `btrfs inspect-internal dump-super|dump-tree` and
// `gobtrfs inspect` with the same arguments on the same image and require
// identical output. The one deliberate difference is dump-tree's first
// line, the program banner ("btrfs-progs v6.2" versus ours), which is
// dropped from both before comparing. Nothing else is normalized.

func needProgs(t *testing.T) {
	t.Helper()
	testutil.NeedProgs(t)
	out, _ := exec.Command("btrfs", "--version").Output()
	if !strings.Contains(string(out), "v6.2") {
		t.Logf("note: outputs are modelled on btrfs-progs v6.2; installed: %s", strings.TrimSpace(string(out)))
	}
}

// compareDump runs both tools with args (image appended), diffs stdout and
// returns btrfs-progs' output.
func compareDump(t *testing.T, img string, args ...string) string {
	t.Helper()
	full := append(append([]string{}, args...), img)
	cmd := exec.Command("btrfs", append([]string{"inspect-internal"}, full...)...)
	var progsOut, progsErr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &progsOut, &progsErr
	if err := cmd.Run(); err != nil {
		t.Fatalf("btrfs inspect-internal %s: %v\n%s", strings.Join(full, " "), err, progsErr.String())
	}
	var ours, oursErr bytes.Buffer
	if err := inspectMain(full, &ours, &oursErr); err != nil {
		t.Fatalf("gobtrfs inspect %s: %v\n%s", strings.Join(full, " "), err, oursErr.String())
	}
	want, got := progsOut.String(), ours.String()
	if args[0] == "dump-tree" {
		want, got = dropFirstLine(want), dropFirstLine(got)
	}
	if want != got {
		t.Errorf("gobtrfs inspect %s differs from btrfs-progs:\n%s", strings.Join(full, " "), lineDiff(want, got))
	}
	if strings.TrimSpace(oursErr.String()) != "" {
		t.Errorf("gobtrfs inspect %s wrote to stderr:\n%s", strings.Join(full, " "), oursErr.String())
	}
	return want
}

var itemLine = regexp.MustCompile(`^\titem \d+ key \(\S+ (\S+) `)

// bodyMarkers name item body forms worth tracking beyond the item type.
var bodyMarkers = map[string]string{
	"\t\ttree block backref root":      "inline:TREE_BLOCK_REF",
	"\t\tshared block backref parent":  "inline:SHARED_BLOCK_REF",
	"\t\tshared data backref parent":   "inline:SHARED_DATA_REF",
	"\t\ttree block key (":             "extent:tree_block_info",
	"FULL_BACKREF":                     "extent:FULL_BACKREF",
	"type 2 (prealloc)":                "file_extent:prealloc",
	"type 0 (inline)":                  "file_extent:inline",
	"extent data disk byte 0 nr 0":     "file_extent:hole",
	"compression 1 (zlib)":             "compression:zlib",
	"compression 2 (lzo)":              "compression:lzo",
	"compression 3 (zstd)":             "compression:zstd",
	"flags 0x1(RDONLY)":                "root:RDONLY",
	"NODATACOW":                        "inode:NODATACOW",
	"\t\tdata ":                        "xattr:data",
	"location key (FREE_SPACE UNTYPED": "free_space_header",
	"\t\tbalance status flags":         "balance_item",
	"\t\tdevice stats":                 "dev_stats",
}

// seenItemTypes adds the item types of dump-tree output to seen; nodes
// (internal tree blocks) count as "node", and bodyMarkers as their names.
func seenItemTypes(out string, seen map[string]int) {
	for _, l := range strings.Split(out, "\n") {
		if m := itemLine.FindStringSubmatch(l); m != nil {
			seen[m[1]]++
		} else if strings.HasPrefix(l, "node ") && strings.Contains(l, " level ") {
			seen["node"]++
		}
		for marker, name := range bodyMarkers {
			if strings.Contains(l, marker) {
				seen[name]++
			}
		}
	}
}

// requireSeen fails unless every name occurred in the compared output.
func requireSeen(t *testing.T, seen map[string]int, names ...string) {
	t.Helper()
	var missing []string
	for _, n := range names {
		if seen[n] == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("compared output never contained %v (test images do not cover them)", missing)
	}
}

func seenList(seen map[string]int) string {
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

func dropFirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// lineDiff shows the first differing lines with context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "btrfs-progs: %d lines, gobtrfs: %d lines\n", len(w), len(g))
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 8; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			for j := max(0, i-3); j < i && shown == 0; j++ {
				fmt.Fprintf(&b, "  %5d   %q\n", j+1, w[j])
			}
			fmt.Fprintf(&b, "- %5d   %q\n+ %5d   %q\n", i+1, wl, i+1, gl)
			shown++
		}
	}
	return b.String()
}

// populate fills dir with files that exercise many item types: inline and
// regular extents of several sizes, holes, symlinks, hard links, xattrs,
// special files, long and non-ASCII names, and enough entries to need
// several leaves.
func populate(t *testing.T, dir string, rng *mrand.Rand) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	must(os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
	for _, n := range []int{0, 1, 100, 2048, 3000, 4095, 4096, 4097, 65536, 100000, 1<<20 + 1} {
		must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("size%d", n)), randBytes(n), 0o644))
	}
	must(os.WriteFile(filepath.Join(dir, "zeros"), make([]byte, 3<<20), 0o600))
	f, err := os.Create(filepath.Join(dir, "sparse"))
	must(err)
	f.WriteAt(randBytes(4096), 512<<10)
	must(f.Truncate(2 << 20))
	f.Close()
	must(os.Symlink("size100", filepath.Join(dir, "link")))
	must(os.Symlink(strings.Repeat("long/target/", 80), filepath.Join(dir, "longlink")))
	must(os.Link(filepath.Join(dir, "size4096"), filepath.Join(dir, "sub", "hardlink")))
	must(os.Link(filepath.Join(dir, "size4096"), filepath.Join(dir, "sub", "deeper", "hardlink2")))
	must(os.WriteFile(filepath.Join(dir, strings.Repeat("n", 255)), []byte("long name"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "ünïcödé name with spaces"), []byte("x"), 0o644))
	for i := 0; i < 300; i++ {
		must(os.WriteFile(filepath.Join(dir, "sub", fmt.Sprintf("file%03d", i)), randBytes(rng.Intn(6000)), 0o644))
	}
	xattrs := map[string][]byte{"user.small": []byte("v"), "user.big": bytes.Repeat([]byte("x"), 300),
		"user.empty": nil}
	for name, val := range xattrs {
		for _, p := range []string{filepath.Join(dir, "size100"), filepath.Join(dir, "sub")} {
			if err := unix.Setxattr(p, name, val, 0); err != nil {
				t.Logf("no xattrs in the source tree (%v); xattr items untested here", err)
				break
			}
		}
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Logf("mkfifo: %v", err)
	}
	if os.Geteuid() == 0 {
		must(unix.Mknod(filepath.Join(dir, "chardev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
		must(unix.Mknod(filepath.Join(dir, "blockdev"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0))))
	}
}

type imageSpec struct {
	name string
	mkfs []string
	tune []string // btrfstune arguments applied after mkfs
}

var imageSpecs = []imageSpec{
	{name: "crc32c-16k-dup", mkfs: []string{"--csum", "crc32c", "-m", "dup"}},
	{name: "xxhash-4k-single", mkfs: []string{"--csum", "xxhash", "-n", "4096", "-m", "single"}},
	{name: "sha256-64k-dup", mkfs: []string{"--csum", "sha256", "-n", "65536", "-m", "dup"}},
	{name: "blake2-4k-dup-quota", mkfs: []string{"--csum", "blake2", "-n", "4096", "-m", "dup", "-R", "quota"}},
	{name: "fat-extents-holes-nofst", mkfs: []string{"-n", "4096", "-O", "^skinny-metadata,^no-holes", "-R", "^free-space-tree"}},
	{name: "mixed-label", mkfs: []string{"-M", "-n", "4096", "-L", "my label"}},
	{name: "metadata-uuid", mkfs: []string{"-n", "16384"}, tune: []string{"-m"}},
	{name: "seeding", mkfs: []string{"-n", "16384"}, tune: []string{"-S", "1"}},
}

func makeImage(t *testing.T, spec imageSpec, rng *mrand.Rand) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	populate(t, src, rng)
	img := filepath.Join(dir, "img")
	testutil.Mkfs(t, img, 512<<20, append([]string{"--rootdir", src}, spec.mkfs...)...)
	if len(spec.tune) > 0 {
		testutil.Run(t, "btrfstune", append(append([]string{"-f"}, spec.tune...), img)...)
	}
	checktest.Image(t, img)
	return img
}

// dumpArgs lists the argument sets compared on every image.
func dumpArgs(t *testing.T, img string) [][]string {
	fs := testimg.OpenFS(t, img)
	fsRoot, _, err := fs.RootItem(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	sets := [][]string{
		{"dump-super"}, {"dump-super", "-f"}, {"dump-super", "-a"}, {"dump-super", "-f", "-s", "1"},
		{"dump-tree"}, {"dump-tree", "--dfs"}, {"dump-tree", "--csum-items"}, {"dump-tree", "--csum-headers"},
		{"dump-tree", "--hide-names"}, {"dump-tree", "-e"}, {"dump-tree", "-d"}, {"dump-tree", "-r"},
		{"dump-tree", "-R"}, {"dump-tree", "-u"},
		{"dump-tree", "-b", fmt.Sprint(uint64(fs.Super.ChunkRoot))},
		{"dump-tree", "-b", fmt.Sprint(uint64(fsRoot.Bytenr)), "--follow"},
		{"dump-tree", "-b", fmt.Sprint(uint64(fsRoot.Bytenr)), "--follow", "--dfs"},
	}
	for _, tr := range []string{"root", "chunk", "extent", "dev", "fs", "csum", "uuid", "free_space", "quota",
		"DATA_RELOC", "BTRFS_FS_TREE_OBJECTID", "5", "18446744073709551607"} {
		sets = append(sets, []string{"dump-tree", "-t", tr})
	}
	return sets
}

func TestDumpMatchesBtrfsProgs(t *testing.T) {
	needProgs(t)
	seen := map[string]int{}
	for i, spec := range imageSpecs {
		t.Run(spec.name, func(t *testing.T) {
			// Contents are fixed (seeded by the spec's index): the comparison
			// is against btrfs-progs on the same image, so nothing random
			// needs replaying.
			img := makeImage(t, spec, mrand.New(mrand.NewSource(int64(i))))
			for _, args := range dumpArgs(t, img) {
				seenItemTypes(compareDump(t, img, args...), seen)
			}
			decodeAllItems(t, img)
		})
	}
	t.Logf("item types compared equal: %s", seenList(seen))
	requireSeen(t, seen, "node", "INODE_ITEM", "INODE_REF", "DIR_ITEM", "DIR_INDEX", "XATTR_ITEM", "EXTENT_DATA",
		"EXTENT_CSUM", "ROOT_ITEM", "EXTENT_ITEM", "METADATA_ITEM", "BLOCK_GROUP_ITEM",
		"FREE_SPACE_INFO", "FREE_SPACE_EXTENT", "DEV_EXTENT", "DEV_ITEM", "CHUNK_ITEM", "UUID_KEY_SUBVOL",
		"QGROUP_STATUS", "QGROUP_INFO", "QGROUP_LIMIT")
}
