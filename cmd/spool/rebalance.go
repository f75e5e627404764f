package main

import "github.com/spf13/cobra"

func newRebalanceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Plan and start the moves that put partitions where hashing over today's roster prefers them",
	}
	cmd.AddCommand(newRebalancePlanCmd(g), newRebalanceApplyCmd(g), newRebalanceStatusCmd(g), newRebalancePauseCmd(g), newRebalanceResumeCmd(g)) // rebalance_NAME.go
	return cmd
}
