package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newPlacementCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "placement [TOPIC]",
		Short: "Show replicas, leaders, epochs and ISR per partition, and where rendezvous hashing would put them today",
		Long: `Show, per partition of TOPIC (or of every topic), the replicas recorded when the
topic was created, the current leader ("none" when its replica is down), its
leader epoch ("-" when the answering node does not know it yet), the in-sync
and offline replicas, and the replicas rendezvous hashing over today's roster
prefers. A "*" in the
DIFFERS column marks a partition whose replicas are not where hashing would put
them now: brokers joined or were decommissioned since. "spool rebalance plan"
shows the moves that would put them there; nodes make them on their own only
with --auto-rebalance.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			parts, err := g.Placement(cmd.Context(), append(args, "")[0])
			if err != nil {
				return err
			}
			return printListing(cmd, output, parts)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
