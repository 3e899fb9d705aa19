package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
)

// TestRestoreQuotesNames: names from the image reach the user's terminal
// in restore's listings (-v, -D) and messages; a name holding escape
// sequences or a newline (legal in btrfs) must not reach it raw, as in
// ls: it is quoted $'...' (the file itself keeps its name).
func TestRestoreQuotesNames(t *testing.T) {
	const evil = "evil\x1b]0;owned\x07\nfake line"
	img := rdCraft(t, func(w *gobtrfs.RW) {
		rdMust(t, w.Mkdir(evil, 0o755))
		rdMust(t, w.WriteFile(evil+"/f", []byte("x"), 0o644))
	})
	dest := filepath.Join(t.TempDir(), "out")
	for _, flag := range []string{"-D", "-v"} {
		var out, errb strings.Builder
		if err := restoreMainIO([]string{"-q", flag, img, dest}, &out, &errb); err != nil {
			t.Fatalf("restore %s: %v\n%s", flag, err, errb.String())
		}
		stdout := out.String()
		all := stdout + errb.String()
		if strings.ContainsAny(all, "\x1b\x07") || strings.Contains(all, "\nfake line") {
			t.Errorf("restore %s printed a raw name from the image:\n%q", flag, all)
		}
		if !strings.Contains(stdout, `$'evil\x1b]0;owned\x07\nfake line'`) {
			t.Errorf("restore %s does not list the name quoted:\n%q", flag, stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dest, evil, "f")); err != nil || string(b) != "x" {
		t.Errorf("restored file under the odd name: %q, %v", b, err)
	}
}

// TestReportsQuoteNames: subvolume list/show and filesystem label/show
// print names and the label from the image quoted when they hold control
// bytes.
func TestReportsQuoteNames(t *testing.T) {
	const evil = "sv\x1b[31mred\nfake"
	img := rdCraft(t, func(w *gobtrfs.RW) {})
	for _, a := range [][]string{
		{"subvolume", "create", img, "/" + evil},
		{"filesystem", "label", img, "lab\x1b[31mel"},
	} {
		if rc, _, errs := runCLIProc(t, a...); rc != 0 {
			t.Fatalf("%q: exit %d: %s", a, rc, errs)
		}
	}
	for _, a := range [][]string{
		{"subvolume", "list", img},
		{"subvolume", "show", img, "/" + evil},
		{"filesystem", "label", img},
		{"filesystem", "show", img},
	} {
		rc, out, errs := runCLIProc(t, a...)
		if rc != 0 || strings.ContainsAny(out, "\x1b") || strings.Contains(out, "\nfake") || !strings.Contains(out, `\x1b[31m`) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", a[:2], rc, out, errs)
		}
	}
}
