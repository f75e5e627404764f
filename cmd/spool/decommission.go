package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newDecommissionCmd(g *globals) *cobra.Command {
	var (
		cancel, force bool
		wait          time.Duration
		output        string
	)
	cmd := &cobra.Command{
		Use:   "decommission ID",
		Short: "Drain a broker's partitions onto the others, then remove it from the roster",
		Long: `Drain broker ID, alive or down, then remove it from the roster (the set of
brokers partitions are placed on). Every partition with a replica on it moves:
the broker's place in the replica list goes to the next broker placement
prefers, the other replicas stay. Pinned partitions move too. At most
--rebalance-max-moves (a node flag) moves are under way at once, the biggest
partitions first. New partitions are never placed on a draining broker. Once
nothing is left on it, it leaves the roster; if it is alive it then holds
nothing, and starting it again adds it back as an empty broker.

Partitions of replication factor 1 have no other replica to copy from: the
decommission is refused while the broker holds any, unless --force, which
leaves them on it (unavailable once it is gone).

Without --wait the command returns once the drain is recorded (durable, and
spread by gossip: it survives restarts); with --wait it shows the progress
until the broker is out of the roster. --cancel stops a drain (moves under way
finish; nothing moves back).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("broker id %q: want a non-negative integer", args[0])
			}
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			out := cmd.OutOrStdout()
			if cancel {
				if force || wait > 0 {
					return fmt.Errorf("--cancel takes neither --force nor --wait")
				}
				roster, err := g.CancelDecommission(cmd.Context(), int32(id))
				if err != nil {
					return err
				}
				if output == "json" {
					st, err := g.DrainProgress(cmd.Context(), int32(id))
					if err != nil {
						return err
					}
					return client.WriteJSON(out, st)
				}
				fmt.Fprintf(out, "broker %d: drain cancelled; roster now %v\n", id, roster)
				return nil
			}
			roster, err := g.Decommission(cmd.Context(), int32(id), force)
			if err != nil {
				return err
			}
			if output == "table" {
				fmt.Fprintf(out, "broker %d draining; placement now uses %v\n", id, roster)
			}
			if wait <= 0 {
				st, err := g.DrainProgress(cmd.Context(), int32(id))
				if err != nil {
					return err
				}
				return printListing(cmd, output, st)
			}
			ctx, stop := context.WithTimeout(cmd.Context(), wait)
			defer stop()
			start := time.Now()
			st, err := g.WaitDrained(ctx, int32(id), func(st client.DrainStatus) {
				if output == "table" {
					fmt.Fprintf(out, "%s  %s\n", time.Since(start).Round(time.Second), st.Progress())
				}
			})
			if err != nil {
				if output == "table" {
					_ = st.WriteTable(out)
				}
				return err
			}
			if output == "json" {
				return client.WriteJSON(out, st)
			}
			fmt.Fprintf(out, "broker %d drained and removed from the roster in %v\n", id, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().BoolVar(&cancel, "cancel", false, "stop draining the broker; it stays in the roster")
	cmd.Flags().BoolVar(&force, "force", false, "remove the broker even though partitions of replication factor 1 stay on it")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the broker to be drained and removed, showing progress (0: return once the drain is recorded)")
	addOutputFlag(cmd, &output)
	return cmd
}
