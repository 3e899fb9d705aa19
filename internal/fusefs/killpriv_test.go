package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// killPrivReport writes, truncates and chowns set-user-ID and set-group-ID
// files as nobody and as root, and sets a file capability then writes, and
// reports the modes and capabilities that result: the kernel's rules
// (should_remove_suid, setattr_should_drop_sgid, cap_inode_killpriv) for
// which bits a write, a truncate or a chown drops.
func killPrivReport(t *testing.T, dir string) string {
	var b strings.Builder
	openUp(t, dir)
	sh := func(asNobody bool, script string) {
		t.Helper()
		args := []string{"sh", "-c", script}
		if asNobody {
			args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(&b, "  %q: %v %s\n", script, err, strings.TrimSpace(string(out)))
		}
	}
	mode := func(name string) string {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%o", uint32(st.Mode().Perm())|suidBits(st.Mode()))
	}
	cases := []struct {
		name   string
		mode   os.FileMode // with os.ModeSetuid/ModeSetgid
		nobody bool        // the file belongs to nobody, and nobody acts
		script string
	}{
		{"write-nobody-ug+s-gx", 0o775 | os.ModeSetuid | os.ModeSetgid, true, "printf x >> F"},
		{"write-nobody-ug+s", 0o765 | os.ModeSetuid | os.ModeSetgid, true, "printf x >> F"},
		{"write-nobody-g+s-gx", 0o775 | os.ModeSetgid, true, "printf x >> F"},
		{"write-root-ug+s-gx", 0o775 | os.ModeSetuid | os.ModeSetgid, false, "printf x >> F"},
		{"truncate-nobody", 0o775 | os.ModeSetuid | os.ModeSetgid, true, "truncate -s 1 F"},
		{"truncate-root", 0o775 | os.ModeSetuid | os.ModeSetgid, false, "truncate -s 1 F"},
		{"otrunc-nobody", 0o775 | os.ModeSetuid | os.ModeSetgid, true, ": > F"},
		{"chown-root", 0o775 | os.ModeSetuid | os.ModeSetgid, false, "chown 65534:65534 F"},
		{"chown-root-no-gx", 0o765 | os.ModeSetuid | os.ModeSetgid, false, "chown 65534:65534 F"},
		{"second-write-nobody", 0o775, true, "printf x >> F; chmod u+s,g+s F; printf x >> F"},
		{"falloc-nobody", 0o775 | os.ModeSetuid | os.ModeSetgid, true, "xfs_io -c 'falloc 0 64k' F"},
		{"copy-range-nobody", 0o775 | os.ModeSetuid | os.ModeSetgid, true, "xfs_io -c 'copy_range -l 4 src' F"},
	}
	if err := os.WriteFile(filepath.Join(dir, "src"), []byte("source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte("data\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if c.nobody {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %s ->", c.name, mode(c.name))
		sh(c.nobody, strings.ReplaceAll(c.script, "F", c.name))
		fmt.Fprintf(&b, " %s\n", mode(c.name))
	}
	if _, err := exec.LookPath("setcap"); err == nil {
		for _, who := range []string{"root", "nobody"} {
			name := "cap-write-" + who
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("data\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, 0o666)
			sh(false, "setcap cap_net_raw+ep "+name)
			sh(false, "cat "+name+" > /dev/null; printf x >> "+name) // a first write: caps go
			out, _ := exec.Command("getcap", p).CombinedOutput()
			fmt.Fprintf(&b, "%s: caps after write %q\n", name, strings.TrimSpace(strings.ReplaceAll(string(out), dir+"/", "")))
			sh(false, "setcap cap_net_raw+ep "+name)
			sh(who == "nobody", "printf y >> "+name) // caps set again after writes
			out, _ = exec.Command("getcap", p).CombinedOutput()
			fmt.Fprintf(&b, "%s: caps after second write %q\n", name, strings.TrimSpace(strings.ReplaceAll(string(out), dir+"/", "")))
		}
	}
	return b.String()
}

func suidBits(m os.FileMode) uint32 {
	var v uint32
	if m&os.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		v |= 0o2000
	}
	return v
}

// TestKillPrivLikeKernel: writes, truncates, O_TRUNC opens and chowns drop
// set-user-ID, set-group-ID and file capabilities as kernel btrfs does
// (the daemon does it: FUSE_HANDLE_KILLPRIV_V2).
func TestKillPrivLikeKernel(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	sideBySide(t, "", Options{AllowOther: true}, killPrivReport)
}
