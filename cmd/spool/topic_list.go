package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newTopicListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			rows, err := g.ListTopics(cmd.Context())
			if err != nil {
				return err
			}
			return printListing(cmd, output, rows)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
