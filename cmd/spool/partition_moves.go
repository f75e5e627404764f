package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newPartitionMovesCmd lists the moves under way
// (ListPartitionReassignments).
func newPartitionMovesCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "moves [TOPIC...]",
		Short: "List the partition moves under way",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			moves, err := g.PartitionMoves(cmd.Context(), args...)
			if err != nil {
				return err
			}
			return printListing(cmd, output, moves)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
