package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func newDecommissionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "decommission ID",
		Short: "Remove a stopped broker from the roster for good",
		Long: `Remove broker ID from the roster, the set of brokers new partitions are placed
on. Only for a broker that is gone for good: the node refuses while gossip sees
it alive. Existing partitions keep their replicas; the removal spreads to every
node by gossip. Starting that broker again adds it back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("broker id %q: want a non-negative integer", args[0])
			}
			roster, err := g.Decommission(cmd.Context(), int32(id))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "broker %d decommissioned; roster now %v\n", id, roster)
			return nil
		},
	}
}
