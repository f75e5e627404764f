package client

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/membership"
)

// DescribedTopic is a topic, its partitions and its configs.
type DescribedTopic struct {
	Topic      string               `json:"topic"`
	ID         membership.TopicID   `json:"id"`
	Partitions []DescribedPartition `json:"partitions"`
	Configs    []DescribedConfig    `json:"configs"`
	// Note is what an operator should know of the topic: that its
	// replication factor is even (EvenFactorNote), or nothing.
	Note string `json:"note,omitempty"`
}

// EvenFactorNote is the note on a topic whose partitions have an even
// number of replicas (created before the cluster refused even factors),
// or "": each partition is a Raft group that commits with a majority, so
// a group of 2 stops when either replica fails.
func EvenFactorNote(partitions []DescribedPartition) string {
	for _, p := range partitions {
		if rf := len(p.Replicas); rf > 0 && rf%2 == 0 {
			return fmt.Sprintf("replication factor %d is even: each partition's Raft group needs %d of its %d replicas, so it survives no more failures than a factor of %d would (2 survive none); the cluster still serves it, but refuses to create even factors: create an odd-factor topic and move the data there", rf, rf/2+1, rf, rf-1)
		}
	}
	return ""
}

// DescribedPartition is a partition's placement and offsets; the offsets
// are null when its leader could not be asked.
type DescribedPartition struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`       // -1: none
	LeaderEpoch int32   `json:"leader_epoch"` // -1: unknown
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline"`
	Start       *int64  `json:"start"`
	End         *int64  `json:"end"`
}

type DescribedConfig struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// DescribeTopics describes each named topic: its id, partitions with
// their leader, replicas and offsets, and its configs. A partition whose
// leader is down has no offsets; the rest is still described.
func (g Config) DescribeTopics(ctx context.Context, names []string) (DescribedTopics, error) {
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return describeTopics(ctx, adm, names)
}

func describeTopics(ctx context.Context, adm *kadm.Client, names []string) (DescribedTopics, error) {
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
	var out DescribedTopics
	for _, name := range names {
		t, ok := topics[name]
		if !ok {
			return nil, fmt.Errorf("topic %s: no answer", name)
		}
		if t.Err != nil {
			return nil, fmt.Errorf("topic %s: %s", name, explain(t.Err))
		}
		d := DescribedTopic{Topic: name, ID: membership.TopicID(t.ID), Partitions: []DescribedPartition{}, Configs: []DescribedConfig{}}
		for _, p := range t.Partitions.Sorted() {
			d.Partitions = append(d.Partitions, DescribedPartition{
				Partition: p.Partition, Leader: max(p.Leader, -1), LeaderEpoch: max(p.LeaderEpoch, -1),
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Offline: nonNil(p.OfflineReplicas),
				Start: listedOffsetPtr(starts, name, p.Partition), End: listedOffsetPtr(ends, name, p.Partition),
			})
		}
		d.Note = EvenFactorNote(d.Partitions)
		if rc, err := configs.On(name, nil); err == nil && rc.Err == nil {
			sort.Slice(rc.Configs, func(i, j int) bool { return rc.Configs[i].Key < rc.Configs[j].Key })
			for _, c := range rc.Configs {
				d.Configs = append(d.Configs, DescribedConfig{Key: c.Key, Value: c.MaybeValue(), Source: strings.ToLower(c.Source.String())})
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// DescribedTopics is the topics DescribeTopics describes.
type DescribedTopics []DescribedTopic

// WriteTable prints each topic.
func (ds DescribedTopics) WriteTable(out io.Writer) error {
	for _, d := range ds {
		d.WriteTable(out)
	}
	return nil
}

// WriteTable prints the topic: a summary line, its partitions, its configs.
func (d DescribedTopic) WriteTable(out io.Writer) {
	fmt.Fprintf(out, "topic %s  id %s  partitions %d\n", d.Topic, d.ID, len(d.Partitions))
	if d.Note != "" {
		fmt.Fprintf(out, "note: %s\n", d.Note)
	}
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
