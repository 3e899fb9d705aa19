package txn_test

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// mkfsVariants are the image layouts every workload runs on.
var mkfsVariants = [][]string{
	{},
	{"-n", "4096"},
	{"-n", "65536", "--csum", "xxhash"},
	{"-m", "single", "--csum", "sha256"},
	{"-O", "^skinny-metadata", "--csum", "blake2"},
	{"-R", "^free-space-tree"},
	{"-O", "block-group-tree"},
}

// TestRandomWorkload runs random file, reflink, snapshot and delete
// operations on images of every variant, committing at random points,
// closing and checking with btrfs check between rounds and comparing every
// file's extents and data with a model.
func TestRandomWorkload(t *testing.T) {
	seed := testSeed(t)
	for _, args := range mkfsVariants {
		t.Run(strings.Join(append([]string{"mkfs"}, args...), " "), func(t *testing.T) {
			img := mkfs(t, 512<<20, args...)
			r := rand.New(rand.NewSource(seed))
			m := newModel()
			rounds, ops := 4, 150
			if testing.Short() {
				rounds, ops = 2, 60
			}
			for round := 0; round < rounds; round++ {
				im := openImage(t, img)
				m.randomOps(t, im, r, ops, true)
				im.close(t)
				checktest.Image(t, img)
				im = openImage(t, img)
				m.verify(t, im)
				im.close(t)
			}
		})
	}
}

// TestQuotaEnabled writes to an image with quotas on: the quota groups are
// marked inconsistent (the writer does not account them), which btrfs check
// and Linux accept.
func TestQuotaEnabled(t *testing.T) {
	img := mkfs(t, 256<<20, "-R", "quota")
	r := rand.New(rand.NewSource(testSeed(t)))
	m := newModel()
	for round := 0; round < 2; round++ {
		im := openImage(t, img)
		m.randomOps(t, im, r, 100, true)
		im.close(t)
		checktest.Image(t, img)
	}
}
