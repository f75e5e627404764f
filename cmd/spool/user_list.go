package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newUserListCmd lists the cluster's SCRAM users with each credential's
// mechanism and iteration count (never keys).
func newUserListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cluster's SCRAM users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			users, err := g.ListUsers(cmd.Context())
			if err != nil {
				return err
			}
			return printListing(cmd, output, users)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
