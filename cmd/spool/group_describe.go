package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newGroupDescribeCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "describe GROUP...",
		Short:             "Show a group's members, assignments, committed offsets and lag per partition",
		Long:              "Show a group's members, assignments, committed offsets and lag per partition.\nA group with neither members nor committed offsets does not exist: that is an error.",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeGroups(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			d, err := g.DescribeGroups(cmd.Context(), args)
			if err != nil {
				return err
			}
			if err := printListing(cmd, output, d.Groups); err != nil {
				return err
			}
			return d.Err()
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
