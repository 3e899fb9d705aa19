package main

// gobtrfs man DIR: a man page per command, written as roff from the
// command tree (the same text as --help), so that it never drifts from the
// options the commands really take.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { addCommand(newManCmd) }

func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "write a man page per command into DIR (made if missing)",
		Long: `Write the man pages of gobtrfs and each of its commands into DIR, in
section 1: gobtrfs.1, gobtrfs-mkfs.1, gobtrfs-inspect-dump-tree.1, ...
Read one with man -l DIR/gobtrfs-mkfs.1, or install them under
/usr/local/share/man/man1.`,
		Args: operands(1, 1, "need DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			n, err := writeManPages(c.Root(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %d man pages to %s\n", n, args[0])
			return nil
		},
	}
}

// writeManPages writes the page of c and of every command below it.
func writeManPages(c *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	n := 0
	c.InitDefaultVersionFlag()
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if c.Hidden || c.Name() == "help" {
			return nil
		}
		c.InitDefaultHelpFlag()
		f, err := os.Create(filepath.Join(dir, manName(c)+".1"))
		if err != nil {
			return err
		}
		writeManPage(f, c)
		if err := f.Close(); err != nil {
			return err
		}
		n++
		for _, s := range c.Commands() {
			if err := walk(s); err != nil {
				return err
			}
		}
		return nil
	}
	return n, walk(c)
}

// manName is the page name: gobtrfs-inspect-dump-tree.
func manName(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// roff escapes text for a roff line: backslashes, and a leading dot or
// quote that would make it a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// writeManPage writes c's page: NAME, SYNOPSIS, DESCRIPTION, OPTIONS,
// COMMANDS, EXAMPLES, EXIT STATUS, SEE ALSO.
func writeManPage(w io.Writer, c *cobra.Command) {
	name := manName(c)
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p(`.TH "%s" "1" "" "gobtrfs %s" "gobtrfs manual"`, strings.ToUpper(name), roff(versionString()))
	p(".SH NAME")
	p(`%s \- %s`, roff(name), roff(c.Short))
	p(".SH SYNOPSIS")
	use := c.UseLine()
	p(".B %s", roff(c.CommandPath()))
	rest := strings.TrimSpace(strings.TrimPrefix(use, c.CommandPath()))
	if !c.HasParent() {
		rest = "[--version] COMMAND [options] [ARGS...]"
	}
	if rest != "" {
		p("%s", roff(rest))
	}
	p(".SH DESCRIPTION")
	long := c.Long
	if long == "" {
		long = c.Short + "."
		if c.DisableFlagParsing {
			long += "\n\nThe options: " + c.CommandPath() + " -h."
		}
	}
	manText(w, long)
	if c.HasAvailableLocalFlags() {
		p(".SH OPTIONS")
		manFlags(w, c.LocalFlags())
	}
	if c.HasAvailableInheritedFlags() {
		p(".SH GLOBAL OPTIONS")
		manFlags(w, c.InheritedFlags())
	}
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			subs = append(subs, s)
		}
	}
	if len(subs) > 0 {
		p(".SH COMMANDS")
		for _, s := range subs {
			p(".TP")
			p(`\fB%s\fR(1)`, roff(manName(s)))
			p("%s", roff(s.Short))
		}
	}
	if c.Example != "" {
		p(".SH EXAMPLES")
		p(".nf")
		for _, l := range strings.Split(strings.Trim(c.Example, "\n"), "\n") {
			p("%s", roff(l))
		}
		p(".fi")
	}
	p(".SH EXIT STATUS")
	p("0 on success, 1 when the command failed, 2 for a usage error (unknown command or option, wrong operands).")
	p(".SH SEE ALSO")
	var see []string
	if c.HasParent() {
		see = append(see, fmt.Sprintf(`\fB%s\fR(1)`, roff(manName(c.Parent()))))
	}
	for _, s := range subs {
		see = append(see, fmt.Sprintf(`\fB%s\fR(1)`, roff(manName(s))))
	}
	if len(see) == 0 {
		see = append(see, `\fBbtrfs\fR(8)`)
	}
	p("%s", strings.Join(see, ", "))
}

// manText writes paragraphs; one with indented lines (tables, option
// lists) is kept as it is, without filling.
func manText(w io.Writer, text string) {
	for i, para := range strings.Split(strings.Trim(text, "\n"), "\n\n") {
		if i > 0 {
			fmt.Fprintln(w, ".PP")
		}
		lines := strings.Split(para, "\n")
		pre := false
		for _, l := range lines {
			pre = pre || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
		}
		if pre {
			fmt.Fprintln(w, ".nf")
		}
		for _, l := range lines {
			fmt.Fprintln(w, roff(l))
		}
		if pre {
			fmt.Fprintln(w, ".fi")
		}
	}
}

// manFlags writes one tagged paragraph per visible option: -b, --byte-count SIZE.
func manFlags(w io.Writer, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname == "bool" || f.NoOptDefVal != "" {
			varname = ""
		}
		tag := `\fB\-\-` + roff(f.Name) + `\fR`
		if f.Shorthand != "" {
			tag = `\fB\-` + roff(f.Shorthand) + `\fR, ` + tag
		}
		if varname != "" {
			tag += ` \fI` + roff(varname) + `\fR`
		}
		fmt.Fprintln(w, ".TP")
		fmt.Fprintln(w, tag)
		fmt.Fprintln(w, roff(usage))
	})
}
