package fusefs

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// A test must never touch its own mount through a memory mapping: a page
// fault blocks a thread the Go runtime thinks is running, the garbage
// collector's stop-the-world waits for it, and the FUSE server, stopped
// too, never answers the fault. mmap is done by this test binary re-run as
// a helper process (mmapHelper).
const helperEnv = "FUSEFS_TEST_MMAP"

func TestMain(m *testing.M) {
	if op := os.Getenv(helperEnv); op != "" {
		if err := mmapHelper(op, os.Args[len(os.Args)-3:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mmapHelper maps path (size bytes) shared and either prints the sha256 of
// its bytes (read) or writes stdin at off and msyncs (write).
func mmapHelper(op string, args []string) error {
	path := args[0]
	size, _ := strconv.Atoi(args[1])
	off, _ := strconv.Atoi(args[2])
	fd, err := unix.Open(path, unix.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	prot := unix.PROT_READ
	if op == "write" {
		prot |= unix.PROT_WRITE
	}
	m, err := unix.Mmap(fd, 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	defer unix.Munmap(m)
	if op == "read" {
		fmt.Printf("%x\n", sha256.Sum256(m))
		return nil
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	copy(m[off:], data)
	return unix.Msync(m, unix.MS_SYNC)
}

// mmapRun runs the helper.
func mmapRun(op, path string, size, off int, stdin []byte) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", path, strconv.Itoa(size), strconv.Itoa(off))
	cmd.Env = append(os.Environ(), helperEnv+"="+op)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mmap %s helper: %w: %s", op, err, out)
	}
	return string(bytes.TrimSpace(out)), nil
}
