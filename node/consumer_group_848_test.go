package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/testlog"
)

func kip848Config(t testing.TB, dir string) Config {
	cfg := groupTestConfig(t, dir)
	cfg.Groups.ConsumerSessionTimeout = 2 * time.Second
	cfg.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
	return cfg
}

// member848 is a franz-go consumer opted in to KIP-848 that records every
// (partition, offset) it reads.
type member848 struct {
	cl *kgo.Client

	mu   sync.Mutex
	read map[rec848]int
}

type rec848 struct {
	topic     string
	partition int32
	offset    int64
}

func startMember848(t *testing.T, n *Node, group, topic string, opts ...kgo.Opt) *member848 {
	t.Helper()
	m := &member848{read: map[rec848]int{}}
	m.cl = newClient(t, n, append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(testlog.For(t), kgo.LogLevelInfo, func() string { return "client " + group + ": " })),
	}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			m.mu.Lock()
			for _, r := range fs.Records() {
				m.read[rec848{r.Topic, r.Partition, r.Offset}]++
			}
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// history merges what members read: how many records, how many distinct.
func history(ms ...*member848) (total, distinct int, dup rec848) {
	seen := map[rec848]int{}
	for _, m := range ms {
		m.mu.Lock()
		for k, c := range m.read {
			seen[k] += c
			total += c
		}
		m.mu.Unlock()
	}
	for k, c := range seen {
		if c > 1 {
			dup = k
		}
	}
	return total, len(seen), dup
}

func waitHistory(t *testing.T, want int, ms ...*member848) {
	t.Helper()
	retry.Run(t, 30*time.Second, func() error {
		if total, distinct, _ := history(ms...); distinct < want {
			return fmt.Errorf("read %d distinct records (%d in all) of %d", distinct, total, want)
		}
		return nil
	})
	if total, distinct, dup := history(ms...); total != distinct || distinct != want {
		t.Fatalf("read %d records, %d distinct, want %d exactly once; %+v read twice", total, distinct, want, dup)
	}
}

// describe848 is the group as kadm's ConsumerGroupDescribe shows it.
func describe848(t *testing.T, adm *kadm.Client, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	ds, err := adm.DescribeConsumerGroups(testCtx(t), group)
	if err != nil {
		t.Fatalf("describe consumer group: %v", err)
	}
	return ds[group]
}

// waitAssigned polls until the group is Stable with exactly the members
// given owning the partition counts given, every partition owned once.
func waitAssigned(t *testing.T, adm *kadm.Client, group string, partitions int, members int) kadm.DescribedConsumerGroup {
	t.Helper()
	var d kadm.DescribedConsumerGroup
	retry.Run(t, 30*time.Second, func() error {
		d = describe848(t, adm, group)
		if d.Err != nil {
			return d.Err
		}
		owned := 0
		for _, m := range d.Members {
			for _, ps := range m.Assignment {
				owned += len(ps)
			}
		}
		if d.State != "Stable" || len(d.Members) != members || owned != partitions {
			return fmt.Errorf("group %s: %d members own %d partitions, want %d own %d", d.State, len(d.Members), owned, members, partitions)
		}
		return nil
	})
	return d
}

// TestKIP848Consumers: franz-go consumers opted in to the consumer group
// protocol share a topic with every record read exactly once; a member
// that stops heartbeating loses its partitions after the session timeout,
// one that leaves at once; commits survive a node restart and the group's
// new members resume from them.
func TestKIP848Consumers(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, kip848Config(t, dir))
	adm := newAdmin(t, n)
	const topic, group, parts = "kip848", "g848", 6
	createTopic(t, adm, topic, parts, nil)
	produceTo(t, n, topic, parts, 50, 0)

	// A member that joins, takes every partition and then dies without
	// a word: its partitions are stuck with it until its session ends.
	raw := newClient(t, n)
	ctx := testCtx(t)
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.RebalanceTimeoutMillis = group, "ghost", 60000
	join.SubscribedTopicNames = []string{topic}
	// Taken before the join: its session started after this.
	ghostDied := time.Now()
	jr, err := join.RequestWith(ctx, raw)
	if err != nil || jr.ErrorCode != 0 || jr.Assignment == nil || len(jr.Assignment.Topics) != 1 || len(jr.Assignment.Topics[0].Partitions) != parts {
		t.Fatalf("ghost join: %v %+v", err, jr)
	}

	a := startMember848(t, n, group, topic)
	b := startMember848(t, n, group, topic)
	d := waitAssigned(t, adm, group, parts, 2)
	if time.Since(ghostDied) < 2*time.Second {
		t.Fatalf("the ghost's partitions moved %v after its last heartbeat, before its session timeout", time.Since(ghostDied))
	}
	for _, m := range d.Members {
		if m.MemberType != 1 || m.MemberID == "ghost" || len(m.Assignment[topic]) != parts/2 {
			t.Fatalf("member %+v of %+v", m, d)
		}
	}
	if d.AssignorName != "uniform" || d.Epoch < 3 || d.AssignmentEpoch != d.Epoch {
		t.Fatalf("described %+v", d)
	}
	waitHistory(t, parts*50, a, b)

	// The groups APIs see a "consumer" group.
	listed, err := adm.ListGroupsByType(testCtx(t), []string{"consumer"})
	if err != nil || len(listed) != 1 || listed[group].GroupType != "consumer" || listed[group].State != "Stable" {
		t.Fatalf("ListGroups of type consumer: %v %+v", err, listed)
	}
	// A classic member is refused.
	cj := kmsg.NewPtrJoinGroupRequest()
	cj.Group, cj.ProtocolType, cj.SessionTimeoutMillis, cj.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	cj.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	if r, err := cj.RequestWith(testCtx(t), raw); err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of a consumer group: %v %+v", err, r)
	}
	// A commit at a stale epoch is refused, as Kafka does.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.MemberID, oc.Generation = 9, group, d.Members[0].MemberID, d.Members[0].MemberEpoch-1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = topic
	ot.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, ot)
	if r, err := oc.RequestWith(testCtx(t), raw); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a stale epoch: %v %+v", err, r)
	}
	oc.MemberID = "nobody"
	if r, err := oc.RequestWith(testCtx(t), raw); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of an unknown member: %v %+v", err, r)
	}

	// b leaves: a takes its partitions at once, from b's commits.
	if err := b.cl.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatalf("commit b: %v", err)
	}
	b.cl.Close()
	waitAssigned(t, adm, group, parts, 1)
	produceTo(t, n, topic, parts, 10, 50)
	waitHistory(t, parts*60, a, b)
	if err := a.cl.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatalf("commit a: %v", err)
	}

	// A restart keeps the commits: a, still running, rejoins the
	// restarted node (on the same port) and a new member joins it; they
	// resume from the commits.
	addr := n.KafkaAddr()
	stopNode(t, n)
	cfg := kip848Config(t, dir)
	cfg.KafkaAddr = addr
	n = startNode(t, cfg)
	adm = newAdmin(t, n)
	fetched, err := adm.FetchOffsets(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < parts; p++ {
		if o, ok := fetched.Lookup(topic, p); !ok || o.At != 60 {
			t.Fatalf("after restart partition %d committed %+v, want 60", p, o)
		}
	}
	produceTo(t, n, topic, parts, 5, 60)
	c := startMember848(t, n, group, topic)
	waitHistory(t, parts*65, a, b, c)
	c.mu.Lock()
	for k := range c.read {
		if k.offset < 60 {
			t.Errorf("after restart %+v read again, below the commit", k)
		}
	}
	c.mu.Unlock()
	waitAssigned(t, adm, group, parts, 2)
}

// TestKIP848RangeGrowthAndSubscription: franz-go members asking for the
// range assignor get it; a topic that gains partitions and a member that
// subscribes to one more topic rebalance the group, every record still
// read once.
func TestKIP848RangeGrowthAndSubscription(t *testing.T) {
	n := startNode(t, kip848Config(t, t.TempDir()))
	adm := newAdmin(t, n)
	const group = "ranged"
	createTopic(t, adm, "first", 4, nil)
	createTopic(t, adm, "second", 2, nil)
	produceTo(t, n, "first", 4, 20, 0)
	produceTo(t, n, "second", 2, 20, 0)

	rangeOpt := kgo.Balancers(kgo.RangeBalancer())
	a := startMember848(t, n, group, "first", rangeOpt)
	b := startMember848(t, n, group, "first", rangeOpt)
	d := waitAssigned(t, adm, group, 4, 2)
	if d.AssignorName != "range" {
		t.Fatalf("assignor %q, want range", d.AssignorName)
	}
	for _, m := range d.Members {
		ps := slices.Sorted(maps.Keys(m.Assignment["first"]))
		if len(ps) != 2 || ps[1] != ps[0]+1 {
			t.Fatalf("member %s owns %v of first, want a range of 2", m.MemberID, ps)
		}
	}
	waitHistory(t, 4*20, a, b)

	if _, err := adm.UpdatePartitions(testCtx(t), 6, "first"); err != nil {
		t.Fatalf("grow first: %v", err)
	}
	waitAssigned(t, adm, group, 6, 2)
	produceTo(t, n, "first", 6, 5, 20)
	// Partitions 4 and 5 hold 5 records each, 0-3 hold 25.
	waitHistory(t, 4*25+2*5, a, b)

	a.cl.AddConsumeTopics("second")
	d = waitAssigned(t, adm, group, 8, 2)
	for _, m := range d.Members {
		if slices.Contains(m.SubscribedTopics, "second") != (len(m.Assignment["second"]) == 2) {
			t.Fatalf("member %s subscribes to %v and owns %v", m.MemberID, m.SubscribedTopics, m.Assignment)
		}
	}
	waitHistory(t, 4*25+2*5+2*20, a, b)
}

// cutDialer dials normally until cut, then closes every connection it made
// and refuses new ones: the member behind it is partitioned from the node
// without leaving its group.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("partitioned")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) set(cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = cut
	if cut {
		for _, c := range d.conns {
			c.Close()
		}
		d.conns = nil
	}
}

// TestKIP848PartitionedMember: a franz-go member cut off from the node
// (no leave, no heartbeat) loses its partitions after the session timeout;
// the other member takes them from the cut member's commits.
func TestKIP848PartitionedMember(t *testing.T) {
	n := startNode(t, kip848Config(t, t.TempDir()))
	adm := newAdmin(t, n)
	const topic, group, parts = "cut", "cut848", 4
	createTopic(t, adm, topic, parts, nil)
	produceTo(t, n, topic, parts, 10, 0)

	a := startMember848(t, n, group, topic)
	d := &cutDialer{}
	b := startMember848(t, n, group, topic, kgo.Dialer(d.dial))
	t.Cleanup(func() { d.set(false) }) // so that b's Close can leave
	waitAssigned(t, adm, group, parts, 2)
	waitHistory(t, parts*10, a, b)
	if err := b.cl.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatalf("commit b: %v", err)
	}

	d.set(true)
	g := waitAssigned(t, adm, group, parts, 1)
	aID, _ := a.cl.GroupMetadata()
	if g.Members[0].MemberID != aID {
		t.Fatalf("the group kept %s, not a (%s)", g.Members[0].MemberID, aID)
	}
	produceTo(t, n, topic, parts, 10, 10)
	waitHistory(t, parts*20, a, b)
}

// TestKIP848RegexSubscription: franz-go members subscribed by regular
// expression (SubscribedTopicRegex) share the matching topics, internal and
// unmatched ones left out, with every record read exactly once; a matching
// topic created later joins the assignment; the regex survives a restart.
func TestKIP848RegexSubscription(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, kip848Config(t, dir))
	adm := newAdmin(t, n)
	const group = "by-regex"
	createTopic(t, adm, "metrics-a", 2, nil)
	createTopic(t, adm, "metrics-b", 2, nil)
	createTopic(t, adm, "other", 2, nil)
	produceTo(t, n, "metrics-a", 2, 10, 0)
	produceTo(t, n, "metrics-b", 2, 10, 0)
	produceTo(t, n, "other", 2, 10, 0)

	a := startMember848(t, n, group, "metrics-.*", kgo.ConsumeRegex())
	b := startMember848(t, n, group, "metrics-.*", kgo.ConsumeRegex())
	d := waitAssigned(t, adm, group, 4, 2)
	for _, m := range d.Members {
		for topic := range m.Assignment {
			if !strings.HasPrefix(topic, "metrics-") {
				t.Fatalf("member %s was assigned %s, which its regex does not match", m.MemberID, topic)
			}
		}
	}
	waitHistory(t, 4*10, a, b)

	createTopic(t, adm, "metrics-c", 2, nil)
	produceTo(t, n, "metrics-c", 2, 10, 0)
	waitAssigned(t, adm, group, 6, 2)
	waitHistory(t, 6*10, a, b)

	// An invalid expression is refused, as Kafka does.
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID = 1, "bad-regex", "m-1"
	req.RebalanceTimeoutMillis = 1000
	req.SubscribedTopicRegex = kmsg.StringPtr("metrics-(")
	resp, err := req.RequestWith(testCtx(t), newClient(t, n))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("heartbeat with an invalid regex: error %d, want INVALID_REGULAR_EXPRESSION", resp.ErrorCode)
	}
}
