package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newGroupListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups with their state and coordinator",
		Long: `List consumer groups with their state and coordinator. Each broker lists the
groups it coordinates; when some cannot answer (their node is down, or their
__consumer_offsets partitions have no leader), the groups of the others are
still shown, the missing brokers are named on stderr, and the exit status is
non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			listing, err := g.ListGroups(cmd.Context())
			if err != nil {
				return err
			}
			if err := printListing(cmd, output, listing); err != nil {
				return err
			}
			return listing.Err()
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
