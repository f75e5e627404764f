package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

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

// describedTopic is one topic of topic describe -o json.
type describedTopic struct {
	Topic      string               `json:"topic"`
	ID         node.TopicID         `json:"id"`
	Partitions []describedPartition `json:"partitions"`
	Configs    []describedConfig    `json:"configs"`
}

// describedPartition is a partition's placement and offsets; the offsets
// are null when its leader could not be asked.
type describedPartition struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`       // -1: none
	LeaderEpoch int32   `json:"leader_epoch"` // -1: unknown
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline"`
	Start       *int64  `json:"start"`
	End         *int64  `json:"end"`
}

type describedConfig struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
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

func newTopicDescribeCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "describe TOPIC...",
		Short:             "Show a topic's partitions (leader, leader epoch, replicas, ISR, offline replicas), offsets and configs",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(g),
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
			described, err := describeTopics(ctx, adm, args)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), described)
			}
			for _, d := range described {
				printTopic(cmd.OutOrStdout(), d)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func describeTopics(ctx context.Context, adm *kadm.Client, names []string) ([]describedTopic, error) {
	topics, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	// A partition whose leader is down fails only its own shard: the rest
	// of the table is what an operator needs most during an outage.
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil && !isShardErrors(err) {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil && !isShardErrors(err) {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil && !isShardErrors(err) {
		return nil, fmt.Errorf("describe configs: %w", err)
	}
	var out []describedTopic
	for _, name := range names {
		t, ok := topics[name]
		if !ok {
			return nil, fmt.Errorf("topic %s: no answer", name)
		}
		if t.Err != nil {
			return nil, fmt.Errorf("topic %s: %s", name, explain(t.Err))
		}
		d := describedTopic{Topic: name, ID: node.TopicID(t.ID), Partitions: []describedPartition{}, Configs: []describedConfig{}}
		for _, p := range t.Partitions.Sorted() {
			d.Partitions = append(d.Partitions, describedPartition{
				Partition: p.Partition, Leader: max(p.Leader, -1), LeaderEpoch: max(p.LeaderEpoch, -1),
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Offline: nonNil(p.OfflineReplicas),
				Start: listedOffsetPtr(starts, name, p.Partition), End: listedOffsetPtr(ends, name, p.Partition),
			})
		}
		if rc, err := configs.On(name, nil); err == nil && rc.Err == nil {
			sort.Slice(rc.Configs, func(i, j int) bool { return rc.Configs[i].Key < rc.Configs[j].Key })
			for _, c := range rc.Configs {
				d.Configs = append(d.Configs, describedConfig{Key: c.Key, Value: c.MaybeValue(), Source: strings.ToLower(c.Source.String())})
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func printTopic(out io.Writer, d describedTopic) {
	fmt.Fprintf(out, "topic %s  id %s  partitions %d\n", d.Topic, d.ID, len(d.Partitions))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tSTART\tEND")
	for _, p := range d.Partitions {
		leader := strconv.Itoa(int(p.Leader))
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, leader, epochOrDash(p.LeaderEpoch),
			formatBrokers(p.Replicas), formatBrokers(p.ISR), formatBrokers(p.Offline), offsetOrDash(p.Start), offsetOrDash(p.End))
	}
	w.Flush()
	if len(d.Configs) > 0 {
		fmt.Fprintln(out, "configs:")
		for _, c := range d.Configs {
			fmt.Fprintf(out, "  %s=%s (%s)\n", c.Key, c.Value, c.Source)
		}
	}
}

// formatBrokers is the one way tables show a list of broker ids: [1 2 3].
func formatBrokers(ids []int32) string { return fmt.Sprint(nonNil(ids)) }

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func listedOffsetPtr(offsets kadm.ListedOffsets, topic string, partition int32) *int64 {
	o, ok := offsets.Lookup(topic, partition)
	if !ok || o.Err != nil {
		return nil
	}
	return &o.Offset
}

func offsetOrDash(o *int64) string {
	if o == nil {
		return "-"
	}
	return strconv.FormatInt(*o, 10)
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
