package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/group"
)

// groupTestConfig is testConfig with the coordinator's waits shortened so
// rebalances finish in milliseconds, and a small __consumer_offsets.
func groupTestConfig(t testing.TB, dir string) Config {
	cfg := testConfig(t, dir)
	cfg.Groups.InitialRebalanceDelay = 0
	cfg.Groups.MinSessionTimeout = 100 * time.Millisecond
	cfg.Groups.OffsetsTopicPartitions = 5
	return cfg
}

func produceTo(t *testing.T, n *Node, topic string, partitions int32, perPartition int, from int) {
	t.Helper()
	cl := newClient(t, n, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for p := range partitions {
		for i := range perPartition {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, from+i))})
		}
	}
	if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// assignments tracks what a group consumer currently owns.
type assignments struct {
	mu    sync.Mutex
	owned map[int32]bool
}

func (a *assignments) opts() []kgo.Opt {
	a.owned = make(map[int32]bool)
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, ps := range m {
				for _, p := range ps {
					a.owned[p] = true
				}
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, ps := range m {
				for _, p := range ps {
					delete(a.owned, p)
				}
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, ps := range m {
				for _, p := range ps {
					delete(a.owned, p)
				}
			}
		}),
	}
}

func (a *assignments) get() []int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int32
	for p := range a.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// pollInBackground keeps a group consumer polling (which is what drives
// franz-go's rebalances) until the test ends or the client closes.
func pollInBackground(t *testing.T, cl *kgo.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if fs := cl.PollFetches(ctx); fs.IsClientClosed() {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestGroupMembersSharePartitionsAndRebalance(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "shared", 4, nil)

	groupOpts := []kgo.Opt{
		kgo.ConsumerGroup("sharers"), kgo.ConsumeTopics("shared"),
		kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.Balancers(kgo.RoundRobinBalancer()),
	}
	var a, b, c assignments
	clA := newClient(t, n, append(groupOpts, a.opts()...)...)
	pollInBackground(t, clA)
	retry.Run(t, 15*time.Second, func() error {
		if got := a.get(); len(got) != 4 {
			return fmt.Errorf("first member owns %v, want all 4 partitions", got)
		}
		return nil
	})

	clB := newClient(t, n, append(groupOpts, b.opts()...)...)
	pollInBackground(t, clB)
	retry.Run(t, 15*time.Second, func() error {
		ga, gb := a.get(), b.get()
		if len(ga) != 2 || len(gb) != 2 || slices.ContainsFunc(ga, func(p int32) bool { return slices.Contains(gb, p) }) {
			return fmt.Errorf("members own %v and %v, want 2 disjoint partitions each", ga, gb)
		}
		return nil
	})

	// A member that leaves hands its partitions back at once.
	clB.Close()
	retry.Run(t, 15*time.Second, func() error {
		if got := a.get(); len(got) != 4 {
			return fmt.Errorf("remaining member owns %v after the other left", got)
		}
		return nil
	})

	// A static member that dies (closing a static member sends no
	// LeaveGroup) is dropped once its session expires.
	clC := newClient(t, n, append(groupOpts, append(c.opts(), kgo.InstanceID("static-c"))...)...)
	pollInBackground(t, clC)
	retry.Run(t, 15*time.Second, func() error {
		if ga, gc := a.get(), c.get(); len(ga) != 2 || len(gc) != 2 {
			return fmt.Errorf("members own %v and %v after the static member joined", ga, gc)
		}
		return nil
	})
	clC.Close()
	retry.Run(t, 15*time.Second, func() error {
		if got := a.get(); len(got) != 4 {
			return fmt.Errorf("remaining member owns %v after the static member died", got)
		}
		return nil
	})

	described, err := kadm.NewClient(newClient(t, n)).DescribeGroups(testCtx(t), "sharers")
	if err != nil {
		t.Fatal(err)
	}
	g := described["sharers"]
	if g.State != "Stable" || len(g.Members) != 1 || g.Protocol != "roundrobin" {
		t.Fatalf("described %+v", g)
	}
}

// TestCommittedOffsetsSurviveRestart is at-least-once across a broker
// restart: what was committed is not read again, what was read but not
// committed is, and nothing is skipped.
func TestCommittedOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, groupTestConfig(t, dir))
	createTopic(t, newAdmin(t, n), "resume", 2, nil)
	produceTo(t, n, "resume", 2, 10, 0)

	groupOpts := []kgo.Opt{
		kgo.ConsumerGroup("resumers"), kgo.ConsumeTopics("resume"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}
	cl := newClient(t, n, groupOpts...)
	seen := make(map[int32][]int64)
	var all []*kgo.Record
	ctx := testCtx(t)
	for len(all) < 20 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 20: %v", len(all), ctx.Err())
		}
		all = append(all, fs.Records()...)
	}
	// Commit only the first 6 records of each partition: the consumer
	// "crashes" after processing the rest without committing them.
	var commit []*kgo.Record
	for _, r := range all {
		if r.Offset < 6 {
			commit = append(commit, r)
		}
	}
	if err := cl.CommitRecords(ctx, commit...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()
	stopNode(t, n)

	// A different setting after the fact must not move any group: the
	// existing __consumer_offsets keeps its partition count.
	cfg := groupTestConfig(t, dir)
	cfg.Groups.OffsetsTopicPartitions = 7
	n = startNode(t, cfg)
	produceTo(t, n, "resume", 2, 5, 10)
	cl = newClient(t, n, groupOpts...)
	ctx = testCtx(t)
	got := 0
	for got < 2*(4+5) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after restart consumed %d of %d: %v", got, 18, ctx.Err())
		}
		for _, r := range fs.Records() {
			seen[r.Partition] = append(seen[r.Partition], r.Offset)
			got++
		}
	}
	for p := range int32(2) {
		want := []int64{6, 7, 8, 9, 10, 11, 12, 13, 14}
		if !slices.Equal(seen[p], want) {
			t.Fatalf("partition %d resumed at offsets %v, want %v", p, seen[p], want)
		}
	}

	// The commit is visible to admins, and the group is known after the restart.
	adm := kadm.NewClient(newClient(t, n))
	offs, err := adm.FetchOffsets(ctx, "resumers")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("resume", 0); !ok || o.At != 6 {
		t.Fatalf("fetched commit %+v", o)
	}
	if spec, _ := n.catalog.Topic(group.TopicName); spec.Partitions != 5 {
		t.Fatalf("%s has %d partitions after a restart with another setting, want 5", group.TopicName, spec.Partitions)
	}
}

// TestGroupSettingsReachTheCoordinator checks Config.Groups is what the
// coordinator enforces: the session-timeout bounds decide JoinGroup.
func TestGroupSettingsReachTheCoordinator(t *testing.T) {
	cfg := groupTestConfig(t, t.TempDir())
	cfg.Groups.MinSessionTimeout = 100 * time.Millisecond
	cfg.Groups.MaxSessionTimeout = time.Second
	n := startNode(t, cfg)
	cl := newClient(t, n)
	join := func(session time.Duration) int16 {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = "bounds"
		req.SessionTimeoutMillis = int32(session.Milliseconds())
		req.RebalanceTimeoutMillis = 1000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatalf("join group: %v", err)
		}
		return resp.ErrorCode
	}
	for _, tc := range []struct {
		session time.Duration
		want    int16
	}{
		{50 * time.Millisecond, kerr.InvalidSessionTimeout.Code},
		{2 * time.Second, kerr.InvalidSessionTimeout.Code},
		// Below Kafka's 6 s default minimum: accepted only because of
		// the setting. A first join without a member id is asked to
		// rejoin with the one it is given (KIP-394).
		{200 * time.Millisecond, kerr.MemberIDRequired.Code},
	} {
		if got := join(tc.session); got != tc.want {
			t.Errorf("session timeout %v: error %d, want %d", tc.session, got, tc.want)
		}
	}
}

func TestGroupSettingsValidated(t *testing.T) {
	for name, mod := range map[string]func(*GroupSettings){
		"negative delay":   func(g *GroupSettings) { g.InitialRebalanceDelay = -time.Second },
		"min above max":    func(g *GroupSettings) { g.MinSessionTimeout, g.MaxSessionTimeout = time.Minute, time.Second },
		"too many offsets": func(g *GroupSettings) { g.OffsetsTopicPartitions = maxPartitionsPerTopic + 1 },
		"negative offsets": func(g *GroupSettings) { g.OffsetsTopicPartitions = -1 },
	} {
		cfg := testConfig(t, t.TempDir())
		mod(&cfg.Groups)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg.Groups)
		}
	}
}

func TestFindCoordinatorUsesOffsetsPartitionLeader(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	resp := adm.FindGroupCoordinators(testCtx(t), "a", "b", "c")
	for _, g := range []string{"a", "b", "c"} {
		c := resp[g]
		if c.Err != nil || c.NodeID != n.NodeID() || fmt.Sprintf("%s:%d", c.Host, c.Port) != n.AdvertisedKafkaAddr() {
			t.Fatalf("coordinator of %s: %+v", g, c)
		}
	}
	spec, ok := n.catalog.Topic(group.TopicName)
	if !ok || spec.Partitions != 5 {
		t.Fatalf("%s in catalog: %v %+v", group.TopicName, ok, spec)
	}
	// An unknown group's offsets are -1 without an error.
	createTopic(t, adm, "x", 1, nil)
	offs, err := adm.FetchOffsetsForTopics(testCtx(t), "never-seen", "x")
	if err != nil || offs.Error() != nil {
		t.Fatalf("fetch offsets of an unknown group: %v %v", err, offs.Error())
	}
	if o, ok := offs.Lookup("x", 0); !ok || o.At != -1 {
		t.Fatalf("offset of an unknown group: %+v %v", o, ok)
	}
}

// BenchmarkOffsetCommit measures one synchronous OffsetCommit round trip
// (append to __consumer_offsets and fsync) beside a baseline of one acks=all
// Produce of a record of similar size, which takes the same path to disk.
func BenchmarkOffsetCommit(b *testing.B) {
	cfg := testConfig(b, b.TempDir())
	cfg.Groups.OffsetsTopicPartitions = 5
	n := startNode(b, cfg)
	createTopic(b, newAdmin(b, n), "bench", 1, nil)
	cl := newClient(b, n, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	b.Run("commit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var os kadm.Offsets
			os.Add(kadm.Offset{Topic: "bench", Partition: 0, At: int64(i), LeaderEpoch: -1})
			if err := adm.CommitAllOffsets(ctx, "bench-group", os); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("produce-baseline", func(b *testing.B) {
		r := &kgo.Record{Topic: "bench", Partition: 0, Key: []byte("bench-group"), Value: make([]byte, 40)}
		for b.Loop() {
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
