package main

import "github.com/spf13/cobra"

func newPartitionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "partition",
		Short: "Move partitions' replicas and list the moves under way",
	}
	cmd.AddCommand(newPartitionMoveCmd(g), newPartitionMovesCmd(g)) // partition_NAME.go
	return cmd
}
