package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node/datadir"
)

func newQuarantineCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List or reclaim the data a node set aside instead of deleting it",
		Long: `A node never deletes partition data outright: the directories of a deleted
topic, a directory left by a deleted incarnation of a topic, and bytes cut
from a damaged segment are moved to DATA/quarantine, each with an ERROR log
line naming it. The node reclaims them after --quarantine-retention (7 days by
default); these commands list them and reclaim them sooner, on the --admin node.`,
	}
	cmd.AddCommand(newQuarantineListCmd(g), newQuarantinePurgeCmd(g))
	return cmd
}

func newQuarantineListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the quarantined entries of the --admin node, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			var entries []datadir.Entry
			if err := g.adminJSON(cmd.Context(), "GET", "/v1/quarantine", &entries); err != nil {
				return err
			}
			return printQuarantine(cmd.OutOrStdout(), entries, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func newQuarantinePurgeCmd(g *globals) *cobra.Command {
	var output string
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Delete quarantined entries for good (all, or those older than --older-than)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: want table or json", output)
			}
			if olderThan < 0 {
				return fmt.Errorf("--older-than %v: want a non-negative duration", olderThan)
			}
			path := "/v1/quarantine/purge"
			if olderThan > 0 {
				path += "?older_than=" + url.QueryEscape(olderThan.String())
			}
			var purged []datadir.Entry
			if err := g.adminJSON(cmd.Context(), "POST", path, &purged); err != nil {
				return err
			}
			if output == "table" {
				fmt.Fprintf(cmd.OutOrStdout(), "purged %d entries\n", len(purged))
			}
			return printQuarantine(cmd.OutOrStdout(), purged, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "purge only entries quarantined at least this long ago, e.g. 24h (default: all)")
	return cmd
}

func printQuarantine(out io.Writer, entries []datadir.Entry, output string) error {
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tDROPPED\tBYTES\tPATH")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", e.Name, e.Dropped.UTC().Format(time.RFC3339), e.Bytes, e.Path)
	}
	return w.Flush()
}
