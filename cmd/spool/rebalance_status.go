package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newRebalanceStatusCmd shows the moves under way with their progress, as
// the --admin node gathers it from each partition's leader.
func newRebalanceStatusCmd(g *globals) *cobra.Command {
	var output string
	var watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every move under way: its step, a progress bar, elapsed time and an estimate, and the overall progress",
		Long: `Show every partition move under way (an operator's or automatic rebalancing's),
as the --admin node gathers it from the partitions' leaders: the step each move
is at (adding learner, catching up, promoting, handing off leadership,
removing), the bytes its new replicas hold of what they must copy (the leader's
log, from the offsets it has matched on each), the time since it started and an
estimate at the rate so far; then the overall progress. A move whose leader is
down or does not answer shows as unknown. Says PAUSED while "spool rebalance
pause" holds the moves. --watch redraws every --interval until no move is
under way.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			if every <= 0 {
				return fmt.Errorf("--interval %v: want a positive duration", every)
			}
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				st, err := g.RebalanceStatus(cmd.Context())
				if err != nil {
					return err
				}
				if err := printListing(cmd, output, st); err != nil {
					return err
				}
				if !watch || len(st.Moves) == 0 {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-t.C:
				}
				if output == "table" {
					fmt.Fprintln(cmd.OutOrStdout())
				}
			}
		},
	}
	addOutputFlag(cmd, &output)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until no move is under way")
	cmd.Flags().DurationVar(&every, "interval", 2*time.Second, "how often --watch refreshes")
	return cmd
}
