package main

import "github.com/gobtrfs/gobtrfs/internal/bench"

func init() {
	commands["bench"] = bench.Main
	usageText["bench"] = "run benchmarks against the kernel and other baselines (gobtrfs bench list)"
}
