package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node/admin"
)

func newMembersCmd(g *globals) *cobra.Command {
	var output string
	var watch bool
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's members as one node's gossip sees them",
		Long: `List the cluster's members as the --admin node sees them: name, broker id,
status (alive, failed or left), Kafka and gossip addresses, rack and how many
partitions each leads. With --watch, print the members first, then stream join,
fail, leave, update and reap events as they happen, one line each (an update
says what changed), until interrupted; when the watched node goes away, the
watch moves to another live member.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			if watch {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return watchMembers(ctx, g, cmd.OutOrStdout(), cmd.ErrOrStderr(), output)
			}
			var members []admin.MemberInfo
			if err := g.adminJSON(cmd.Context(), "GET", "/v1/members", &members); err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(members)
			}
			printMembers(cmd.OutOrStdout(), members)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json (one JSON object per line with --watch)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "stream membership events until interrupted")
	return cmd
}

func printMembers(out io.Writer, members []admin.MemberInfo) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tID\tSTATUS\tKAFKA\tGOSSIP\tRACK\tLED")
	for _, m := range members {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.ID, m.Status, m.KafkaAddr, m.GossipAddr, orDash(m.Rack), ledColumn(m))
	}
	w.Flush()
}

func ledColumn(m admin.MemberInfo) string {
	if m.Status != "alive" {
		return "-"
	}
	return strconv.Itoa(m.PartitionsLed)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
