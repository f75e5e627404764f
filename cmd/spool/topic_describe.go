package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newTopicDescribeCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "describe TOPIC...",
		Short:             "Show a topic's partitions (leader, leader epoch, replicas, ISR, offline replicas), offsets and configs",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			described, err := g.DescribeTopics(cmd.Context(), args)
			if err != nil {
				return err
			}
			return printListing(cmd, output, described)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
