package main

import (
	"os"
	"testing"
)

// runMainEnv makes the test binary act as the gobtrfs command (tests that
// need separate processes re-run it with this set; see gobtrfsCmd).
const runMainEnv = "GOBTRFS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		os.Args = append([]string{"gobtrfs"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
