package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newPartitionMoveCmd moves one partition's replicas to a target list
// (AlterPartitionReassignments): the partition's leader adds the new
// replicas, lets them catch up, then removes the old ones. --cancel rolls a
// move under way back to the replicas it started from.
func newPartitionMoveCmd(g *globals) *cobra.Command {
	var (
		replicas string
		cancel   bool
		wait     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "move TOPIC PARTITION --replicas 2,3,4 | --cancel",
		Short: "Move a partition's replicas to other brokers (the first leads)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			part, err := strconv.ParseInt(args[1], 10, 32)
			if err != nil || part < 0 {
				return fmt.Errorf("partition %q: want a partition number", args[1])
			}
			var target []int32
			switch {
			case cancel && replicas != "":
				return fmt.Errorf("give --replicas or --cancel, not both")
			case !cancel && replicas == "":
				return fmt.Errorf("give the target broker ids with --replicas (or --cancel)")
			case !cancel:
				for _, f := range strings.Split(replicas, ",") {
					id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
					if err != nil || id < 0 {
						return fmt.Errorf("--replicas: %q is not a broker id", f)
					}
					target = append(target, int32(id))
				}
			}
			if err := g.MovePartition(cmd.Context(), args[0], int32(part), target); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if cancel {
				fmt.Fprintf(out, "%s/%d: move cancelled; its leader rolls it back\n", args[0], part)
				return nil
			}
			fmt.Fprintf(out, "%s/%d: moving to %v\n", args[0], part, target)
			if wait <= 0 {
				return nil
			}
			ctx, stop := context.WithTimeout(cmd.Context(), wait)
			defer stop()
			start := time.Now()
			if err := g.WaitMoved(ctx, args[0], int32(part), target); err != nil {
				return err
			}
			fmt.Fprintf(out, "%s/%d: moved to %v in %v\n", args[0], part, target, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&replicas, "replicas", "", "the target broker ids, comma-separated, as many as the partition has (the first is the preferred leader)")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the partition's move under way")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the move to finish (0: return once it is recorded)")
	return cmd
}
