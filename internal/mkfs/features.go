package mkfs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Features are the superblock feature flags of the new filesystem.
type Features struct {
	Incompat uint64
	CompatRO uint64
}

// DefaultFeatures are mkfs.btrfs 6.x's: extref, skinny-metadata, no-holes
// and free-space-tree (plus mixed-backref, which every modern image has).
func DefaultFeatures() Features {
	return Features{
		Incompat: ondisk.IncompatMixedBackref | ondisk.IncompatExtendedIref |
			ondisk.IncompatSkinnyMetadata | ondisk.IncompatNoHoles,
		CompatRO: ondisk.CompatROFreeSpaceTree | ondisk.CompatROFreeSpaceTreeValid,
	}
}

// feature is one name mkfs.btrfs -O accepts.
type feature struct {
	name      string
	incompat  uint64
	compatRO  uint64
	desc      string
	supported bool // gobtrfs mkfs can build it
}

var featureTable = []feature{
	{"mixed-bg", ondisk.IncompatMixedGroups, 0, "mixed data and metadata block groups", true},
	{"extref", ondisk.IncompatExtendedIref, 0, "increased hardlink limit per file to 65536", true},
	{"raid56", ondisk.IncompatRaid56, 0, "raid56 extended format", false},
	{"skinny-metadata", ondisk.IncompatSkinnyMetadata, 0, "reduced-size metadata extent refs", true},
	{"no-holes", ondisk.IncompatNoHoles, 0, "no explicit hole extents for files", true},
	{"raid1c34", ondisk.IncompatRaid1C34, 0, "RAID1 with 3 or 4 copies", false},
	{"zoned", ondisk.IncompatZoned, 0, "support zoned devices", false},
	{"free-space-tree", 0, ondisk.CompatROFreeSpaceTree | ondisk.CompatROFreeSpaceTreeValid,
		"free space tree (space_cache=v2)", true},
	{"block-group-tree", 0, ondisk.CompatROBlockGroupTree, "block group tree to reduce mount time", true},
}

var featureAliases = map[string]string{
	"mixed_bg": "mixed-bg", "skinny_metadata": "skinny-metadata", "no_holes": "no-holes",
	"free_space_tree": "free-space-tree", "fst": "free-space-tree", "block_group_tree": "block-group-tree",
	"bgt": "block-group-tree", "extended_iref": "extref",
}

func lookupFeature(name string) (feature, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if a, ok := featureAliases[name]; ok {
		name = a
	}
	for _, f := range featureTable {
		if f.name == name {
			return f, true
		}
	}
	return feature{}, false
}

// FeatureNames lists every name -O accepts, sorted.
func FeatureNames() []string {
	var out []string
	for _, f := range featureTable {
		out = append(out, f.name)
	}
	sort.Strings(out)
	return out
}

// FeatureList describes the features, one per line, like mkfs.btrfs -O list-all.
func FeatureList() string {
	var b strings.Builder
	for _, f := range featureTable {
		note := ""
		if !f.supported {
			note = " (not supported by gobtrfs mkfs)"
		}
		fmt.Fprintf(&b, "%-20s- %s%s\n", f.name, f.desc, note)
	}
	return b.String()
}

// ParseFeatures applies a comma-separated list ("block-group-tree,^no-holes")
// to base: a name enables the feature, ^name disables it. mirrors btrfs_parse_fs_features
func ParseFeatures(list string, base Features) (Features, error) {
	if base == (Features{}) {
		base = DefaultFeatures()
	}
	for _, tok := range strings.Split(list, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		off := strings.HasPrefix(tok, "^")
		f, ok := lookupFeature(strings.TrimPrefix(tok, "^"))
		if !ok {
			return base, fmt.Errorf("unknown feature %q (known: %s)", strings.TrimPrefix(tok, "^"),
				strings.Join(FeatureNames(), ", "))
		}
		if off {
			base.Incompat &^= f.incompat
			base.CompatRO &^= f.compatRO
		} else {
			base.Incompat |= f.incompat
			base.CompatRO |= f.compatRO
		}
	}
	base.Incompat |= ondisk.IncompatMixedBackref
	return base, nil
}

// check refuses features gobtrfs mkfs cannot build and combinations the
// kernel refuses.
func (f Features) check() error {
	for _, ft := range featureTable {
		if !ft.supported && (f.Incompat&ft.incompat != 0 || f.CompatRO&ft.compatRO != 0) {
			return fmt.Errorf("feature %s is not supported by gobtrfs mkfs", ft.name)
		}
	}
	okIncompat := ondisk.IncompatMixedBackref | ondisk.IncompatExtendedIref |
		ondisk.IncompatSkinnyMetadata | ondisk.IncompatNoHoles | ondisk.IncompatMixedGroups
	okRO := ondisk.CompatROFreeSpaceTree | ondisk.CompatROFreeSpaceTreeValid | ondisk.CompatROBlockGroupTree
	if u := f.Incompat &^ okIncompat; u != 0 {
		return fmt.Errorf("incompat feature(s) %s not supported by gobtrfs mkfs",
			strings.Join(ondisk.IncompatFlagNames(u), ", "))
	}
	if u := f.CompatRO &^ okRO; u != 0 {
		return fmt.Errorf("compat_ro feature(s) %s not supported by gobtrfs mkfs",
			strings.Join(ondisk.CompatROFlagNames(u), ", "))
	}
	if f.Incompat&ondisk.IncompatMixedBackref == 0 {
		return fmt.Errorf("the mixed-backref incompat flag is required")
	}
	fst := f.CompatRO & (ondisk.CompatROFreeSpaceTree | ondisk.CompatROFreeSpaceTreeValid)
	if fst != 0 && fst != ondisk.CompatROFreeSpaceTree|ondisk.CompatROFreeSpaceTreeValid {
		return fmt.Errorf("free-space-tree needs both FREE_SPACE_TREE and FREE_SPACE_TREE_VALID")
	}
	if f.CompatRO&ondisk.CompatROBlockGroupTree != 0 &&
		(f.Incompat&ondisk.IncompatNoHoles == 0 || fst == 0) {
		return fmt.Errorf("block-group-tree requires the no-holes and free-space-tree features")
	}
	return nil
}

// String names the enabled features the way -O takes them.
func (f Features) String() string {
	var names []string
	for _, ft := range featureTable {
		if f.Incompat&ft.incompat != 0 || f.CompatRO&ft.compatRO != 0 {
			names = append(names, ft.name)
		}
	}
	return strings.Join(names, ",")
}
