package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node"
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
them now: brokers joined or were decommissioned since. Spool never moves data
on its own.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			path := "/v1/placement"
			if len(args) == 1 {
				path += "?topic=" + url.QueryEscape(args[0])
			}
			var parts []node.PartitionPlacement
			if err := g.adminJSON(cmd.Context(), "GET", path, &parts); err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(parts)
			}
			printPlacement(cmd.OutOrStdout(), parts)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func printPlacement(out io.Writer, parts []node.PartitionPlacement) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tREPLICAS\tLEADER\tEPOCH\tISR\tOFFLINE\tPREFERRED\tDIFFERS")
	for _, p := range parts {
		leader := "none"
		if p.Leader >= 0 {
			leader = fmt.Sprint(p.Leader)
		}
		differs := ""
		if p.Differs {
			differs = "*"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, idList(p.Replicas), leader,
			epochOrDash(p.LeaderEpoch), idList(p.ISR), idList(p.Offline), idList(p.Preferred), differs)
	}
	w.Flush()
}

func idList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// epochOrDash shows a leader epoch, "-" when unknown (-1).
func epochOrDash(epoch int32) string {
	if epoch < 0 {
		return "-"
	}
	return fmt.Sprint(epoch)
}
