package main

import (
	"github.com/spf13/cobra"
)

func newGroupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List and describe consumer groups, reset their offsets",
	}
	cmd.AddCommand(newGroupListCmd(g), newGroupDescribeCmd(g), newGroupResetOffsetsCmd(g))
	return cmd
}
