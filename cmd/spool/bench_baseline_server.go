package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/bench"
)

// newBenchBaselineServerCmd is the server process `spool bench baseline`
// starts (bench.SpoolServerCommand); its flags are bench's to parse.
func newBenchBaselineServerCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "baseline-server",
		Short:              "The server process of 'spool bench baseline' (started by it)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bench.ServeMain(args, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}
