package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newRebalancePauseCmd pauses moves cluster-wide (node/moves: pause.go
// says what holds and what goes on).
func newRebalancePauseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pause",
		Short: "Pause partition moves cluster-wide: none starts, none under way takes a further step",
		Long: `Pause partition moves cluster-wide, durably (a catalog setting every node holds,
across restarts): automatic rebalancing and "spool rebalance apply" start no
move; an explicit "spool partition move" is still recorded, but its leader does
not step it; moves under way take no further step (a learner already added
keeps receiving the group's replication, so it goes on catching up). "spool
rebalance resume" goes on from where each move stood.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.PauseRebalance(cmd.Context(), true)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rebalancing paused; %d moves under way hold where they stand\n", len(st.Moves))
			return nil
		},
	}
}
