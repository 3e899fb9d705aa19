// Command gobtrfs reads, writes, checks and mounts btrfs images in pure Go.
// Subcommands mirror btrfs-progs where they have a counterpart: the same
// names, the same option letters, unique prefixes (gobtrfs sub li) and the
// inspect-internal spelling.
//
// The command line is built with spf13/cobra and spf13/pflag (GNU short
// and long options, grouped short flags, options after operands, "--").
// Each command lives in its own file and registers a constructor from an
// init function; see cli.go and README-cli.md for how to add one.
//
// Exit status: 0 on success (and for -h/--help), 1 when the command failed,
// 2 for a usage error (unknown command or option, wrong operands), as
// btrfs-progs and GNU tools do.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
