package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func init() {
	commands["mkfs"] = func(args []string) error { return runMkfs(args, os.Stdout) }
	usageText["mkfs"] = "make a new, empty btrfs filesystem image (like mkfs.btrfs)"
}

// defaultImageSize is the size of a new image file when -s is not given.
const defaultImageSize = 1 << 30

const mkfsUsage = `usage: gobtrfs mkfs [options] IMAGE

Make a btrfs filesystem in IMAGE (a file, created sparse if missing, or a
block device), laid out as mkfs.btrfs 6.2 lays it out.

  -s, -b, --size SIZE      filesystem size (K/M/G/T suffixes); default: the whole
                           file, or 1G for a new file
  --csum TYPE              crc32c (default), xxhash, sha256 or blake2
  -n, --nodesize SIZE      tree block size: power of two, sectorsize..64K (default 16K)
  --sectorsize SIZE        sector size (default 4K)
  -m, --metadata PROFILE   dup (default) or single
  -d, --data PROFILE       single
  -O, --features LIST      comma list of features, ^name disables; list-all lists them
  --compress ALG[:LEVEL]   zlib, lzo or zstd for the files of --rootdir
  -r, --rootdir DIR        copy DIR into the new filesystem
  -L, --label LABEL        filesystem label
  -U, --uuid UUID          filesystem UUID (default: random)
  -f, --force              overwrite an existing filesystem
  -q, --quiet              print nothing on success
`

// mkfsArgs is the parsed command line.
type mkfsArgs struct {
	cfg      mkfs.Config
	image    string
	size     uint64
	force    bool
	quiet    bool
	listAll  bool
	features []string
}

// errHelp asks for the usage text.
var errHelp = errors.New("help requested")

func runMkfs(args []string, out io.Writer) error {
	a, err := parseMkfsArgs(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(out, mkfsUsage)
		return nil
	}
	if err != nil {
		return err
	}
	if a.listAll {
		fmt.Fprint(out, mkfs.FeatureList())
		return nil
	}
	if a.cfg.FSID.IsZero() {
		a.cfg.FSID = mkfs.RandomUUID()
	}
	dev, created, err := openImage(a)
	if err != nil {
		return err
	}
	err = mkfs.Make(dev, a.cfg)
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

// parseMkfsArgs parses options and the image name, in any order.
func parseMkfsArgs(args []string) (*mkfsArgs, error) {
	a := &mkfsArgs{}
	fs := flag.NewFlagSet("mkfs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var size, nodesize, sectorsize, csumName, uuid string
	for _, n := range []string{"s", "b", "size", "byte-count"} {
		fs.StringVar(&size, n, "", "")
	}
	for _, n := range []string{"csum", "checksum"} {
		fs.StringVar(&csumName, n, "", "")
	}
	for _, n := range []string{"n", "nodesize"} {
		fs.StringVar(&nodesize, n, "", "")
	}
	fs.StringVar(&sectorsize, "sectorsize", "", "")
	for _, n := range []string{"m", "metadata"} {
		fs.StringVar(&a.cfg.MetadataProfile, n, "", "")
	}
	for _, n := range []string{"d", "data"} {
		fs.StringVar(&a.cfg.DataProfile, n, "", "")
	}
	for _, n := range []string{"O", "features", "R", "runtime-features"} {
		fs.Func(n, "", func(v string) error { a.features = append(a.features, v); return nil })
	}
	fs.StringVar(&a.cfg.Compress, "compress", "", "")
	for _, n := range []string{"r", "rootdir"} {
		fs.StringVar(&a.cfg.Rootdir, n, "", "")
	}
	for _, n := range []string{"L", "label"} {
		fs.StringVar(&a.cfg.Label, n, "", "")
	}
	for _, n := range []string{"U", "uuid"} {
		fs.StringVar(&uuid, n, "", "")
	}
	for _, n := range []string{"f", "force"} {
		fs.BoolVar(&a.force, n, false, "")
	}
	for _, n := range []string{"q", "quiet"} {
		fs.BoolVar(&a.quiet, n, false, "")
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, fmt.Errorf("%w\n%s", err, mkfsUsage)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if err := a.apply(size, nodesize, sectorsize, csumName, uuid); err != nil {
		return nil, err
	}
	if a.listAll {
		return a, nil
	}
	if len(pos) != 1 {
		return nil, fmt.Errorf("need exactly one IMAGE, got %d\n%s", len(pos), mkfsUsage)
	}
	a.image = pos[0]
	return a, nil
}

// apply turns the string options into the Config.
func (a *mkfsArgs) apply(size, nodesize, sectorsize, csumName, uuid string) error {
	var err error
	if size != "" {
		if a.size, err = parseSize(size); err != nil {
			return fmt.Errorf("-s: %w", err)
		}
		if a.size == 0 {
			return fmt.Errorf("-s: size must be positive")
		}
	}
	if nodesize != "" {
		n, err := parseSize(nodesize)
		if err != nil || n > 1<<31 {
			return fmt.Errorf("-n: invalid nodesize %q", nodesize)
		}
		a.cfg.NodeSize = uint32(n)
	}
	if sectorsize != "" {
		n, err := parseSize(sectorsize)
		if err != nil || n > 1<<31 {
			return fmt.Errorf("--sectorsize: invalid size %q", sectorsize)
		}
		a.cfg.SectorSize = uint32(n)
	}
	if csumName != "" {
		if a.cfg.Csum, err = csum.Parse(strings.ToLower(csumName)); err != nil {
			return err
		}
	}
	if uuid != "" {
		if a.cfg.FSID, err = parseUUID(uuid); err != nil {
			return err
		}
	}
	for _, list := range a.features {
		if list == "list-all" {
			a.listAll = true
			continue
		}
		if a.cfg.Features, err = mkfs.ParseFeatures(list, a.cfg.Features); err != nil {
			return err
		}
	}
	return checkCompress(a.cfg.Compress)
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
		return fail(fmt.Errorf("%s is %d bytes, smaller than the requested size %d", a.image, dev.Size(), want))
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
	for _, kind := range []struct {
		name string
		typ  uint64
	}{{"Data", ondisk.BlockGroupData}, {"Metadata", ondisk.BlockGroupMetadata}, {"System", ondisk.BlockGroupSystem}} {
		for _, c := range r.Chunks {
			if c.Type&ondisk.BlockGroupTypeMask == kind.typ {
				_, prof, _ := strings.Cut(c.TypeString(), "|")
				fmt.Fprintf(out, "  %-18s%-8s %16s\n", kind.name+":", prof, humanSize(c.Length))
			}
		}
	}
	fmt.Fprintf(out, "Features:           %s\n", strings.ReplaceAll(r.Features.String(), ",", ", "))
	fmt.Fprintf(out, "Checksum:           %s\n", r.Csum)
	return nil
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
