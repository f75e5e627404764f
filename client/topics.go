package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/membership"
)

// isShardErrors reports whether err is kadm's partial failure: some partitions
// answered, others (say, those whose leader is down) did not.
func isShardErrors(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se)
}

// errSuffix is ": msg" for a node's error message, "" for none.
func errSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// ListedTopic is one topic of ListTopics.
type ListedTopic struct {
	Topic             string             `json:"topic"`
	ID                membership.TopicID `json:"id"`
	Partitions        int                `json:"partitions"`
	ReplicationFactor int                `json:"replication_factor"`
	Internal          bool               `json:"internal"`
	Error             string             `json:"error,omitempty"`
}

// ListedTopics is every topic, internal ones included, by name.
type ListedTopics []ListedTopic

// ListTopics lists every topic, internal ones included.
func (g Config) ListTopics(ctx context.Context) (ListedTopics, error) {
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	rows := ListedTopics{}
	for _, t := range topics.Sorted() {
		row := ListedTopic{Topic: t.Topic, ID: membership.TopicID(t.ID), Partitions: len(t.Partitions), ReplicationFactor: t.Partitions.NumReplicas(), Internal: t.IsInternal}
		if t.Err != nil {
			row.Error = explain(t.Err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// WriteTable prints the topics as a table.
func (rows ListedTopics) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITIONS\tREPLICAS\tID")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(w, "%s\terror: %s\t\t\n", r.Topic, r.Error)
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", r.Topic, r.Partitions, r.ReplicationFactor, r.ID)
	}
	return w.Flush()
}

// CreateTopicsOptions is what CreateTopics creates.
type CreateTopicsOptions struct {
	Names             []string
	Partitions        int32    // -1: the node's default
	ReplicationFactor int16    // -1: the default
	Configs           []string // key=value
}

// CreatedTopic is a topic CreateTopics created, or found already created
// as it was asked for (Existed).
type CreatedTopic struct {
	Topic      string
	Partitions int32
	ID         membership.TopicID
	// Existed: the topic was there already, with every partition count,
	// replication factor and config the create asked for. A create is
	// idempotent from the user's side: a retry of a create whose first
	// answer was lost (a timeout) finds the topic it made.
	Existed bool
}

func (c CreatedTopic) String() string {
	if c.Existed {
		return fmt.Sprintf("%s already exists as asked (%s, id %s)", c.Topic, plural(int(c.Partitions), "partition"), c.ID)
	}
	return fmt.Sprintf("%s (%s, id %s)", c.Topic, plural(int(c.Partitions), "partition"), c.ID)
}

// CreateTopics creates topics. A replication factor above the brokers alive
// is refused before asking. A topic that already exists with what was asked
// (matchingTopic) is returned with Existed set, not as an error. Topics that
// could not be created are named in the error; the others are returned.
func (g Config) CreateTopics(ctx context.Context, o CreateTopicsOptions) ([]CreatedTopic, error) {
	cfgs := make(map[string]*string, len(o.Configs))
	for _, c := range o.Configs {
		k, v, ok := strings.Cut(c, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--config %q: want key=value", c)
		}
		cfgs[k] = &v
	}
	if o.Partitions == 0 || o.Partitions < -1 {
		return nil, fmt.Errorf("--partitions %d: want at least 1, or -1 for the node's default", o.Partitions)
	}
	if rf := o.ReplicationFactor; rf == 0 || rf < -1 {
		return nil, fmt.Errorf("--replication-factor %d: want at least 1, or -1 for the default", rf)
	}
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := checkReplicationFactor(ctx, adm, o.ReplicationFactor); err != nil {
		return nil, err
	}
	resps, err := adm.CreateTopics(ctx, o.Partitions, o.ReplicationFactor, cfgs, o.Names...)
	if err != nil {
		return nil, fmt.Errorf("create topics: %w", err)
	}
	var created []CreatedTopic
	var failed []string
	for _, r := range resps.Sorted() {
		if errors.Is(r.Err, kerr.TopicAlreadyExists) {
			if c, mismatch, err := matchingTopic(ctx, adm, r.Topic, o, cfgs); err == nil && mismatch == "" {
				created = append(created, c)
				continue
			} else if mismatch != "" {
				r.ErrMessage = mismatch
			}
		}
		if r.Err != nil {
			failed = append(failed, r.Topic+": "+r.Err.Error()+errSuffix(r.ErrMessage))
			continue
		}
		created = append(created, CreatedTopic{Topic: r.Topic, Partitions: r.NumPartitions, ID: membership.TopicID(r.ID)})
	}
	if len(failed) > 0 {
		return created, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return created, nil
}

// matchingTopic reads an existing topic and says how it differs from
// what o asked for ("" when it does not): the partition count (-1: the
// broker's num.partitions), the replication factor where o names one (-1
// accepts the topic's: the default the cluster picks depends on the brokers
// it had), and every config o sets, by value. An error is a failure to read
// the topic.
func matchingTopic(ctx context.Context, adm *kadm.Client, topic string, o CreateTopicsOptions, cfgs map[string]*string) (CreatedTopic, string, error) {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return CreatedTopic{}, "", err
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		return CreatedTopic{}, "", fmt.Errorf("describe %s: %v", topic, d.Err)
	}
	c := CreatedTopic{Topic: topic, Partitions: int32(len(d.Partitions)), ID: membership.TopicID(d.ID), Existed: true}
	var diffs []string
	want := o.Partitions
	if want < 0 {
		if want, err = defaultPartitions(ctx, adm); err != nil {
			return CreatedTopic{}, "", err
		}
	}
	if c.Partitions != want {
		diffs = append(diffs, fmt.Sprintf("it has %s, not %d", plural(int(c.Partitions), "partition"), want))
	}
	if rf := o.ReplicationFactor; rf > 0 {
		if got := d.Partitions.NumReplicas(); got != int(rf) {
			diffs = append(diffs, fmt.Sprintf("it has %d replicas per partition, not %d", got, rf))
		}
	}
	if len(cfgs) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return CreatedTopic{}, "", err
		}
		rc, err := rcs.On(topic, nil)
		if err != nil || rc.Err != nil {
			return CreatedTopic{}, "", fmt.Errorf("describe the configs of %s: %v%v", topic, err, rc.Err)
		}
		have := make(map[string]string, len(rc.Configs))
		for i := range rc.Configs {
			have[rc.Configs[i].Key] = rc.Configs[i].MaybeValue()
		}
		for _, k := range sortedKeys(cfgs) {
			if want := *cfgs[k]; have[k] != want {
				diffs = append(diffs, fmt.Sprintf("its %s is %q, not %q", k, have[k], want))
			}
		}
	}
	if len(diffs) > 0 {
		return c, "it exists with another spec: " + strings.Join(diffs, "; "), nil
	}
	return c, "", nil
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

// DeleteTopics deletes topics and their data. Topics that could not be
// deleted are named in the error; the others are returned.
func (g Config) DeleteTopics(ctx context.Context, names []string) (deleted []string, err error) {
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	resps, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("delete topics: %w", err)
	}
	var failed []string
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			failed = append(failed, r.Topic+": "+r.Err.Error())
			continue
		}
		deleted = append(deleted, r.Topic)
	}
	if len(failed) > 0 {
		return deleted, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return deleted, nil
}

// defaultPartitions is a broker's num.partitions: what a create of -1
// partitions gets.
func defaultPartitions(ctx context.Context, adm *kadm.Client) (int32, error) {
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) == 0 {
		return 0, fmt.Errorf("list brokers: %v", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, brokers[0].NodeID)
	if err != nil {
		return 0, fmt.Errorf("describe broker %d: %w", brokers[0].NodeID, err)
	}
	for _, rc := range rcs {
		for i := range rc.Configs {
			if rc.Configs[i].Key == "num.partitions" {
				n, err := strconv.ParseInt(rc.Configs[i].MaybeValue(), 10, 32)
				return int32(n), err
			}
		}
	}
	return 0, fmt.Errorf("broker %d names no num.partitions", brokers[0].NodeID)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
