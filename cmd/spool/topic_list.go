package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node"
)

// listedTopic is one row of topic list (and its -o json).
type listedTopic struct {
	Topic             string       `json:"topic"`
	ID                node.TopicID `json:"id"`
	Partitions        int          `json:"partitions"`
	ReplicationFactor int          `json:"replication_factor"`
	Internal          bool         `json:"internal"`
	Error             string       `json:"error,omitempty"`
}

func newTopicListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			ctx, cancel := g.bounded(cmd.Context())
			defer cancel()
			adm, done, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer done()
			topics, err := adm.ListTopicsWithInternal(ctx)
			if err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
			rows := []listedTopic{}
			for _, t := range topics.Sorted() {
				row := listedTopic{Topic: t.Topic, ID: node.TopicID(t.ID), Partitions: len(t.Partitions), ReplicationFactor: t.Partitions.NumReplicas(), Internal: t.IsInternal}
				if t.Err != nil {
					row.Error = explain(t.Err)
				}
				rows = append(rows, row)
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOPIC\tPARTITIONS\tREPLICAS\tID")
			for _, r := range rows {
				if r.Error != "" {
					fmt.Fprintf(w, "%s\terror: %s\t\t\n", r.Topic, r.Error)
					continue
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", r.Topic, r.Partitions, r.ReplicationFactor, r.ID)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
