package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newRebalanceResumeCmd undoes "spool rebalance pause".
func newRebalanceResumeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "resume",
		Short: "Resume partition moves paused by \"spool rebalance pause\"",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.PauseRebalance(cmd.Context(), false)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rebalancing resumed; %d moves under way go on\n", len(st.Moves))
			return nil
		},
	}
}
