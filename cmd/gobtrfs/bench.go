package main

import (
	"github.com/spf13/cobra"

	"github.com/gobtrfs/gobtrfs/internal/bench"
)

func init() { addCommand(newBenchCmd) }

// newBenchCmd hands its arguments to internal/bench, which has its own
// subcommands and options.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench [SUBCOMMAND] [ARGS...]",
		Short:              "run benchmarks against the kernel and other baselines (gobtrfs bench list)",
		DisableFlagParsing: true,
		RunE:               func(_ *cobra.Command, args []string) error { return bench.Main(args) },
	}
}
