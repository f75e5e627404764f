package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/node"
)

func newTopicCreateCmd(g *globals) *cobra.Command {
	var (
		partitions int32
		rf         int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC...",
		Short: "Create topics",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfgs := make(map[string]*string, len(configs))
			for _, c := range configs {
				k, v, ok := strings.Cut(c, "=")
				if !ok || k == "" {
					return fmt.Errorf("--config %q: want key=value", c)
				}
				cfgs[k] = &v
			}
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("--partitions %d: want at least 1, or -1 for the node's default", partitions)
			}
			if rf == 0 || rf < -1 {
				return fmt.Errorf("--replication-factor %d: want at least 1, or -1 for the default", rf)
			}
			ctx, cancel := g.bounded(cmd.Context())
			defer cancel()
			adm, done, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer done()
			if err := checkReplicationFactor(ctx, adm, rf); err != nil {
				return err
			}
			resps, err := adm.CreateTopics(ctx, partitions, rf, cfgs, args...)
			if err != nil {
				return fmt.Errorf("create topics: %w", err)
			}
			var failed []string
			for _, r := range resps.Sorted() {
				if r.Err != nil {
					msg := r.Err.Error()
					if r.ErrMessage != "" {
						msg += ": " + r.ErrMessage
					}
					failed = append(failed, r.Topic+": "+msg)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created %s (%s, id %s)\n", r.Topic, plural(int(r.NumPartitions), "partition"), node.TopicID(r.ID))
			}
			if len(failed) > 0 {
				return fmt.Errorf("%s", strings.Join(failed, "; "))
			}
			return nil
		},
	}
	cmd.Flags().Int32VarP(&partitions, "partitions", "p", -1, "partitions (-1: the node's default)")
	cmd.Flags().Int16VarP(&rf, "replication-factor", "r", -1, "replicas per partition (-1: the default)")
	cmd.Flags().StringArrayVarP(&configs, "config", "c", nil, "topic config key=value, repeatable (retention.ms, retention.bytes, segment.bytes, message.timestamp.type, ...)")
	return cmd
}

// checkReplicationFactor refuses a replication factor above the brokers
// alive now: the topic could not get its replicas, and says why.
func checkReplicationFactor(ctx context.Context, adm *kadm.Client, rf int16) error {
	if rf <= 1 {
		return nil
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return fmt.Errorf("list brokers: %w", err)
	}
	if int(rf) > len(brokers) {
		return fmt.Errorf("--replication-factor %d: only %s alive (%s); start more nodes or lower -r", rf, plural(len(brokers), "broker"), formatBrokers(brokers.NodeIDs()))
	}
	return nil
}
