package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newQuarantineListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the quarantined entries of the --admin node, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			entries, err := g.Quarantine(cmd.Context())
			if err != nil {
				return err
			}
			return printListing(cmd, output, entries)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
