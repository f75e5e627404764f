package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newRebalanceApplyCmd starts the planned moves, a bounded number at a
// time: run it again (or with --wait in a loop of one's own) as moves end.
func newRebalanceApplyCmd(g *globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "apply [TOPIC]",
		Short: "Start the planned moves, the biggest first, at most --max under way at once",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--max %d: want 0 (no bound) or more", limit)
			}
			if st, err := g.RebalanceStatus(cmd.Context()); err != nil {
				return err
			} else if st.Paused {
				return fmt.Errorf("rebalancing is paused: no move starts until `spool rebalance resume`")
			}
			plan, err := g.PlanRebalance(cmd.Context(), append(args, "")[0])
			if err != nil {
				return err
			}
			started, err := g.ApplyRebalance(cmd.Context(), plan, limit)
			for _, m := range started {
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%d: moving %v -> %v\n", m.Topic, m.Partition, m.From, m.To)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d of %d planned moves started\n", len(started), len(plan))
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "max", 2, "moves under way at once, those already under way included (0: no bound)")
	return cmd
}
