package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func checkCmd(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := checkMain(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestCheckCommand checks a fresh image (clean, exit status 0) and one
// with a wrong bytes_used in the superblock (an ERROR line, non-zero exit).
func TestCheckCommand(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if _, err := mkfsCmd(t, "-q", "-b", "256M", img); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := checkCmd(img)
	if err != nil || !strings.Contains(out, "no error found") {
		t.Fatalf("clean image: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	for _, want := range []string{"total tree bytes:", "file data blocks allocated:"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if out, _, err := checkCmd("--check-data-csum", "-q", img); err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("-q: %v\n%s", err, out)
	}

	// bytes_used off by one sector, checksum fixed, in every copy
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range ondisk.SuperMirrorOffsets[:2] {
		b := make([]byte, ondisk.SuperInfoSize)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			t.Fatal(err)
		}
		sb, err := ondisk.DecodeSuperblock(b)
		if err != nil {
			t.Fatal(err)
		}
		sb.BytesUsed += 4096
		nb := sb.Encode()
		csum.Type(sb.CsumType).SetBlock(nb)
		if _, err := f.WriteAt(nb, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	out, errOut, err = checkCmd(img)
	if err == nil || !strings.Contains(out, "error(s) found") || !strings.Contains(errOut, "ERROR: [super]") {
		t.Fatalf("damaged image: err %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}

	if _, _, err := checkCmd(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("missing image: no error")
	}
	if _, _, err := checkCmd(); err == nil {
		t.Errorf("no arguments: no error")
	}
}
