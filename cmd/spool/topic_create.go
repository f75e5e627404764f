package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newTopicCreateCmd(g *globals) *cobra.Command {
	var o client.CreateTopicsOptions
	cmd := &cobra.Command{
		Use:   "create TOPIC...",
		Short: "Create topics",
		Long: `Create topics.

A topic that already exists with the partitions, replication factor and
configs asked for (-p -1: the broker's num.partitions; -r -1 takes the
topic's) is reported as "already exists as asked" and is not an error, so
a create retried after a lost answer succeeds. One that exists with
another spec is an error that says what differs.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Names = args
			created, err := g.CreateTopics(cmd.Context(), o)
			for _, c := range created {
				if c.Existed {
					fmt.Fprintln(cmd.OutOrStdout(), c)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created %s\n", c)
			}
			return err
		},
	}
	cmd.Flags().Int32VarP(&o.Partitions, "partitions", "p", -1, "partitions (-1: the node's default)")
	cmd.Flags().Int16VarP(&o.ReplicationFactor, "replication-factor", "r", -1, "replicas per partition (-1: the default)")
	cmd.Flags().StringArrayVarP(&o.Configs, "config", "c", nil, "topic config key=value, repeatable (retention.ms, retention.bytes, segment.bytes, message.timestamp.type, ...)")
	return cmd
}
