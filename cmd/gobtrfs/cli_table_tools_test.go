package main

import (
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// toolCase is a row of the table of restore, subvolume, filesystem and
// scrub: a cliCase, and the btrfs-progs command line of the same meaning
// (progs, {mnt}-free) whose exit status and, with sameOut, stdout must be
// the same.
type toolCase struct {
	cliCase
	progs   []string
	sameOut bool
}

// TestCLITableTools: restore, subvolume, filesystem and scrub command
// lines, next to btrfs-progs' where it takes the same on an image.
func TestCLITableTools(t *testing.T) {
	img, junk := cliFixture(t)
	for _, a := range [][]string{{"create", img, "/sv"}, {"snapshot", "-r", img, "/sv", "/sv-ro"}} {
		if err := subvolumeMain(a, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	dest := filepath.Join(dir, "out")
	row := func(code int, args []string, stdout, stderr []string) toolCase {
		return toolCase{cliCase: cliCase{args: args, code: code, stdout: stdout, stderr: stderr}}
	}
	like := func(c toolCase, progs []string, sameOut bool) toolCase {
		c.progs, c.sameOut = progs, sameOut
		return c
	}
	cases := []toolCase{
		// subvolume: the path is the last field, no "(readonly)"
		row(0, []string{"subvolume", "list", "{img}"}, []string{"ID 256 gen ", " top level 5 path sv\n", "path sv-ro\n"}, nil),
		row(0, []string{"sub", "li", "-r", "{img}"}, []string{"path sv-ro\n"}, nil),
		row(0, []string{"sub", "list", "-s", "{img}"}, []string{" cgen ", " otime ", "path sv-ro\n"}, nil),
		row(0, []string{"sub", "list", "-apu", "{img}"}, []string{" parent 5 top level 5 uuid "}, nil),
		row(0, []string{"subvolume", "show", "{img}", "/sv-ro"}, []string{"\tName: \t\t\tsv-ro\n", "\tFlags: \t\t\treadonly\n"}, nil),
		row(0, []string{"subvolume", "get-default", "{img}"}, []string{"ID 5 (FS_TREE)\n"}, nil),
		row(1, []string{"subvolume", "set-default", "{img}", "999"}, nil, []string{"subvolume 999: no such file or directory"}),
		row(1, []string{"subvolume", "set-default", "{img}", "/d"}, nil, []string{"/d: not a subvolume"}),
		row(2, []string{"subvolume", "frobnicate", "{img}"}, nil, []string{`unknown command "frobnicate"`}),
		row(2, []string{"subvolume", "show"}, nil, []string{"need IMAGE"}),
		// filesystem: btrfs-progs' layouts; show and label read an unmounted image as btrfs-progs does
		row(0, []string{"filesystem", "df", "{img}"}, []string{"Data, single: total=", "GlobalReserve, single: total="}, nil),
		row(0, []string{"fi", "us", "-b", "{img}"}, []string{"    Device size:\t\t", "Free (statfs, df):", "Unallocated:\n"}, nil),
		like(row(0, []string{"filesystem", "show", "--raw", "{img}"}, []string{"Total devices 1 FS bytes used "}, nil),
			[]string{"filesystem", "show", "--raw", "{img}"}, true),
		like(row(0, []string{"filesystem", "label", "{img}"}, []string{"\n"}, nil), []string{"filesystem", "label", "{img}"}, true),
		row(2, []string{"filesystem", "label", "{img}", strings.Repeat("L", 300)}, nil, []string{"too long"}),
		row(2, []string{"filesystem", "df"}, nil, []string{"need IMAGE"}),
		row(1, []string{"filesystem", "df", "{junk}"}, nil, []string{"not a btrfs filesystem (no valid superblock"}),
		// scrub
		row(0, []string{"scrub", "{img}"}, []string{"Error summary:    no errors found\n", "Total to scrub:"}, nil),
		row(0, []string{"scrub", "start", "-R", "{img}"}, []string{"\tcsum_errors: 0\n", "\ttree_bytes_scrubbed: "}, nil),
		row(2, []string{"scrub", "--repair", "-r", "{img}"}, nil, []string{"contradict"}),
		row(1, []string{"scrub", "{junk}"}, nil, []string{"not a btrfs filesystem (no valid superblock"}),
		// restore: btrfs restore's letters
		like(row(0, []string{"restore", "-l", "{img}"}, []string{" tree key (FS_TREE ROOT_ITEM 0) "}, nil), []string{"restore", "-l", "{img}"}, true),
		row(0, []string{"restore", "-D", "{img}", "{dest}"}, []string{"{dest}/d/plain\n"}, []string{"dry run", "would restore"}),
		row(0, []string{"restore", "-v", "-x", "-m", "-S", "-s", "{img}", "{dest}"}, []string{"Restoring {dest}/d/plain\n"}, []string{"gobtrfs restore: restored ", "; 0 errors"}),
		row(0, []string{"restore", "{img}", "{dest}"}, nil, []string{"existing entries kept (-o overwrites)"}),
		row(0, []string{"restore", "-o", "-i", "{img}", "{dest}"}, nil, []string{"; 0 errors"}),
		row(0, []string{"restore", "-r", "256", "{img}", filepath.Join(dir, "r256")}, nil, []string{"restored "}),
		row(0, []string{"restore", "--help"}, []string{"-l, --list-roots", "-u, --super N", "-s, --snapshots"}, nil),
		row(2, []string{"restore", "{img}"}, nil, []string{"need IMAGE and DESTDIR"}),
		row(2, []string{"restore", "-r", "abc", "{img}", "{dest}"}, nil, []string{"tree root ID is a number"}),
		row(0, []string{"help", "scrub"}, []string{"--repair"}, nil),
	}
	subst := func(a string) string {
		a = strings.ReplaceAll(a, "{img}", img)
		a = strings.ReplaceAll(a, "{junk}", junk)
		return strings.ReplaceAll(a, "{dest}", dest)
	}
	for _, c := range cases {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = subst(a)
		}
		line := "gobtrfs " + strings.Join(c.args, " ")
		code, stdout, stderr := runCLIProc(t, args...)
		if code != c.code {
			t.Errorf("%s: exit status %d, want %d\nstdout: %.500s\nstderr: %.500s", line, code, c.code, stdout, stderr)
			continue
		}
		for _, w := range c.stdout {
			if !strings.Contains(stdout, subst(w)) {
				t.Errorf("%s: stdout lacks %q:\n%.1000s", line, w, stdout)
			}
		}
		for _, w := range c.stderr {
			if !strings.Contains(stderr, subst(w)) {
				t.Errorf("%s: stderr lacks %q:\n%.1000s", line, w, stderr)
			}
		}
		if c.progs == nil {
			continue
		}
		if _, err := exec.LookPath("btrfs"); err != nil {
			t.Logf("%s: btrfs-progs not installed, not compared", line)
			continue
		}
		pargs := make([]string, len(c.progs))
		for i, a := range c.progs {
			pargs[i] = subst(a)
		}
		pout, err := exec.Command("btrfs", pargs...).Output()
		pcode := 0
		if ee, ok := err.(*exec.ExitError); ok {
			pcode = ee.ExitCode()
		}
		if pcode != code || (c.sameOut && string(pout) != stdout) {
			t.Errorf("%s: exit %d, stdout:\n%s\nbtrfs %s: exit %d, stdout:\n%s", line, code, stdout, strings.Join(c.progs, " "), pcode, pout)
		}
	}
}
