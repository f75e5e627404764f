package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
)

// ackedHistory is an acks=all franz-go producer run beside a test: what it
// was acknowledged, key by key, with the offset.
type ackedHistory struct {
	mu    sync.Mutex
	keys  []string
	offs  map[string]int64
	errs  []error
	stop  chan struct{}
	done  chan struct{}
	count int
}

// brokerOutside is a broker of nodes that replicas does not name (the
// last such): where a test moves a replica to.
func brokerOutside(nodes []*Node, replicas []int32) int32 {
	var out int32
	for _, n := range nodes {
		if !slices.Contains(replicas, n.NodeID()) {
			out = n.NodeID()
		}
	}
	return out
}

func startAckedHistory(t *testing.T, nodes []*Node, topic string) *ackedHistory {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(60*time.Second), kgo.ProduceRequestTimeout(5*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	h := &ackedHistory{offs: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer cl.Close()
		for i := 0; ; i++ {
			select {
			case <-h.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			r := &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(recordValue(i))}
			err := cl.ProduceSync(ctx, r).FirstErr()
			cancel()
			h.mu.Lock()
			if err != nil {
				h.errs = append(h.errs, fmt.Errorf("record %d: %w", i, err))
			} else {
				h.keys = append(h.keys, string(r.Key))
				h.offs[string(r.Key)] = r.Offset
			}
			h.count = len(h.keys)
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *ackedHistory) waitMore(t *testing.T, n int) {
	t.Helper()
	h.mu.Lock()
	want := h.count + n
	h.mu.Unlock()
	retry.Run(t, 60*time.Second, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.errs) > 0 {
			t.Fatalf("producer: %v", h.errs)
		}
		return retry.Check(h.count >= want, "%d acknowledged, want %d", h.count, want)
	})
}

func (h *ackedHistory) finish(t *testing.T) ([]string, map[string]int64) {
	t.Helper()
	close(h.stop)
	<-h.done
	if len(h.errs) > 0 {
		t.Fatalf("producer saw errors: %v", h.errs)
	}
	return h.keys, h.offs
}

// checkReadBack reads topic's partition 0 from the start through nodes and
// checks every acknowledged record is there, at the offset acknowledged,
// once, in the order acknowledged.
func checkReadBack(t *testing.T, nodes []*Node, topic string, keys []string, offs map[string]int64) {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx := testCtx(t)
	seen := map[string]int64{}
	last := int64(-1)
	for len(seen) < len(keys) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records: %v", len(seen), len(keys), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			if r.Offset <= last {
				t.Errorf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			if want, ok := offs[k]; ok && want != r.Offset {
				t.Errorf("record %s at offset %d, acknowledged at %d", k, r.Offset, want)
			}
			if _, ok := offs[k]; ok {
				if _, dup := seen[k]; dup {
					t.Errorf("record %s read twice", k)
				}
				seen[k] = r.Offset
			}
		})
	}
	for i := 1; i < len(keys); i++ {
		if seen[keys[i]] <= seen[keys[i-1]] {
			t.Fatalf("record %s before %s, acknowledged after it", keys[i], keys[i-1])
		}
	}
}

// A partition of replication factor 3 moves from its replicas to a set
// with a fourth node in place of the first (the preferred leader, so
// leadership moves too), by kadm's AlterPartitionAssignments, under a
// steady acks=all producer: ListPartitionReassignments shows the move,
// every node's catalog and Metadata end with the target, the new replica
// holds the log, the old one is closed and quarantined, and every
// acknowledged record is read back at its offset, in order.
func TestReassignmentMovesAPartitionUnderLoad(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "moving"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	cur := spec.Replicas[0]
	add := brokerOutside(nodes, cur)
	target := append(slices.Clone(cur[1:]), add)
	byID := map[int32]*Node{}
	for _, n := range nodes {
		byID[n.NodeID()] = n
	}
	h := startAckedHistory(t, nodes, topic)
	h.waitMore(t, 50)

	adm := newAdmin(t, nodes[0])
	ctx := testCtx(t)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{cur[0], cur[1]})
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || !errors.Is(rs.Error(), kerr.InvalidReplicationFactor) {
		t.Fatalf("a move changing the replication factor: %v %v", err, rs.Error())
	}
	req = nil
	req.Assign(topic, 0, []int32{cur[0], cur[1], 99})
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || !errors.Is(rs.Error(), kerr.InvalidReplicaAssignment) {
		t.Fatalf("a move to an unknown broker: %v %v", err, rs.Error())
	}
	req = nil
	req.CancelAssign(topic, 0)
	if rs, err := adm.AlterPartitionAssignments(ctx, req); err != nil || !errors.Is(rs.Error(), kerr.NoReassignmentInProgress) {
		t.Fatalf("cancelling no move: %v %v", err, rs.Error())
	}
	req = nil
	req.Assign(topic, 0, target)
	start := time.Now()
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var listed bool
	ls.Each(func(r kadm.ListPartitionReassignmentsResponse) {
		listed = true
		if !slices.Equal(r.AddingReplicas, []int32{add}) || !slices.Equal(r.RemovingReplicas, []int32{cur[0]}) {
			t.Errorf("listed adding %v removing %v, want [%d] [%d]", r.AddingReplicas, r.RemovingReplicas, add, cur[0])
		}
	})
	if !listed {
		t.Error("the move is not listed")
	}

	retry.Run(t, 60*time.Second, func() error {
		for _, n := range nodes {
			s, _ := n.catalog.Topic(topic)
			if !slices.Equal(s.Replicas[0], target) || len(s.Moves) != 0 {
				return fmt.Errorf("node %d: replicas %v moves %v", n.NodeID(), s.Replicas[0], s.Moves)
			}
		}
		if byID[cur[0]].parts.Get(topic, 0) != nil {
			return fmt.Errorf("node %d still holds the partition", cur[0])
		}
		return nil
	})
	took := time.Since(start)
	h.waitMore(t, 50)
	keys, offs := h.finish(t)

	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(target, lead.NodeID()) {
		t.Fatalf("leader %d is not in the target %v", lead.NodeID(), target)
	}
	retry.Run(t, 20*time.Second, func() error {
		hw := lead.parts.Get(topic, 0).Replica.HighWatermark()
		got := byID[add].parts.Get(topic, 0).Replica.HighWatermark()
		return retry.Check(got == hw, "new replica %d at %d, leader at %d", add, got, hw)
	})
	m := metadataOf(t, nodes[0], topic)
	if got := m.Topics[0].Partitions[0].Replicas; !slices.Equal(got, target) {
		t.Errorf("metadata replicas %v, want %v", got, target)
	}
	if ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}}); err != nil || len(ls) != 0 {
		t.Errorf("moves listed after the move: %v %v", ls, err)
	}
	checkReadBack(t, []*Node{byID[target[0]], byID[target[1]], byID[target[2]]}, topic, keys, offs)

	// The preferred replica (the target's first) leads, or is made to.
	er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := er[topic][0]; r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Errorf("elect preferred: %v (%s)", r.Err, r.ErrMessage)
	}
	retry.Run(t, 20*time.Second, func() error {
		l, err := partitionLeader(nodes, topic, 0)
		if err != nil {
			return err
		}
		return retry.Check(l.NodeID() == target[0], "leader %d, preferred %d", l.NodeID(), target[0])
	})
	er, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := er[topic][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Errorf("unclean election with a leader: %v", r.Err)
	}
	t.Logf("moved %v -> %v in %v; %d records acknowledged", cur, target, took.Round(time.Millisecond), len(keys))
}

// Two replicas move at once on five nodes (the promotion and removal
// form a joint configuration, left after), then a move is cancelled as
// soon as its new replica is in the group: the group goes back to the replicas it
// started from (the learner removed, or the move undone) and the new
// replica is closed; every acknowledged record is read back in order.
func TestReassignmentJointMoveAndCancel(t *testing.T) {
	nodes := startCluster(t, 5)
	const topic = "joint"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	cur := spec.Replicas[0]
	var spare []int32
	for _, n := range nodes {
		if !slices.Contains(cur, n.NodeID()) {
			spare = append(spare, n.NodeID())
		}
	}
	byID := map[int32]*Node{}
	for _, n := range nodes {
		byID[n.NodeID()] = n
	}
	h := startAckedHistory(t, nodes, topic)
	h.waitMore(t, 30)
	adm := newAdmin(t, nodes[1])
	ctx := testCtx(t)
	move := func(target []int32) {
		t.Helper()
		var req kadm.AlterPartitionAssignmentsReq
		if target == nil {
			req.CancelAssign(topic, 0)
		} else {
			req.Assign(topic, 0, target)
		}
		rs, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			t.Fatalf("reassign to %v: %v", target, err)
		}
	}
	settled := func(want []int32, gone ...int32) {
		t.Helper()
		retry.Run(t, 60*time.Second, func() error {
			for _, n := range nodes {
				s, _ := n.catalog.Topic(topic)
				if !slices.Equal(s.Replicas[0], want) || len(s.Moves) != 0 {
					return fmt.Errorf("node %d: replicas %v moves %v", n.NodeID(), s.Replicas[0], s.Moves)
				}
			}
			for _, id := range gone {
				if byID[id].parts.Get(topic, 0) != nil {
					return fmt.Errorf("node %d still holds the partition", id)
				}
			}
			l, err := partitionLeader(nodes, topic, 0)
			if err != nil {
				return err
			}
			conf, _ := l.parts.Get(topic, 0).Replica.Conf()
			if slices.Compare(conf.Voters, sorted(want)) != 0 || conf.Joint() || len(conf.Learners) > 0 {
				return fmt.Errorf("leader %d: configuration %+v", l.NodeID(), conf)
			}
			return nil
		})
	}

	target := []int32{spare[0], spare[1], cur[2]}
	move(target)
	settled(target, cur[0], cur[1])
	h.waitMore(t, 30)

	// Cancelled once the new replica is in the group.
	back := target
	next := []int32{target[0], target[1], cur[0]}
	move(next)
	retry.Run(t, 30*time.Second, func() error {
		l, err := partitionLeader(nodes, topic, 0)
		if err != nil {
			return err
		}
		conf, _ := l.parts.Get(topic, 0).Replica.Conf()
		return retry.Check(slices.Contains(conf.Learners, cur[0]) || slices.Contains(conf.Voters, cur[0]), "node %d is not in the group yet: %+v", cur[0], conf)
	})
	move(nil)
	settled(back, cur[0])
	h.waitMore(t, 30)
	keys, offs := h.finish(t)
	checkReadBack(t, []*Node{byID[back[0]], byID[back[1]], byID[back[2]]}, topic, keys, offs)
}

func sorted(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// The catalog can lose a move (to a concurrent delete, to a newer change
// of its partition, to a whole-entry write by a node of the previous
// version). Here the loss is made by hand, twice. A move to a node that is down stops at its learner;
// the move vanishes from the catalog: the leader removes the learner.
// Then a finished move is reverted in the catalog (replica list back to
// the old one): the new replica, a voter, is not closed on the catalog's
// word, and the leader records the group's voters back as the replica
// list, under an acks=all producer that loses nothing.
func TestReassignmentHealsALostMove(t *testing.T) {
	nodes := startCluster(t, 4)
	const topic = "healing"
	spec := startReplicatedTopic(t, nodes, topic, 1, 3)
	cur := spec.Replicas[0]
	byID := map[int32]*Node{}
	var add int32
	for _, n := range nodes {
		byID[n.NodeID()] = n
		if !slices.Contains(cur, n.NodeID()) {
			add = n.NodeID()
		}
	}
	h := startAckedHistory(t, nodes, topic)
	h.waitMore(t, 30)
	ctx := testCtx(t)
	target := append(slices.Clone(cur[1:]), add)
	leaderConf := func() (replica.Conf, error) {
		l, err := partitionLeader(nodes, topic, 0)
		if err != nil {
			return replica.Conf{}, err
		}
		c, _ := l.parts.Get(topic, 0).Replica.Conf()
		return c, nil
	}
	lose := func(change func(*membership.TopicEntry) error) {
		t.Helper()
		if _, err := byID[cur[1]].catalog.Alter(topic, change); err != nil {
			t.Fatal(err)
		}
	}

	// 1. A learner the catalog no longer names.
	stopNode(t, byID[add])
	reassign := func() {
		t.Helper()
		retry.Run(t, 20*time.Second, func() error {
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, 0, target)
			rs, err := newAdmin(t, byID[cur[1]]).AlterPartitionAssignments(ctx, req)
			if err == nil {
				err = rs.Error()
			}
			return err
		})
	}
	reassign()
	retry.Run(t, 30*time.Second, func() error {
		c, err := leaderConf()
		if err != nil {
			return err
		}
		return retry.Check(slices.Contains(c.Learners, add), "configuration %+v", c)
	})
	lose(func(e *membership.TopicEntry) error { e.Moves = nil; return nil })
	retry.Run(t, 30*time.Second, func() error {
		c, err := leaderConf()
		if err != nil {
			return err
		}
		return retry.Check(len(c.Learners) == 0 && sameSet(c.Voters, cur), "configuration %+v", c)
	})
	h.waitMore(t, 20)

	// 2. A finished move the catalog reverts.
	rest := nodes[:0:0]
	for _, n := range nodes {
		if n.NodeID() != add {
			rest = append(rest, n)
		}
	}
	cfg := byID[add].cfg
	byID[add] = startNode(t, cfg)
	nodes = append(rest, byID[add])
	waitMembers(t, nodes, 4)
	reassign()
	retry.Run(t, 60*time.Second, func() error {
		s, _ := byID[cur[1]].catalog.Topic(topic)
		return retry.Check(slices.Equal(s.Replicas[0], target) && len(s.Moves) == 0, "replicas %v moves %v", s.Replicas[0], s.Moves)
	})
	lose(func(e *membership.TopicEntry) error { e.Replicas[0] = slices.Clone(cur); return nil })
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		if byID[add].parts.Get(topic, 0) == nil {
			t.Fatalf("node %d, a voter, closed its replica on the catalog's word", add)
		}
		time.Sleep(50 * time.Millisecond) // watching for a close that must not happen
	}
	retry.Run(t, 60*time.Second, func() error {
		for _, n := range nodes {
			s, _ := n.catalog.Topic(topic)
			if !sameSet(s.Replicas[0], target) {
				return fmt.Errorf("node %d: replicas %v", n.NodeID(), s.Replicas[0])
			}
		}
		c, err := leaderConf()
		if err != nil {
			return err
		}
		if !sameSet(c.Voters, target) {
			return fmt.Errorf("configuration %+v", c)
		}
		return retry.Check(byID[cur[0]].parts.Get(topic, 0) == nil, "node %d holds the partition", cur[0])
	})
	h.waitMore(t, 20)
	keys, offs := h.finish(t)
	checkReadBack(t, []*Node{byID[target[0]], byID[target[1]], byID[target[2]]}, topic, keys, offs)
}
