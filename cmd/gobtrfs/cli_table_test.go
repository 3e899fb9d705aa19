package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// cliCase is one row of the CLI table: a command line, its exit status and
// excerpts of what it prints.
type cliCase struct {
	args   []string // {img}: the fixture image, {dir}: a directory, {new}: a fresh path, {junk}: a file that is no btrfs
	code   int
	stdout []string // each must appear in stdout
	stderr []string // each must appear in stderr
	// once: stderr holds this exactly once (errors are printed once)
	once string
}

// cliFixture makes a small image holding a directory, a file and names
// with a newline and a control byte; junk is a file that is no btrfs.
func cliFixture(t *testing.T) (img, junk string) {
	t.Helper()
	dir := t.TempDir()
	img = filepath.Join(dir, "fixture.img")
	if _, err := mkfsCmd(t, "-q", "-b", "200M", img); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	for _, name := range []string{"d/plain", "d/a\nb", "d/x\x01y"} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := putMain([]string{img, filepath.Join(src, "d"), "/"}, os.Stderr); err != nil {
		t.Fatal(err)
	}
	junk = filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("not btrfs "), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	return img, junk
}

// runCLIProc runs gobtrfs in its own process and returns its exit status and
// output.
func runCLIProc(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := gobtrfsCmd(context.Background(), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("gobtrfs %q: %v", args, err)
	}
	return code, o.String(), e.String()
}

// TestCLITable: command lines and what they do: GNU options, help and
// version, exit status 0/1/2, errors printed once, btrfs-progs spellings
// (letters, unique prefixes, inspect-internal), plain errors, ls for
// scripts.
func TestCLITable(t *testing.T) {
	img, junk := cliFixture(t)
	dir := t.TempDir()
	cases := []cliCase{
		// help, version, completion, man
		{args: nil, code: 2, stderr: []string{"Available Commands:", "missing command"}},
		{args: []string{"--version"}, code: 0, stdout: []string{"gobtrfs version "}},
		{args: []string{"help", "mkfs"}, code: 0, stdout: []string{"-b, --byte-count SIZE", "-s, --sectorsize SIZE"}},
		{args: []string{"mkfs", "-h"}, code: 0, stdout: []string{"Usage:", "--rootdir DIR"}},
		{args: []string{"ls", "--help"}, code: 0, stdout: []string{"-0, --null", "--json"}},
		{args: []string{"help", "inspect", "dump-tree"}, code: 0, stdout: []string{"-t, --tree ID"}},
		{args: []string{"restore", "-h"}, code: 0},
		{args: []string{"subvolume", "--help"}, code: 0},
		{args: []string{"mount", "--help"}, code: 0, stdout: []string{"--daemon", "-d, --debug"}},
		{args: []string{"completion", "bash"}, code: 0, stdout: []string{"bash completion V2 for gobtrfs"}},
		{args: []string{"completion", "zsh"}, code: 0, stdout: []string{"#compdef gobtrfs"}},
		{args: []string{"completion", "fish"}, code: 0, stdout: []string{"complete -c gobtrfs"}},
		{args: []string{"man", filepath.Join(dir, "man")}, code: 0, stdout: []string{"man pages to"}},
		{args: []string{"__complete", "mkfs", "--csum", ""}, code: 0, stdout: []string{"xxhash\n"}},
		{args: []string{"__complete", "insp", "dump-tree", "-t", ""}, code: 0, stdout: []string{"extent\n"}},
		// usage errors: exit 2, printed once, with a pointer to --help
		{args: []string{"bogus"}, code: 2, once: `gobtrfs: unknown command "bogus"`, stderr: []string{"Try 'gobtrfs --help'"}},
		{args: []string{"mkfss"}, code: 2, stderr: []string{"did you mean mkfs?"}},
		{args: []string{"ls"}, code: 2, once: "gobtrfs ls: need IMAGE and at most one PATH"},
		{args: []string{"ls", "-x", "{img}"}, code: 2, once: "unknown shorthand flag: 'x' in -x", stderr: []string{"Try 'gobtrfs ls --help'"}},
		{args: []string{"rm", "--bogus", "{img}", "/x"}, code: 2, once: "unknown flag: --bogus"},
		{args: []string{"inspect"}, code: 2, stderr: []string{"missing subcommand"}},
		{args: []string{"inspect", "dump-everything", "{img}"}, code: 2, stderr: []string{`unknown command "dump-everything"`}},
		{args: []string{"ls", "-s", "3", "{img}"}, code: 2, stderr: []string{"superblock mirrors are 0 (primary), 1 and 2"}},
		{args: []string{"ls", "-0", "--json", "{img}"}, code: 2, stderr: []string{"-0 and --json exclude each other"}},
		{args: []string{"mkfs", "-b", "12Q", "{new}"}, code: 2, once: `-b/--byte-count: invalid size "12Q"`},
		{args: []string{"mount", "--bogus"}, code: 2, stderr: []string{"unknown option --bogus"}},
		{args: []string{"restore", "--bogus", "{img}", "{new}"}, code: 2, once: "unknown flag: --bogus"},
		// GNU options: grouped short flags, attached values, options after operands
		{args: []string{"rm", "-rf", "{img}", "/no-such", "/d/plain"}, code: 0},
		{args: []string{"ls", "{img}", "/d"}, code: 0, stdout: []string{`$'a\nb'`, `$'x\x01y'`}},
		{args: []string{"ls", "{img}", "-lR"}, code: 0, stdout: []string{"-rw-r--r--", "$'d/a\\nb'"}},
		{args: []string{"ls", "-0", "{img}", "/d"}, code: 0, stdout: []string{"a\nb\x00", "x\x01y\x00"}},
		{args: []string{"cat", "{img}", "/nope"}, code: 1, once: "gobtrfs cat: /nope: no such file or directory in "},
		{args: []string{"ls", "{img}", "/d/nope"}, code: 1, once: "gobtrfs ls: /d/nope: no such file or directory in "},
		{args: []string{"cat", "{img}", "/d"}, code: 1, once: "gobtrfs cat: /d: is a directory"},
		{args: []string{"mkfs", "-fq", "-Lfoo", "{img}"}, code: 0},
		{args: []string{"inspect", "dump-super", "{img}"}, code: 0, stdout: []string{"label\t\t\tfoo\n"}},
		{args: []string{"mkfs", "-f", "--label=bar", "-q", "{img}"}, code: 0},
		{args: []string{"insp", "dump-s", "{img}"}, code: 0, stdout: []string{"label\t\t\tbar\n"}},
		// btrfs-progs spellings
		{args: []string{"inspect-internal", "dump-tree", "-t", "root", "{img}"}, code: 0, stdout: []string{"root tree"}},
		{args: []string{"inspect", "dump-tree", "-t", "log", "{img}"}, code: 0, stdout: []string{"dump format"}},
		{args: []string{"inspect", "dump-tree", "-t", "tree_log", "{img}"}, code: 0, stdout: []string{"dump format"}},
		{args: []string{"insp", "dump-s", "-s1", "{img}"}, code: 0, stdout: []string{"superblock: bytenr=67108864"}},
		{args: []string{"sub", "li", "{img}"}, code: 0},
		{args: []string{"su", "li", "{img}"}, code: 0},
		{args: []string{"mkfs", "-q", "-b", "200M", "-s", "8k", "{new}"}, code: 0, stderr: []string{"may not be mountable, sectorsize 8192 doesn't match page size"}},
		{args: []string{"mkfs", "-q", "-s", "200M", "{new}"}, code: 0, stderr: []string{"-s 200M is read as -b 200M"}},
		// plain errors: exit 1, printed once
		{args: []string{"ls", "{dir}"}, code: 1, once: "is a directory, not a btrfs image"},
		{args: []string{"check", "{junk}"}, code: 1, once: "not a btrfs filesystem (no valid superblock"},
		{args: []string{"cat", "{junk}", "/x"}, code: 1, once: "not a btrfs filesystem (no valid superblock"},
		{args: []string{"mkfs", "-b", "100M", "{new}"}, code: 1, once: "-b 100M is too small"},
		{args: []string{"mkfs", "{dir}"}, code: 1, once: "is a directory; mkfs needs an image file"},
	}
	for _, c := range cases {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			a = strings.ReplaceAll(a, "{img}", img)
			a = strings.ReplaceAll(a, "{dir}", dir)
			a = strings.ReplaceAll(a, "{junk}", junk)
			a = strings.ReplaceAll(a, "{new}", filepath.Join(t.TempDir(), "new.img"))
			args[i] = a
		}
		code, stdout, stderr := runCLIProc(t, args...)
		line := "gobtrfs " + strings.Join(c.args, " ")
		if code != c.code {
			t.Errorf("%s: exit status %d, want %d\nstdout: %.500s\nstderr: %.500s", line, code, c.code, stdout, stderr)
			continue
		}
		for _, w := range c.stdout {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: stdout lacks %q:\n%.1000s", line, w, stdout)
			}
		}
		for _, w := range c.stderr {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%.1000s", line, w, stderr)
			}
		}
		if c.once != "" && strings.Count(stderr, c.once) != 1 {
			t.Errorf("%s: stderr has %q %d times, want once:\n%.1000s", line, c.once, strings.Count(stderr, c.once), stderr)
		}
		if c.code == 0 && strings.Contains(stderr, "Usage:") {
			t.Errorf("%s: usage printed on success:\n%.500s", line, stderr)
		}
	}
}

// TestCLILsJSON: ls --json is a JSON array whose names are the names as
// they are, control bytes included.
func TestCLILsJSON(t *testing.T) {
	img, _ := cliFixture(t)
	code, stdout, stderr := runCLIProc(t, "ls", "--json", "-R", img)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ents []lsJSON
	if err := json.Unmarshal([]byte(stdout), &ents); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, e := range ents {
		got[e.Path] = e.Type
	}
	for p, typ := range map[string]string{"d": "dir", "d/plain": "file", "d/a\nb": "file", "d/x\x01y": "file"} {
		if got[p] != typ {
			t.Errorf("ls --json: %q is %q, want %q (all: %v)", p, got[p], typ, got)
		}
	}
	code, stdout, _ = runCLIProc(t, "ls", "--json", img, "/nonexistent-dir-is-an-error")
	if code != 1 || stdout != "" {
		t.Errorf("ls --json of a missing path: exit %d, stdout %q", code, stdout)
	}
}

// superFields are the dump-super lines that show what mkfs's options
// meant.
var superFields = []string{"fsid", "label", "total_bytes", "sectorsize", "nodesize", "csum_type",
	"compat_ro_flags", "incompat_flags", "num_devices"}

// progsSuper runs btrfs-progs' dump-super on img and keeps superFields.
func progsSuper(t *testing.T, img string) map[string]string {
	t.Helper()
	out, err := exec.Command("btrfs", "inspect-internal", "dump-super", img).Output()
	if err != nil {
		t.Fatalf("btrfs inspect-internal dump-super %s: %v", img, err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(l, "\t")
		for _, f := range superFields {
			if ok && k == f {
				m[k] = strings.TrimSpace(v)
			}
		}
	}
	return m
}

// TestCLIMkfsLikeProgs: the same mkfs command line given to mkfs.btrfs
// and to gobtrfs mkfs means the same: the same exit status, the same
// warnings, and superblocks that agree on size, sector size, node size,
// label, UUID, checksum and features (btrfs-progs' dump-super reads both).
func TestCLIMkfsLikeProgs(t *testing.T) {
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil || !testutil.HaveProgs() {
		t.Skip("btrfs-progs (mkfs.btrfs, btrfs) not installed")
	}
	const uuid = "01234567-89ab-cdef-0123-456789abcdef"
	cases := []struct {
		args []string
		code int
		warn string // in both stderrs
	}{
		{args: []string{"-f", "-q", "-b", "300M", "-L", "lbl", "-U", uuid, "-n", "32k"}},
		{args: []string{"-fq", "-b", "256M", "-s", "4k", "--csum", "xxhash", "-m", "single"}},
		{args: []string{"-fq", "--byte-count=280M", "-O", "^no-holes", "-R", "^free-space-tree", "-Lx"}},
		{args: []string{"-fq", "-b", "300M", "-s", "8k", "-n", "16k"}, warn: "may not be mountable, sectorsize 8192 doesn't match page size"},
		{args: []string{"-f", "-b", "100M"}, code: 1, warn: "too small"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		theirs, ours := filepath.Join(dir, "progs.img"), filepath.Join(dir, "ours.img")
		for _, p := range []string{theirs, ours} {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Truncate(1 << 30)
			f.Close()
		}
		pcmd := exec.Command("mkfs.btrfs", append(c.args, theirs)...)
		var perr bytes.Buffer
		pcmd.Stderr = &perr
		pcode := 0
		if err := pcmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			pcode = ee.ExitCode()
		}
		code, _, stderr := runCLIProc(t, append([]string{"mkfs"}, append(c.args, ours)...)...)
		line := strings.Join(c.args, " ")
		if pcode != c.code || code != c.code {
			t.Errorf("mkfs %s: mkfs.btrfs exit %d, gobtrfs exit %d, want %d\nprogs: %s\nours: %s", line, pcode, code, c.code, &perr, stderr)
			continue
		}
		if c.warn != "" && (!strings.Contains(perr.String(), c.warn) || !strings.Contains(stderr, c.warn)) {
			t.Errorf("mkfs %s: want %q from both\nprogs: %s\nours: %s", line, c.warn, &perr, stderr)
		}
		if c.code != 0 {
			continue
		}
		p, o := progsSuper(t, theirs), progsSuper(t, ours)
		if len(p) != len(superFields) {
			t.Fatalf("dump-super of mkfs.btrfs's image: got only %v of %v", p, superFields)
		}
		for _, f := range superFields {
			if f == "fsid" && !strings.Contains(line, uuid) {
				continue
			}
			if p[f] != o[f] {
				t.Errorf("mkfs %s: %s is %q from mkfs.btrfs, %q from gobtrfs", line, f, p[f], o[f])
			}
		}
	}
}

// TestCLIInspectLikeProgs: btrfs-progs' abbreviations and grouped flags
// give the same output from both: `insp dump-s -fa`, `inspect-internal
// dump-tree -t chunk` (past the banner line).
func TestCLIInspectLikeProgs(t *testing.T) {
	if !testutil.HaveProgs() {
		t.Skip("btrfs-progs not installed")
	}
	img, _ := cliFixture(t)
	for _, args := range [][]string{
		{"insp", "dump-s", "-fa", img},
		{"inspect-internal", "dump-tree", "-t", "chunk", img},
		{"insp", "dump-t", "-t", "fs", "--hide-names", img},
	} {
		want, err := exec.Command("btrfs", args...).Output()
		if err != nil {
			t.Fatalf("btrfs %q: %v", args, err)
		}
		code, got, stderr := runCLIProc(t, args...)
		if code != 0 {
			t.Fatalf("gobtrfs %q: exit %d: %s", args, code, stderr)
		}
		w, g := string(want), got
		if args[1] != "dump-s" {
			_, w, _ = strings.Cut(w, "\n")
			_, g, _ = strings.Cut(g, "\n")
		}
		if w != g {
			t.Errorf("%q: output differs from btrfs-progs:\nprogs:\n%.1500s\nours:\n%.1500s", args, w, g)
		}
	}
}

// TestCLIMkfsRootdirSummary: after --rootdir the summary's Data line is
// the data chunks on the image (btrfs-progs' dump-tree -t chunk adds them
// up), not the 8 MiB of the empty filesystem's first chunk.
func TestCLIMkfsRootdirSummary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	data := make([]byte, 24<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>12) // not all zeros, so it takes space
	}
	if err := os.WriteFile(filepath.Join(src, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "r.img")
	out, err := mkfsCmd(t, "-b", "512M", "-r", src, img)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "Data:") {
			line = l
		}
	}
	chunks, err := imageChunks(img)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, c := range chunks {
		if c.Type&ondisk.BlockGroupData != 0 {
			total += c.Length
		}
	}
	if total < 24<<20 || !strings.HasSuffix(line, " "+humanSize(total)) {
		t.Fatalf("summary %q; data chunks on the image: %d bytes (%s)", line, total, humanSize(total))
	}
	if !testutil.HaveProgs() {
		return
	}
	dump, err := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "chunk", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	var progsTotal uint64
	for _, l := range strings.Split(string(dump), "\n") {
		var n, sl uint64
		var owner int
		var typ string
		if k, _ := fmt.Sscanf(strings.TrimSpace(l), "length %d owner %d stripe_len %d type %s", &n, &owner, &sl, &typ); k == 4 && strings.HasPrefix(typ, "DATA") {
			progsTotal += n
		}
	}
	if progsTotal != total {
		t.Errorf("btrfs-progs counts %d bytes of data chunks, the summary %d", progsTotal, total)
	}
}

// TestCLIManPages: gobtrfs man writes a page per command, with the
// options each really takes; groff (when installed) reads every page
// without a warning.
func TestCLIManPages(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"man", dir}, &out, &errb); code != 0 {
		t.Fatalf("gobtrfs man: exit %d: %s", code, &errb)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	want := 0
	var count func(c *cobra.Command)
	count = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		want++
		for _, s := range c.Commands() {
			count(s)
		}
	}
	root := newRootCmd(&out, &errb)
	root.InitDefaultCompletionCmd() // as Execute adds it
	count(root)
	if len(pages) != want || want < 20 {
		t.Fatalf("%d pages for %d commands", len(pages), want)
	}
	mkfsPage, err := os.ReadFile(filepath.Join(dir, "gobtrfs-mkfs.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{".SH OPTIONS", `\fB\-b\fR, \fB\-\-byte\-count\fR \fISIZE\fR`, `\fB\-s\fR, \fB\-\-sectorsize\fR`, ".SH EXIT STATUS"} {
		if !bytes.Contains(mkfsPage, []byte(w)) {
			t.Errorf("gobtrfs-mkfs.1 lacks %q", w)
		}
	}
	if _, err := exec.LookPath("groff"); err != nil {
		t.Log("groff not installed: pages not linted")
		return
	}
	// one groff for all pages: its warnings name the page's line
	if out, err := exec.Command("groff", append([]string{"-man", "-ww", "-z"}, pages...)...).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}
