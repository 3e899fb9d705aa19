package mountcli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"log/syslog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fusefs"
)

// startBackground re-runs this program with the same arguments in a new
// session and waits until the child reports the mount ready (or its error)
// through a pipe.
func startBackground() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0] // helper mode follows the name it was called by
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	cmd.ExtraFiles = []*os.File{pw}
	// stdin, stdout and stderr are /dev/null: the caller's pipes must not
	// stay open for as long as the mount lives ($(gobtrfs mount --daemon) returns)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return err
	}
	pw.Close()
	line, rerr := bufio.NewReader(pr).ReadString('\n')
	pr.Close()
	line = strings.TrimSpace(line)
	switch {
	case line == "ready":
		cmd.Process.Release()
		return nil
	case strings.HasPrefix(line, "error: "):
		cmd.Wait()
		return errors.New(strings.TrimPrefix(line, "error: "))
	}
	werr := cmd.Wait()
	if rerr == nil {
		rerr = fmt.Errorf("unexpected message %q", line)
	}
	if werr == nil {
		return fmt.Errorf("background mount failed before it was ready: %w", rerr)
	}
	return fmt.Errorf("background mount failed before it was ready: %w %w", rerr, werr)
}

// runChild is the background side: mount, say "ready" on the pipe, serve.
func runChild(a *Args, fdText string) error {
	fd, err := strconv.Atoi(fdText)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", readyEnv, fdText, err)
	}
	os.Unsetenv(readyEnv)
	ready := os.NewFile(uintptr(fd), "ready")
	if a.Options.Logger == nil {
		a.Options.Logger = daemonLogger()
	}
	sigs := make(chan os.Signal, 2) // caught before the mount shows, as runForeground
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	mt, err := fusefs.New(a.Image, a.Mountpoint, a.Options)
	if err != nil {
		// the parent prints it and exits non-zero
		fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		ready.Close()
		os.Exit(1)
	}
	fmt.Fprintln(ready, "ready")
	ready.Close()
	serve(mt, a.Options.Logger.Writer(), sigs)
	if err := mt.Close(); err != nil {
		a.Options.Logger.Printf("close %s: %v", a.Image, err)
		return err
	}
	return nil
}

// daemonLogger sends a background mount's reports to syslog (they would
// go nowhere on /dev/null), or discards them where there is none.
func daemonLogger() *log.Logger {
	if w, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_WARNING, "gobtrfs"); err == nil {
		return log.New(w, "", 0)
	}
	return log.New(io.Discard, "", 0)
}

func lookPath(bin string) (string, error) { return exec.LookPath(bin) }

func runCmd(path string, args ...string) error { return exec.Command(path, args...).Run() }
