package console

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// fakeSource is a node whose counters the test moves.
type fakeSource struct {
	mu     sync.Mutex
	parts  []PartitionSample
	groups []GroupSample
	reads  int
}

func (f *fakeSource) Partitions() []PartitionSample {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return append([]PartitionSample(nil), f.parts...)
}

func (f *fakeSource) Groups(max int) ([]GroupSample, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]GroupSample(nil), f.groups[:min(max, len(f.groups))]...), len(f.groups)
}

func (f *fakeSource) set(end, produced int64, committed int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts = []PartitionSample{{Topic: "t", Partition: 0, End: end, ProducedRecords: produced}}
	f.groups = []GroupSample{{Group: "g", Type: "classic", State: "Empty", Members: []GroupMember{},
		Committed: []Committed{{Topic: "t", Partition: 0, Offset: committed}}}}
}

func (f *fakeSource) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// TestHistoryLazyBoundedAndMerged: nothing samples before the first read;
// a read starts the sampler, which keeps at most Keep points a series and
// stops (dropping them) after IdleStop without reads; the merged state
// turns committed offsets and high watermarks into lag.
func TestHistoryLazyBoundedAndMerged(t *testing.T) {
	src := &fakeSource{}
	src.set(100, 100, 40)
	closing := make(chan struct{})
	defer close(closing)
	cfg := DefaultConfig()
	cfg.Source, cfg.NodeID, cfg.Closing = src, 1, closing
	cfg.Interval, cfg.Keep, cfg.IdleStop = 10*time.Millisecond, 5, 300*time.Millisecond
	c := New(cfg)

	if c.History().Running() || src.readCount() != 0 {
		t.Fatal("the sampler runs before anyone read the console")
	}
	l := c.Local(Query{})
	if len(l.Partitions) != 1 || len(l.Partitions[0].Points) != 1 {
		t.Fatalf("the first read shows %+v, want the one point taken at once", l.Partitions)
	}
	src.set(150, 160, 90)
	retry.Run(t, 5*time.Second, func() error {
		l = c.Local(Query{})
		if n := len(l.Partitions[0].Points); n != cfg.Keep {
			return errorf("%d points, want the bound %d", n, cfg.Keep)
		}
		return nil
	})
	last := l.Partitions[0].Points[cfg.Keep-1]
	if last[2] != 150 {
		t.Errorf("newest high watermark %v, want 150", last[2])
	}
	// Since the newest point: only that point comes back.
	if got := c.Local(Query{Since: int64(last[0])}).Partitions[0].Points; len(got) != 1 || got[0] != last {
		t.Errorf("since the newest point: %v, want just it", got)
	}

	st := c.State(t.Context(), Query{})
	if len(st.Groups) != 1 {
		t.Fatalf("state groups %+v", st.Groups)
	}
	g := st.Groups[0]
	if g.TotalLag != 60 || len(g.Offsets) != 1 || g.Offsets[0].Lag != 60 || g.Offsets[0].End != 150 || g.Coordinator != 1 {
		t.Errorf("group %+v, want lag 150-90 = 60 on broker 1", g)
	}
	if n := len(g.Lag); n == 0 || g.Lag[n-1][1] != 60 {
		t.Errorf("lag over time %v, want it ending at 60", g.Lag)
	}

	retry.Run(t, 5*time.Second, func() error {
		if c.History().Running() {
			return errorf("still sampling after the idle stop")
		}
		return nil
	})
	reads := src.readCount()
	time.Sleep(5 * cfg.Interval) // a stopped sampler must stay stopped: nothing to poll for
	if src.readCount() != reads {
		t.Errorf("the source was read %d times after the sampler stopped", src.readCount()-reads)
	}
}

// TestMergeLeadershipMoved: a partition sampled by two brokers in turn is
// one series in time order, its leader the newest sampler's; a broker that
// did not answer is named.
func TestMergeLeadershipMoved(t *testing.T) {
	locals := map[int32]Local{
		1: {Node: 1, IntervalMs: 1000, Keep: 300, Partitions: []PartitionSeries{{Topic: "t", Points: []PartitionPoint{{1000, 0, 5}, {2000, 0, 6}}}}},
		2: {Node: 2, IntervalMs: 1000, Keep: 300, Partitions: []PartitionSeries{{Topic: "t", Points: []PartitionPoint{{3000, 0, 7}}}}},
	}
	st := Merge(5000, locals, map[int32]string{3: "broker 3 is down or unknown"})
	if len(st.Partitions) != 1 || st.Partitions[0].Leader != 2 || len(st.Partitions[0].Points) != 3 || st.Partitions[0].Points[2][2] != 7 {
		t.Errorf("merged %+v, want one series of 3 points led by 2", st.Partitions)
	}
	if len(st.Nodes) != 3 || st.Nodes[2].Error == "" {
		t.Errorf("nodes %+v, want broker 3's error", st.Nodes)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// TestMergeLag: a committed partition lags by high watermark minus commit;
// an assigned one with no commit by what its log holds (end - start, as
// kadm counts it); one whose leader did not answer is unknown (-1); the
// lag over time pairs each commit with the high watermark of its second.
func TestMergeLag(t *testing.T) {
	parts := []PartitionSeries{
		{Topic: "t", Partition: 0, Points: []PartitionPoint{{1000, 0, 10}, {2000, 0, 30}}},
		{Topic: "t", Partition: 1, Points: []PartitionPoint{{1000, 5, 25}, {2000, 5, 25}}},
	}
	g := LocalGroup{
		GroupSample: GroupSample{Group: "g", Type: "consumer", State: "Stable",
			Members:   []GroupMember{{MemberID: "m", Assignment: map[string][]int32{"t": {0, 1}}}},
			Committed: []Committed{{Topic: "t", Partition: 0, Offset: 20}, {Topic: "u", Partition: 0, Offset: 3}}},
		History: []CommitSeries{{Topic: "t", Partition: 0, Points: []CommitPoint{{1100, 8}, {2100, 20}}}},
	}
	st := Merge(3000, map[int32]Local{
		1: {Node: 1, IntervalMs: 1000, Keep: 300, Partitions: parts},
		2: {Node: 2, IntervalMs: 1000, Keep: 300, Groups: []LocalGroup{g}},
	}, nil)
	if len(st.Groups) != 1 {
		t.Fatalf("groups %+v", st.Groups)
	}
	got := st.Groups[0]
	want := []GroupOffset{
		{Topic: "t", Partition: 0, Committed: 20, End: 30, Lag: 10, Member: "m"},
		{Topic: "t", Partition: 1, Committed: -1, End: 25, Lag: 20, Member: "m"},
		{Topic: "u", Partition: 0, Committed: 3, End: -1, Lag: -1},
	}
	if !slices.Equal(got.Offsets, want) || got.TotalLag != 30 || got.Coordinator != 2 {
		t.Errorf("offsets %+v total %d coordinator %d, want %+v total 30 on 2", got.Offsets, got.TotalLag, got.Coordinator, want)
	}
	if !slices.Equal(got.Lag, []CommitPoint{{1100, 2}, {2100, 10}}) {
		t.Errorf("lag over time %v, want [[1100 2] [2100 10]]", got.Lag)
	}
}
