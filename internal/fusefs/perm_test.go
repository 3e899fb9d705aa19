package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// permCase is a script run the same way on a kernel btrfs mount and on
// ours, in a fresh directory named after the case (0755, owned by root).
// Its output (stdout and stderr), then the mode, owner, getfacl output and
// what other users may do with every path below that directory must be
// equal on both.
type permCase struct {
	name, script string
}

// permCases: mode 000, 0700 directories, set-group-ID directories and the
// kernel's clearing of S_ISGID, default ACLs inherited with and without
// the umask, chmod after setfacl, mode-equivalent ACLs (setfacl, cp -a)
// and ACLs that deny; fallocate by others clears S_ISUID/S_ISGID as the
// VFS does (generic/683-685). asnobody runs a command as uid/gid 65534 with no
// supplementary groups; $SRC is a host tree for cp -a.
var permCases = []permCase{
	{"mode000", `
echo data > f; chmod 000 f
mkdir d; echo x > d/in; chmod 000 d
mkdir e; chmod 0 e
touch g; chmod 0 g; chmod u+r g`},
	{"dir0700", `
mkdir -m 0700 p; echo data > p/f; mkdir p/sub; echo x > p/sub/g
mkdir -m 0711 q; echo data > q/f
mkdir -m 0750 r; chown 0:1000 r; echo data > r/f`},
	{"setgid", `
mkdir g; chown 0:1000 g; chmod 2775 g
mkdir g/sub; touch g/f; mkdir -m 0700 g/priv; mkfifo g/fifo
touch s; chown 65534:0 s; asnobody chmod 2755 s; echo "nobody chmod s: $?"
touch s2; chown 65534:65534 s2; asnobody chmod 2755 s2; echo "nobody chmod s2: $?"
touch a; chown 65534:0 a; chmod 2755 a; asnobody setfacl -m u::rwx,g::rx,o::rx a; echo "nobody setfacl a: $?"
touch a2; chown 65534:0 a2; chmod 2755 a2; asnobody setfacl -m u:1001:r a2; echo "nobody setfacl a2: $?"
touch a3; chown 65534:0 a3; chmod 2755 a3; setfacl -m u:1001:r a3
mkdir ad; chown 65534:0 ad; chmod 2775 ad; asnobody setfacl -m u:1001:rx ad; echo "nobody setfacl ad: $?"
touch n; asnobody chmod 644 n; echo "nobody chmod root's n: $?"`},
	{"fallocsgid", `
for m in 6666 6676 6766 6777 2666 2676 4666; do echo x > f$m; chmod $m f$m; asnobody xfs_io -c "falloc 0 64k" f$m; echo "nobody falloc $m: $?"; done
echo x > r; chmod 2666 r; xfs_io -c "falloc 0 64k" r
echo x > g; chown 0:65534 g; chmod 2666 g; asnobody xfs_io -c "fpunch 0 4k" g
echo x > z; chmod 2666 z; asnobody xfs_io -c "fzero 0 4k" z`},
	{"defacl", `
mkdir d; setfacl -d -m u::rwx,u:65534:rx,g::rx,m::rwx,o::- d
touch d/f; echo hi > d/f2; mkdir d/sub; mkfifo d/fifo; mkdir d/sub/deeper; touch d/sub/deeper/x
(umask 077; touch d/u; mkdir d/usub)
mkdir plain; (umask 077; touch plain/u; mkdir plain/ud; mkfifo plain/fifo); (umask 027; touch plain/w)
mkdir e; setfacl -d -m u::rwx,g::rwx,o::rwx e; (umask 077; touch e/f; mkdir e/d)
mkdir m; setfacl -d -m u::rwx,g::r-x,o::--- m; touch m/f; mkdir m/d; echo x > m/f2; chmod 666 m/f2
mkdir s; chown 0:1000 s; chmod 2770 s; setfacl -d -m g:1000:rwx s; mkdir s/sub; touch s/f
mkdir k; setfacl -d -m u:65534:rwx k; setfacl -k k; touch k/f`},
	{"chmodacl", `
echo x > f; setfacl -m u:65534:rw,g:1000:r f; chmod 604 f
echo x > f2; setfacl -m u:65534:rw f2; chmod 0 f2
mkdir d; echo y > d/in; setfacl -m u:65534:rwx d; chmod 750 d
echo x > f3; setfacl -m u:65534:r f3; setfacl -b f3
echo x > f4; setfacl -m u:65534:r f4; setfacl -m m::- f4
echo x > f5; setfacl -m u:65534:r,g::rwx f5; chmod g-w f5; chmod o+r f5
echo x > f6; setfacl -m u:65534:rw f6; chmod 2775 f6
mkdir dd; setfacl -d -m u:65534:r dd; chmod 700 dd; touch dd/new`},
	{"equiv", `
echo x > f; chmod 600 f; setfacl -m u::rw,g::r,o::r f
mkdir d; chmod 700 d; setfacl -m u::rwx,g::rx,o::rx d
echo x > f2; setfacl -m u:65534:r f2; setfacl -x u:65534 f2; setfacl -m m::rw f2
echo x > f3; chmod 640 f3; setfacl --set u::rwx,g::---,o::r f3
cp -a "$SRC"/. cp; echo "cp -a: $?"
cp -a "$SRC"/f644 "$SRC"/f600 .; echo "cp -a files: $?"`},
	{"deny", `
echo x > f; chmod 644 f; setfacl -m u:65534:-,g:1000:rw f
mkdir d; echo y > d/g; setfacl -m u:65534:- d
echo x > w; chmod 600 w; setfacl -m u:65534:rw w
echo x > o; chmod 604 o; setfacl -m g:65534:- o`},
	{"invalid", `
touch f; setfattr -n system.posix_acl_default -v 0x02000000010007000000000004000500000000002000050000000000 f; echo "default on a file: $?"
setfattr -n system.posix_acl_access -v 0x01000000 f; echo "version 1: $?"
setfattr -n system.posix_acl_access -v 0x0200000001000600ffffffff0200040001000000 f; echo "no group: $?"
setfattr -n system.posix_acl_access -v 0x0200000001000600ffffffff04000400ffffffff20000400ffffffff f; echo "valid minimal: $?"
setfattr -n system.posix_acl_access -v 0x02000000 f; echo "empty: $?"
setfattr -x system.posix_acl_access f; echo "remove absent: $?"
mkdir d; setfattr -x system.posix_acl_default d; echo "remove absent default: $?"`},
}

// permIdentities are the users whose access is compared: nobody (in no
// group), and uid 1001 in group 1000.
var permIdentities = []struct{ name, setpriv string }{
	{"nobody", "--reuid=65534 --regid=65534 --clear-groups"},
	{"u1001:g1000", "--reuid=1001 --regid=1000 --groups=1000"},
}

const permPrelude = `umask 022
asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
`

// needPermTools skips unless the tools the permission tests drive exist.
func needPermTools(t *testing.T) {
	t.Helper()
	for _, c := range []string{"getfacl", "setfacl", "setfattr", "setpriv", "find", "cp", "xfs_io"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed (getfacl/setfacl: Debian package acl; setfattr: attr; xfs_io: xfsprogs)", c)
		}
	}
}

// openUp lets other users reach dir: it and its parent (a test's temporary
// directory root, 0700) become 0755.
func openUp(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// runPermScript runs a case's script in root/NAME and returns its output.
func runPermScript(t *testing.T, root, src string, c permCase) string {
	t.Helper()
	dir := filepath.Join(root, c.name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", permPrelude+c.script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SRC="+src, "LC_ALL=C")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// permReport describes every path below root/name: stat, getfacl, and for
// each identity the access(2) answers and whether reading (files) or
// listing (directories) works.
func permReport(t *testing.T, root, name string) string {
	t.Helper()
	find := exec.Command("find", name)
	find.Dir = root
	out, err := find.Output()
	if err != nil {
		t.Fatalf("find %s in %s: %v", name, root, err)
	}
	paths := strings.Fields(string(out))
	sortStrings(paths)
	var b strings.Builder
	st := exec.Command("sh", "-c", `for p; do stat -c '%n %a %u:%g %F' "$p"; getfacl -n -p "$p" 2>&1 | grep -v '^# file:'; done`, "sh")
	st.Args = append(st.Args, paths...)
	st.Dir = root
	o, err := st.CombinedOutput()
	if err != nil {
		t.Fatalf("stat/getfacl in %s: %v\n%s", root, err, o)
	}
	b.Write(o)
	for _, id := range permIdentities {
		script := `for p; do
  a="$p as ` + id.name + `: "
  test -r "$p" && a="${a}r" || a="${a}-"; test -w "$p" && a="${a}w" || a="${a}-"; test -x "$p" && a="${a}x" || a="${a}-"
  if [ -d "$p" ]; then ls "$p" >/dev/null 2>&1 && a="$a list" || a="$a nolist"
  elif [ -f "$p" ]; then cat "$p" >/dev/null 2>&1 && a="$a read" || a="$a noread"; fi
  echo "$a"
done`
		args := append(strings.Fields(id.setpriv), "sh", "-c", script, "sh")
		cmd := exec.Command("setpriv", append(args, paths...)...)
		cmd.Dir = root
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("access as %s in %s: %v\n%s", id.name, root, err, o)
		}
		b.Write(o)
	}
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// diffLines shows where two reports differ.
func diffLines(kernel, ours string) string {
	k, o := strings.Split(kernel, "\n"), strings.Split(ours, "\n")
	var b strings.Builder
	for i := 0; i < max(len(k), len(o)); i++ {
		var kl, ol string
		if i < len(k) {
			kl = k[i]
		}
		if i < len(o) {
			ol = o[i]
		}
		if kl != ol {
			fmt.Fprintf(&b, "  kernel: %q\n  ours:   %q\n", kl, ol)
		}
	}
	return b.String()
}

// permSource is the host tree cp -a copies in: plain modes, and an ACL
// when the host filesystem takes one.
func permSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	openUp(t, src)
	cmd := exec.Command("sh", "-c", `umask 022
echo a > f644; chmod 644 f644; echo b > f600; chmod 600 f600; echo c > f755; chmod 755 f755
mkdir d755 d700; chmod 755 d755; chmod 700 d700; echo d > d755/in; chmod 640 d755/in
echo e > acl; setfacl -m u:65534:rw acl 2>/dev/null; mkdir dacl; setfacl -d -m u:65534:rx dacl 2>/dev/null; true`)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make cp -a source: %v\n%s", err, out)
	}
	return src
}

// TestPermissionsLikeKernel runs permCases on a kernel btrfs mount and on
// ours (allow_other), and compares modes, ACLs and other users' access;
// then checks our image with btrfs check and mounts it with the kernel and
// with our read-only mount, which must show the same as our mount did.
func TestPermissionsLikeKernel(t *testing.T) {
	testutil.NeedRootLoop(t)
	needFuse(t)
	needPermTools(t)
	src := permSource(t)

	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	kdir := testutil.LoopMount(t, kimg, "")
	openUp(t, kdir)

	oimg := filepath.Join(t.TempDir(), "ours.img")
	testutil.Mkfs(t, oimg, 256<<20)
	tm := mountImage(t, oimg, Options{AllowOther: true})
	openUp(t, tm.dir)

	shown := map[string]string{}
	for _, c := range permCases {
		kout := runPermScript(t, kdir, src, c)
		oout := runPermScript(t, tm.dir, src, c)
		if kout != oout {
			t.Errorf("%s: script output differs:\n%s", c.name, diffLines(kout, oout))
		}
		krep := permReport(t, kdir, c.name)
		orep := permReport(t, tm.dir, c.name)
		if krep != orep {
			t.Errorf("%s: modes, ACLs or access differ from the kernel's:\n%s\nkernel's report:\n%s", c.name, diffLines(krep, orep), krep)
		}
		shown[c.name] = orep
	}

	tm.unmount()
	checktest.Image(t, oimg)
	odir := testutil.LoopMount(t, oimg, "ro")
	if err := os.Chmod(filepath.Dir(odir), 0o755); err != nil {
		t.Fatal(err)
	}
	ro := mountImage(t, oimg, Options{ReadOnly: true, AllowOther: true})
	if err := os.Chmod(filepath.Dir(ro.dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range permCases {
		// Nothing is writable on a read-only mount: the w of access(2) is not compared.
		want := noWrite(shown[c.name])
		if rep := noWrite(permReport(t, odir, c.name)); rep != want {
			t.Errorf("%s: the kernel's mount of our image differs from what our mount showed:\n%s", c.name, diffLines(want, rep))
		}
		if rep := noWrite(permReport(t, ro.dir, c.name)); rep != want {
			t.Errorf("%s: our read-only mount differs from what our read-write mount showed:\n%s", c.name, diffLines(want, rep))
		}
	}
}

// accessLine matches the access(2) answers of a report line.
var accessLine = regexp.MustCompile(`( as [^ ]+: [r-])[w-]([x-] )`)

// noWrite blanks the write answers of a report.
func noWrite(rep string) string { return accessLine.ReplaceAllString(rep, "${1}.${2}") }
