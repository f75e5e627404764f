package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTopicCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe and delete topics",
	}
	cmd.AddCommand(newTopicCreateCmd(g), newTopicListCmd(g), newTopicDescribeCmd(g), newTopicDeleteCmd(g))
	cmd.AddCommand(newTopicAlterConfigCmd(g))   // topic_alter_config.go
	cmd.AddCommand(newTopicAddPartitionsCmd(g)) // topic_add_partitions.go
	cmd.AddCommand(newTopicDeleteRecordsCmd(g)) // topic_delete_records.go
	return cmd
}

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
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resps, err := adm.CreateTopics(cmd.Context(), partitions, rf, cfgs, args...)
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
				fmt.Fprintf(cmd.OutOrStdout(), "created %s (%d partitions, id %s)\n", r.Topic, r.NumPartitions, r.ID)
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

func newTopicListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			topics, err := adm.ListTopics(cmd.Context())
			if err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOPIC\tPARTITIONS\tREPLICAS\tID")
			for _, t := range topics.Sorted() {
				if t.Err != nil {
					fmt.Fprintf(w, "%s\terror: %v\t\t\n", t.Topic, t.Err)
					continue
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", t.Topic, len(t.Partitions), t.Partitions.NumReplicas(), t.ID)
			}
			return w.Flush()
		},
	}
}

func newTopicDescribeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe TOPIC...",
		Short: "Show a topic's partitions, offsets and configs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			adm, done, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer done()
			topics, err := adm.ListTopics(ctx, args...)
			if err != nil {
				return fmt.Errorf("describe topics: %w", err)
			}
			// A partition whose leader is down fails only its own shard: the
			// rest of the table is what an operator needs most during an outage.
			starts, err := adm.ListStartOffsets(ctx, args...)
			if err != nil && !isShardErrors(err) {
				return fmt.Errorf("list start offsets: %w", err)
			}
			ends, err := adm.ListEndOffsets(ctx, args...)
			if err != nil && !isShardErrors(err) {
				return fmt.Errorf("list end offsets: %w", err)
			}
			configs, err := adm.DescribeTopicConfigs(ctx, args...)
			if err != nil {
				return fmt.Errorf("describe configs: %w", err)
			}
			out := cmd.OutOrStdout()
			for _, name := range args {
				t, ok := topics[name]
				if !ok || t.Err != nil {
					return fmt.Errorf("topic %s: %v", name, t.Err)
				}
				fmt.Fprintf(out, "topic %s  id %s  partitions %d\n", name, t.ID, len(t.Partitions))
				w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND")
				for _, p := range t.Partitions.Sorted() {
					leader := strconv.Itoa(int(p.Leader))
					if p.Leader < 0 {
						leader = "none"
					}
					fmt.Fprintf(w, "%d\t%s\t%v\t%v\t%s\t%s\n", p.Partition, leader, p.Replicas, p.ISR,
						listedOffset(starts, name, p.Partition), listedOffset(ends, name, p.Partition))
				}
				w.Flush()
				rc, err := configs.On(name, nil)
				if err == nil && rc.Err == nil {
					fmt.Fprintln(out, "configs:")
					sort.Slice(rc.Configs, func(i, j int) bool { return rc.Configs[i].Key < rc.Configs[j].Key })
					for _, c := range rc.Configs {
						fmt.Fprintf(out, "  %s=%s (%s)\n", c.Key, c.MaybeValue(), strings.ToLower(c.Source.String()))
					}
				}
			}
			return nil
		},
	}
}

func newTopicDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete TOPIC...",
		Short: "Delete topics and their data",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resps, err := adm.DeleteTopics(cmd.Context(), args...)
			if err != nil {
				return fmt.Errorf("delete topics: %w", err)
			}
			var failed []string
			for _, r := range resps.Sorted() {
				if r.Err != nil {
					failed = append(failed, r.Topic+": "+r.Err.Error())
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", r.Topic)
			}
			if len(failed) > 0 {
				return fmt.Errorf("%s", strings.Join(failed, "; "))
			}
			return nil
		},
	}
}

// isShardErrors reports whether err is kadm's partial failure: some partitions
// answered, others (say, those whose leader is down) did not.
func isShardErrors(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se)
}

// listedOffset is a partition's offset from a ListOffsets result, or "-" when
// that partition could not be asked (no leader, or an error of its own).
func listedOffset(offsets kadm.ListedOffsets, topic string, partition int32) string {
	o, ok := offsets.Lookup(topic, partition)
	if !ok || o.Err != nil {
		return "-"
	}
	return strconv.FormatInt(o.Offset, 10)
}
