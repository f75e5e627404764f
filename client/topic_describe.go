package client

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	// Tiered storage (remote.storage.enable=true) only, each null when its
	// leader could not be asked: where the remote log (in the store)
	// starts and the local one (on the replicas' disks), and their sizes
	// on the leader. RemoteStart is null while nothing is uploaded.
	Tiered      bool   `json:"tiered,omitempty"`
	RemoteStart *int64 `json:"remote_start,omitempty"`
	LocalStart  *int64 `json:"local_start,omitempty"`
	RemoteBytes *int64 `json:"remote_bytes,omitempty"`
	LocalBytes  *int64 `json:"local_bytes,omitempty"`
	// NotUploaded is the upload backlog in records: those at or past the
	// remote end, on the replicas' disks only (the active segment's,
	// which is uploaded once closed, included).
	NotUploaded *int64 `json:"not_uploaded,omitempty"`
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
	if err := describeTiered(ctx, adm, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListOffsets' special timestamps for tiered storage (KIP-405, KIP-1005).
const (
	listEarliestLocal = -4 // the local log start
	listLatestTiered  = -5 // the last offset in the store (-1: none)
)

// describeTiered fills the tiered storage columns of the topics with
// remote.storage.enable=true: remote and local starts by ListOffsets (the
// earliest offset is the remote start once anything is uploaded), the
// records not uploaded past the last tiered offset (latest-tiered), local
// and remote bytes from the leader's DescribeLogDirs (Spool lists the
// store as a log dir named s3://bucket/prefix).
func describeTiered(ctx context.Context, adm *kadm.Client, ds DescribedTopics) error {
	var names []string
	for _, d := range ds {
		for _, c := range d.Configs {
			if c.Key == "remote.storage.enable" && c.Value == "true" {
				names = append(names, d.Topic)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	local, err := adm.ListOffsetsAfterMilli(ctx, listEarliestLocal, names...)
	if err != nil && !isShardErrors(err) {
		return fmt.Errorf("list local start offsets: %w", err)
	}
	tiered, err := adm.ListOffsetsAfterMilli(ctx, listLatestTiered, names...)
	if err != nil && !isShardErrors(err) {
		return fmt.Errorf("list tiered offsets: %w", err)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{})
	if err != nil && !isShardErrors(err) {
		return fmt.Errorf("describe log dirs: %w", err)
	}
	for i := range ds {
		d := &ds[i]
		if !slices.Contains(names, d.Topic) {
			continue
		}
		for j := range d.Partitions {
			p := &d.Partitions[j]
			p.Tiered = true
			p.LocalStart = listedOffsetPtr(local, d.Topic, p.Partition)
			if last := listedOffsetPtr(tiered, d.Topic, p.Partition); last != nil && p.End != nil {
				if *last >= 0 {
					p.RemoteStart = p.Start
				}
				n := max(*p.End-(*last+1), 0)
				if *last < 0 && p.Start != nil {
					n = *p.End - *p.Start // nothing uploaded: every record
				}
				p.NotUploaded = &n
			}
			for dir, ld := range dirs[p.Leader] {
				lp, ok := ld.Topics[d.Topic][p.Partition]
				if !ok || ld.Err != nil {
					continue
				}
				size := lp.Size
				if strings.HasPrefix(dir, remoteLogDirPrefix) {
					p.RemoteBytes = &size
				} else {
					p.LocalBytes = &size
				}
			}
		}
	}
	return nil
}

// remoteLogDirPrefix starts the name of the store's DescribeLogDirs entry
// (node/tier's RemoteLogDirPrefix).
const remoteLogDirPrefix = "s3://"

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
	tiered := len(d.Partitions) > 0 && d.Partitions[0].Tiered
	head := "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tSTART\tEND"
	if tiered {
		head += "\tREMOTE START\tLOCAL START\tREMOTE BYTES\tLOCAL BYTES\tNOT UPLOADED"
	}
	fmt.Fprintln(w, head)
	for _, p := range d.Partitions {
		leader := strconv.Itoa(int(p.Leader))
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", p.Partition, leader, epochOrDash(p.LeaderEpoch),
			formatBrokers(p.Replicas), formatBrokers(p.ISR), formatBrokers(p.Offline), offsetOrDash(p.Start), offsetOrDash(p.End))
		if tiered {
			fmt.Fprintf(w, "\t%s\t%s\t%s\t%s\t%s", offsetOrDash(p.RemoteStart), offsetOrDash(p.LocalStart), offsetOrDash(p.RemoteBytes), offsetOrDash(p.LocalBytes), offsetOrDash(p.NotUploaded))
		}
		fmt.Fprintln(w)
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
