package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/progress"
)

func init() { addCommand(newMkfsCmd) }

// defaultImageSize is the size of a new image file when -b is not given.
const defaultImageSize = 1 << 30

// mkfsArgs is the parsed command line.
type mkfsArgs struct {
	cfg      mkfs.Config
	image    string
	size     uint64
	force    bool
	quiet    bool
	listAll  bool
	mixed    bool // -M: mixed block groups (the mixed-bg feature)
	features []string
	// the string options, turned into cfg by apply
	sizeArg, nodesize, sectorsize, csumName, uuid string
	// warn gets the warnings (stderr)
	warn io.Writer
}

func newMkfsCmd() *cobra.Command {
	a := &mkfsArgs{}
	c := &cobra.Command{
		Use:   "mkfs [options] IMAGE",
		Short: "make a new btrfs filesystem image (like mkfs.btrfs)",
		Long: `Make a btrfs filesystem in IMAGE (a file, created sparse if missing, or a
block device), laid out as mkfs.btrfs 6.2 lays it out. The options are
mkfs.btrfs's, with the same letters.`,
		Example: `  gobtrfs mkfs -b 1G disk.img
  gobtrfs mkfs -f -L data -r ./tree --compress zstd disk.img
  gobtrfs mkfs -O list-all`,
		Args: operands(0, 1, "need exactly one IMAGE"),
		RunE: func(c *cobra.Command, args []string) error {
			a.warn = c.ErrOrStderr()
			if err := a.apply(); err != nil {
				return err
			}
			if a.listAll {
				fmt.Fprint(c.OutOrStdout(), mkfs.FeatureList())
				return nil
			}
			if len(args) != 1 {
				return usageErrorf("need exactly one IMAGE")
			}
			if ss := a.cfg.SectorSize; ss != 0 && ss != 4096 && ss != uint32(os.Getpagesize()) {
				// as mkfs.btrfs; Linux mounts sector size 4K (subpage) or the page size
				fmt.Fprintf(c.ErrOrStderr(), "WARNING: the filesystem may not be mountable, sectorsize %d doesn't match page size %d\n",
					ss, os.Getpagesize())
			}
			a.image = args[0]
			return a.run(c.OutOrStdout())
		},
	}
	fl := c.Flags()
	fl.SortFlags = false
	fl.StringVarP(&a.sizeArg, "byte-count", "b", "", "filesystem `SIZE` (K/M/G/T suffixes); default: the whole file, or 1G for a new file")
	fl.StringVar(&a.sizeArg, "size", "", "same as --byte-count")
	fl.Lookup("size").Hidden = true
	fl.StringVar(&a.csumName, "csum", "", "checksum `TYPE`: crc32c (default), xxhash, sha256 or blake2")
	fl.StringVar(&a.csumName, "checksum", "", "same as --csum")
	fl.Lookup("checksum").Hidden = true
	fl.StringVarP(&a.nodesize, "nodesize", "n", "", "tree block `SIZE`: power of two, sectorsize..64K (default 16K)")
	fl.StringVarP(&a.sectorsize, "sectorsize", "s", "", "sector `SIZE` (default 4K; Linux mounts only 4K or the page size); 1M or more is read as -b, its old meaning here, with a warning")
	fl.StringVarP(&a.cfg.MetadataProfile, "metadata", "m", "", "metadata `PROFILE`: dup (default) or single")
	fl.StringVarP(&a.cfg.DataProfile, "data", "d", "", "data `PROFILE`: single (dup with --mixed)")
	fl.BoolVarP(&a.mixed, "mixed", "M", false, "mixed block groups: data and metadata share the chunks (nodesize = sectorsize, one profile for both)")
	addFeature := func(v string) error { a.features = append(a.features, v); return nil }
	fl.FuncP("features", "O", "comma `LIST` of features, ^name disables; list-all lists them", addFeature)
	fl.FuncP("runtime-features", "R", "comma `LIST` of runtime features (free-space-tree, quota), as -O", addFeature)
	fl.StringVar(&a.cfg.Compress, "compress", "", "`ALG[:LEVEL]`: zlib, lzo or zstd for the files of --rootdir")
	fl.StringVarP(&a.cfg.Rootdir, "rootdir", "r", "", "copy `DIR` into the new filesystem")
	fl.StringVarP(&a.cfg.Label, "label", "L", "", "filesystem `LABEL`")
	fl.StringVarP(&a.uuid, "uuid", "U", "", "filesystem `UUID` (default: random)")
	fl.BoolVarP(&a.force, "force", "f", false, "overwrite an existing filesystem")
	fl.BoolVarP(&a.quiet, "quiet", "q", false, "print nothing on success but errors and warnings")
	fl.BoolP("nodiscard", "K", false, "accepted for mkfs.btrfs compatibility (nothing is ever discarded)")
	fixed := func(vals ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return vals, cobra.ShellCompDirectiveNoFileComp
		}
	}
	c.RegisterFlagCompletionFunc("csum", fixed("crc32c", "xxhash", "sha256", "blake2"))
	c.RegisterFlagCompletionFunc("metadata", fixed("dup", "single"))
	c.RegisterFlagCompletionFunc("data", fixed("single"))
	c.RegisterFlagCompletionFunc("features", fixed(append(mkfs.FeatureNames(), "list-all")...))
	c.RegisterFlagCompletionFunc("runtime-features", fixed("free-space-tree", "quota"))
	c.RegisterFlagCompletionFunc("compress", fixed("zlib", "lzo", "zstd"))
	c.RegisterFlagCompletionFunc("rootdir", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	return c
}

// runMkfs runs mkfs with command-line args; the summary goes to out.
func runMkfs(args []string, out io.Writer) error {
	return runCommand(newMkfsCmd(), args, out, os.Stderr)
}

// sizeErr says a too small size as the user gave it (-b 100M).
func (a *mkfsArgs) sizeErr(err error) error {
	var se *mkfs.SizeError
	if a.sizeArg == "" || !errors.As(err, &se) || se.Size != a.size {
		return err
	}
	return fmt.Errorf("-b %s is too small: the minimum for metadata profile %s is %s (%d bytes)",
		a.sizeArg, se.Profile, humanSize(se.Min), se.Min)
}

// run makes the filesystem.
func (a *mkfsArgs) run(out io.Writer) error {
	if a.cfg.FSID.IsZero() {
		a.cfg.FSID = mkfs.RandomUUID()
	}
	dev, created, err := openImage(a)
	if err != nil {
		return a.sizeErr(err)
	}
	var bar *progress.Bar
	if a.cfg.Rootdir != "" {
		bar = copyProgress("mkfs --rootdir", a.quiet, a.warn, a.cfg.Rootdir)
		a.cfg.RootdirProgress = bar
	}
	err = mkfs.Make(dev, a.cfg)
	if bar != nil {
		bar.Stop()
	}
	if cerr := dev.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", a.image, cerr)
	}
	if err != nil {
		if created {
			os.Remove(a.image)
		}
		// The command name already prefixes what main prints.
		return errors.New(strings.TrimPrefix(err.Error(), "mkfs: "))
	}
	if !a.quiet {
		return printSummary(out, a, uint64(dev.Size()))
	}
	return nil
}

// apply turns the string options into the Config.
func (a *mkfsArgs) apply() error {
	var err error
	if a.sectorsize != "" {
		n, err := parseSize(a.sectorsize)
		if err == nil && n >= 1<<20 && a.sizeArg == "" {
			// -s SIZE was the filesystem size before -s meant the sector size
			fmt.Fprintf(a.warn, "WARNING: -s %s is read as -b %s (filesystem size); -s is the sector size, as in mkfs.btrfs\n",
				a.sectorsize, a.sectorsize)
			a.sizeArg, a.sectorsize = a.sectorsize, ""
		} else if err != nil || n > 1<<31 {
			return usageErrorf("-s/--sectorsize: invalid sector size %q", a.sectorsize)
		} else {
			a.cfg.SectorSize = uint32(n)
		}
	}
	if a.sizeArg != "" {
		if a.size, err = parseSize(a.sizeArg); err != nil {
			return usageErrorf("-b/--byte-count: %w", err)
		}
		if a.size == 0 {
			return usageErrorf("-b/--byte-count: size must be positive")
		}
	}
	if a.nodesize != "" {
		n, err := parseSize(a.nodesize)
		if err != nil || n > 1<<31 {
			return usageErrorf("-n/--nodesize: invalid nodesize %q", a.nodesize)
		}
		a.cfg.NodeSize = uint32(n)
	}
	if a.csumName != "" {
		if a.cfg.Csum, err = csum.Parse(strings.ToLower(a.csumName)); err != nil {
			return usageError{err}
		}
	}
	if a.uuid != "" {
		if a.cfg.FSID, err = parseUUID(a.uuid); err != nil {
			return usageError{err}
		}
	}
	for _, list := range a.features {
		if list == "list-all" {
			a.listAll = true
			continue
		}
		if a.cfg.Features, err = mkfs.ParseFeatures(list, a.cfg.Features); err != nil {
			return usageError{err}
		}
	}
	if a.mixed {
		if a.cfg.Features, err = mkfs.ParseFeatures("mixed-bg", a.cfg.Features); err != nil {
			return usageError{err}
		}
	}
	if err := checkCompress(a.cfg.Compress); err != nil {
		return usageError{err}
	}
	return nil
}

func checkCompress(s string) error {
	if s == "" {
		return nil
	}
	alg, level, hasLevel := strings.Cut(s, ":")
	switch strings.ToLower(alg) {
	case "zlib", "lzo", "zstd", "no", "none":
	default:
		return fmt.Errorf("--compress: unknown algorithm %q (want zlib, lzo or zstd)", alg)
	}
	if hasLevel {
		if _, err := strconv.Atoi(level); err != nil {
			return fmt.Errorf("--compress: invalid level %q", level)
		}
	}
	return nil
}

// parseSize accepts a byte count with an optional binary suffix: 512M, 1G, 1GiB, 4k.
// mirrors parse_size_from_string
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	shift := 0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		case 't', 'T':
			shift = 40
		case 'p', 'P':
			shift = 50
		case 'e', 'E':
			shift = 60
		}
		if shift > 0 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || (shift > 0 && v > ^uint64(0)>>shift) {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return v << shift, nil
}

func parseUUID(s string) (ondisk.UUID, error) {
	var u ondisk.UUID
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return u, fmt.Errorf("invalid UUID %q", s)
	}
	for i := range u {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return u, fmt.Errorf("invalid UUID %q", s)
		}
		u[i] = byte(v)
	}
	return u, nil
}

// openImage opens (or creates, sparse) the image and checks that mkfs may
// write it: size, and no existing filesystem unless -f. created reports a
// new file, removed again if mkfs fails.
func openImage(a *mkfsArgs) (dev *blockdev.File, created bool, err error) {
	if st, err := os.Stat(a.image); err == nil && st.IsDir() {
		return nil, false, fmt.Errorf("%s is a directory; mkfs needs an image file (made if missing) or a block device", a.image)
	}
	st, err := os.Stat(a.image)
	isNew := errors.Is(err, os.ErrNotExist)
	if err != nil && !isNew {
		return nil, false, err
	}
	isFile := isNew || st.Mode().IsRegular()
	want := a.size
	if want == 0 && (isNew || isFile && st.Size() == 0) {
		want = defaultImageSize
	}
	if isFile {
		// Check the options before creating or growing the file.
		size := want
		if size == 0 {
			size = uint64(st.Size())
		}
		if err := checkConfig(a.cfg, size); err != nil {
			return nil, false, err
		}
	}
	if isNew {
		f, err := os.OpenFile(a.image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, false, err
		}
		f.Close()
		created = true
	}
	dev, err = blockdev.OpenFile(a.image, false)
	if err != nil {
		return nil, created, err
	}
	fail := func(err error) (*blockdev.File, bool, error) {
		dev.Close()
		if created {
			os.Remove(a.image)
		}
		return nil, false, err
	}
	if !created && !a.force {
		if fsType := mkfs.ExistingFilesystem(dev, dev.Size()); fsType != "" {
			return fail(fmt.Errorf("%s appears to contain an existing filesystem (%s); use -f to overwrite it",
				a.image, fsType))
		}
	}
	if isFile && want > uint64(dev.Size()) {
		if err := os.Truncate(a.image, int64(want)); err != nil {
			return fail(err)
		}
		dev.Close()
		if dev, err = blockdev.OpenFile(a.image, false); err != nil {
			return fail(err)
		}
	}
	if want > uint64(dev.Size()) {
		return fail(fmt.Errorf("%s is %d bytes (%s), smaller than the requested size %s", a.image, dev.Size(),
			humanSize(uint64(dev.Size())), a.sizeArg))
	}
	if !isFile {
		if err := checkConfig(a.cfg, max(want, uint64(dev.Size()))); err != nil {
			return fail(err)
		}
	}
	a.cfg.Size = want
	return dev, created, nil
}

// checkConfig validates the options for a filesystem of size bytes.
func checkConfig(cfg mkfs.Config, size uint64) error {
	cfg.Size = size
	_, err := mkfs.Resolve(cfg, size)
	return err
}

func printSummary(out io.Writer, a *mkfsArgs, devSize uint64) error {
	r, err := mkfs.Resolve(a.cfg, devSize)
	if err != nil {
		return err
	}
	label := r.Label
	if label == "" {
		label = "(null)"
	}
	fmt.Fprintf(out, "Label:              %s\n", label)
	fmt.Fprintf(out, "UUID:               %s\n", a.cfg.FSID)
	fmt.Fprintf(out, "Node size:          %d\n", r.NodeSize)
	fmt.Fprintf(out, "Sector size:        %d\n", r.SectorSize)
	fmt.Fprintf(out, "Filesystem size:    %s\n", humanSize(r.TotalBytes))
	fmt.Fprintf(out, "Block group profiles:\n")
	// the chunks on the image as made (--rootdir adds data chunks), else
	// the plan's
	chunks, err := imageChunks(a.image)
	if err != nil {
		chunks = chunks[:0]
		for _, c := range r.Chunks {
			chunks = append(chunks, mkfs.ChunkInfo{Type: c.Type, Length: c.Length})
		}
	}
	for _, kind := range []struct {
		name string
		typ  uint64
	}{{"Data", ondisk.BlockGroupData}, {"Metadata", ondisk.BlockGroupMetadata},
		{"Data+Metadata", ondisk.BlockGroupData | ondisk.BlockGroupMetadata}, {"System", ondisk.BlockGroupSystem}} {
		var total uint64
		prof := ""
		for _, c := range chunks {
			if c.Type&ondisk.BlockGroupTypeMask == kind.typ {
				total += c.Length
				_, prof, _ = strings.Cut(c.TypeString(), "|")
			}
		}
		if prof != "" {
			fmt.Fprintf(out, "  %-18s%-8s %16s\n", kind.name+":", prof, humanSize(total))
		}
	}
	fmt.Fprintf(out, "Features:           %s\n", strings.ReplaceAll(r.Features.String(), ",", ", "))
	fmt.Fprintf(out, "Checksum:           %s\n", r.Csum)
	return nil
}

// imageChunks reads the chunk tree of the image just made.
func imageChunks(path string) ([]mkfs.ChunkInfo, error) {
	dev, err := blockdev.OpenFile(path, true)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	f, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true, Warn: func(string) {}})
	if err != nil {
		return nil, err
	}
	var out []mkfs.ChunkInfo
	for _, m := range f.Chunks.All() {
		out = append(out, mkfs.ChunkInfo{Logical: m.Logical, Type: m.Chunk.Type, Length: m.Chunk.Length})
	}
	return out, nil
}

func humanSize(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.2f%s", v, units[i])
}
