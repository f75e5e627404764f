package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newQuarantinePurgeCmd(g *globals) *cobra.Command {
	var output string
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Delete quarantined entries for good (all, or those older than --older-than)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			purged, err := g.PurgeQuarantine(cmd.Context(), olderThan)
			if err != nil {
				return err
			}
			if output == "table" {
				fmt.Fprintf(cmd.OutOrStdout(), "purged %d entries\n", len(purged))
			}
			return printListing(cmd, output, purged)
		},
	}
	addOutputFlag(cmd, &output)
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "purge only entries quarantined at least this long ago, e.g. 24h (default: all)")
	return cmd
}
