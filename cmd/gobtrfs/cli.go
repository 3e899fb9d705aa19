package main

// The command-line framework: the root command, the registry every command
// file adds its constructor to, usage errors (exit status 2), argument
// checks, command groups and the adapter for commands not yet on cobra.
// How to add a command: README-cli.md.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// commandCtors are the constructors of the top-level commands; each command
// file adds its own from an init function with addCommand. The tree is
// built anew for every run (run, tests), so flag values never leak from one
// run into the next.
var commandCtors []func() *cobra.Command

// addCommand registers the constructor of a top-level command.
func addCommand(ctor func() *cobra.Command) { commandCtors = append(commandCtors, ctor) }

// commands and usageText are the registry of commands still written
// against Go's flag package (args exclude the command name; usageText is
// the one-line summary). Each is wrapped by legacyCommand: it gets its
// arguments unparsed.
var (
	commands  = map[string]func(args []string) error{}
	usageText = map[string]string{}
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); else the
// module version go install recorded, else "devel".
var version = ""

func versionString() string {
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return fmt.Sprintf("%s (btrfs-progs v6.2 formats, %s)", v, runtime.Version())
}

// usageError is a mistake in the command line: the exit status is 2 and a
// pointer to --help follows the message.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// newRootCmd builds the whole command tree writing to stdout and stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gobtrfs",
		Short: "btrfs images in pure Go: make, read, write, check, inspect and mount them",
		Long: `gobtrfs makes, reads, writes, checks, inspects and mounts btrfs filesystem
images (files or block devices) without the kernel's btrfs. Commands and
options follow btrfs-progs where a counterpart exists; unique prefixes of
command names are accepted (gobtrfs insp dump-t IMAGE).`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q%s", args[0], suggest(c, args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(c.ErrOrStderr())
			c.Usage()
			return usageErrorf("missing command")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// GNU and btrfs-progs say options, not flags
	root.SetUsageTemplate(strings.NewReplacer("Global Flags:", "Global Options:", "Flags:", "Options:",
		`"{{.CommandPath}} [command] --help"`, `"{{.CommandPath}} COMMAND --help"`).Replace(root.UsageTemplate()))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, ctor := range commandCtors {
		root.AddCommand(ctor())
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if c, _, err := root.Find([]string{n}); err == nil && c != root && c.Name() == n {
			continue // already on cobra
		}
		short, _, _ := strings.Cut(usageText[n], ": ")
		root.AddCommand(legacyCommand(n, short, commands[n]))
	}
	finishTree(root)
	return root
}

// finishTree sets what every command of the tree shares: the Use lines
// say [options] themselves.
func finishTree(c *cobra.Command) {
	c.DisableFlagsInUseLine = true
	for _, s := range c.Commands() {
		finishTree(s)
	}
}

// run executes the command line args (without the program name) and
// returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cobra.EnablePrefixMatching = true // btrfs-progs accepts unique prefixes: sub li, fi df
	root := newRootCmd(stdout, stderr)
	if args == nil {
		args = []string{}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	path := "gobtrfs"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\n", path, err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Try '%s --help' for more information.\n", path)
		return 2
	}
	return 1
}

// runCommand runs one command on its own (the xxxMain functions tests
// call): the error is returned, not printed.
func runCommand(c *cobra.Command, args []string, stdout, stderr io.Writer) error {
	if args == nil {
		args = []string{}
	}
	c.SetArgs(args)
	c.SetOut(stdout)
	c.SetErr(stderr)
	c.SilenceErrors, c.SilenceUsage = true, true
	c.CompletionOptions.DisableDefaultCmd = true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	finishTree(c)
	return c.Execute()
}

// suggest is cobra's "did you mean" for an unknown command name.
func suggest(c *cobra.Command, name string) string {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	s := c.SuggestionsFor(name)
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
}

// operands checks the number of operands (min..max; max < 0: no limit);
// msg says what is needed ("need IMAGE and PATH").
func operands(min, max int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return usageErrorf("%s", msg)
		}
		return nil
	}
}

// newGroupCmd makes a command that only holds subcommands (inspect,
// subvolume, filesystem): without one, or with an unknown one, it is a
// usage error.
func newGroupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return usageErrorf("unknown command %q%s", args[0], suggest(c, args[0]))
		},
		RunE: func(c *cobra.Command, _ []string) error {
			c.SetOut(c.ErrOrStderr())
			c.Usage()
			return usageErrorf("missing subcommand")
		},
	}
	g.AddCommand(subs...)
	return g
}

// legacyCommand wraps a command written against Go's flag package: it
// parses its own arguments; -h is exit status 0 and a flag error a usage
// error.
func legacyCommand(name, short string, fn func([]string) error) *cobra.Command {
	c := &cobra.Command{
		Use:                name + " [ARGS...]",
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			err := fn(args)
			if errors.Is(err, flag.ErrHelp) || len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
				return nil // help was asked for and printed
			}
			if err != nil && isFlagPkgError(err) {
				return usageError{err}
			}
			return err
		},
	}
	c.SetHelpFunc(func(_ *cobra.Command, _ []string) { fn([]string{"-h"}) })
	return c
}

// isFlagPkgError tells the errors of Go's flag package from a command's.
func isFlagPkgError(err error) bool {
	s := err.Error()
	for _, p := range []string{"flag provided but not defined", "flag needs an argument", "invalid value ", "invalid boolean "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
