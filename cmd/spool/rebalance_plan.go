package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newRebalancePlanCmd shows what a rebalance would move (read-only): the
// partitions whose replicas are not where rendezvous hashing over today's
// roster puts them, with the replicas each would copy and its size.
func newRebalancePlanCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "plan [TOPIC]",
		Short: "Show the partitions a rebalance would move, the biggest first, and the bytes it would copy",
		Long: `Show, per partition of TOPIC (or of every topic) whose replicas are not where
rendezvous hashing over today's roster would put them (brokers joined or were
decommissioned since it was placed, or it was placed by hand), the move that
would put them there: the replicas it copies and the partition's size. Nothing
moves: "spool rebalance apply" starts the moves. Needs --admin (placement) and
--brokers (sizes).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			plan, err := g.PlanRebalance(cmd.Context(), append(args, "")[0])
			if err != nil {
				return err
			}
			return printListing(cmd, output, plan)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
