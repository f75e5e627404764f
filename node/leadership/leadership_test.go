package leadership

import (
	"context"
	"encoding/binary"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-log/spool/membership"
)

func topicID(b byte) (t [16]byte) {
	t[0], t[15] = b, b
	return t
}

func claims(leader int32, topic byte, n int, epoch int32) []Claim {
	var out []Claim
	for p := range n {
		out = append(out, Claim{Topic: topicID(topic), Partition: int32(p), Leader: leader, Epoch: epoch,
			ISR: []int32{leader, leader + 1}, Offline: []int32{leader + 2}, Voters: []int32{leader, leader + 1, leader + 2}})
	}
	return out
}

func TestCodecRoundTripAndSize(t *testing.T) {
	m := Message{Broker: 2, Inc: 1 << 60, Version: 77, Since: 70,
		Claims:  append(claims(2, 1, 3, 5), claims(2, 9, 2, 1<<30)...),
		Removed: []Key{{topicID(4), 7}, {topicID(1), 3}}}
	got, err := Decode(Encode(m))
	if err != nil {
		t.Fatal(err)
	}
	want := m
	want.Removed = []Key{{topicID(1), 3}, {topicID(4), 7}} // sorted
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// A node leading 3,334 partitions of three replicas answers a full
	// pull in a few tens of KB.
	big := Encode(Message{Broker: 1, Inc: 1, Version: 1, Full: true, Claims: claims(1, 1, 3334, 3)})
	if len(big) > 40_000 {
		t.Fatalf("3334 claims encode to %d bytes", len(big))
	}
}

// A message of an earlier version, without the claims' voters, still
// decodes: its claims have none.
func TestDecodeReadsVersionOne(t *testing.T) {
	c := Claim{Topic: topicID(1), Partition: 2, Leader: 3, Epoch: 4, ISR: []int32{3}, Offline: []int32{}}
	b := Encode(Message{Broker: 3, Inc: 1, Version: 1, Full: true, Claims: []Claim{c}})
	// The claim's empty voter list is the last byte but the removals'
	// topic count.
	v1 := append(append(append([]byte{}, magicV1[:]...), b[4:len(b)-2]...), b[len(b)-1])
	m, err := Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Claims) != 1 || !reflect.DeepEqual(m.Claims[0], c) {
		t.Fatalf("decoded %+v, want %+v", m.Claims, c)
	}
}

// TestDecodeNeverTrusts: every truncation of a valid message, trailing
// bytes, and counts larger than the message are refused without panicking
// or allocating for the claimed count.
func TestDecodeNeverTrusts(t *testing.T) {
	valid := Encode(Message{Broker: 3, Inc: 9, Version: 4, Claims: claims(3, 2, 5, 8), Removed: []Key{{topicID(5), 1}}})
	for i := range len(valid) {
		if _, err := Decode(valid[:i]); err == nil {
			t.Fatalf("a message cut at %d of %d bytes decoded", i, len(valid))
		}
	}
	if _, err := Decode(append(valid, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	// A header claiming 2^31-1 topics in a few bytes.
	hostile := append([]byte{}, magic[:]...)
	for _, v := range []uint64{3, 9, 4, 0, 0, 1<<31 - 1} {
		hostile = binary.AppendUvarint(hostile, v)
	}
	if _, err := Decode(hostile); err == nil || !strings.Contains(err.Error(), "count") {
		t.Fatalf("huge topic count: %v", err)
	}
	// A replica list longer than MaxReplicas.
	long := Claim{Topic: topicID(1), Leader: 3, ISR: make([]int32, MaxReplicas+1)}
	if _, err := Decode(Encode(Message{Broker: 3, Inc: 1, Claims: []Claim{long}})); err == nil {
		t.Fatal("a replica list over MaxReplicas decoded")
	}
	if _, err := Decode([]byte("garbage!")); err == nil {
		t.Fatal("garbage decoded")
	}
}

func TestLocalDeltas(t *testing.T) {
	l := NewLocal(1)
	if !l.Set(claims(1, 1, 4, 0)) {
		t.Fatal("first set unchanged")
	}
	inc, v1, ok := ParseTag(l.Tag())
	if !ok || v1 != 1 {
		t.Fatalf("tag %q", l.Tag())
	}
	if l.Set(claims(1, 1, 4, 0)) {
		t.Fatal("same set changed the version")
	}
	next := claims(1, 1, 3, 0)                 // partition 3 no longer led
	next[1].Epoch = 1                          // partition 1 re-elected
	next = append(next, claims(2, 7, 1, 0)...) // not ours: ignored
	if !l.Set(next) {
		t.Fatal("changed set unchanged")
	}
	d := l.Message(inc, v1)
	if d.Full || d.Since != v1 || d.Version != 2 || len(d.Claims) != 1 || d.Claims[0].Partition != 1 || d.Claims[0].Epoch != 1 ||
		len(d.Removed) != 1 || d.Removed[0].Partition != 3 {
		t.Fatalf("delta since %d: %+v", v1, d)
	}
	if f := l.Message(inc+1, v1); !f.Full || len(f.Claims) != 3 {
		t.Fatalf("another incarnation gets %+v, want the whole set", f)
	}
	if f := l.Message(inc, 99); !f.Full {
		t.Fatalf("a version from the future gets %+v, want the whole set", f)
	}

	// Applying the full set then the delta gives the table the same view.
	tab := NewTable()
	if err := tab.Apply(1, l.Message(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := tab.Apply(1, d); err == nil {
		t.Fatal("a delta from version 1 applied on top of version 2")
	}
	if c, ok := tab.Lookup(topicID(1), 1); !ok || c.Epoch != 1 || c.Leader != 1 {
		t.Fatalf("lookup: %+v %v", c, ok)
	}
	if _, ok := tab.Lookup(topicID(1), 3); ok {
		t.Fatal("a partition no longer led is still claimed")
	}

	// Removals past the bound are forgotten: a peer that far behind is
	// sent the whole set.
	for i := range minRemovals + 10 {
		l.Set(claims(1, byte(i%200), 1+i%7, int32(i)))
	}
	if f := l.Message(inc, v1); !f.Full {
		t.Fatal("a delta from before forgotten removals")
	}
}

func TestTableHighestEpochWins(t *testing.T) {
	tab := NewTable()
	old := Message{Broker: 1, Inc: 1, Version: 1, Full: true, Claims: claims(1, 1, 2, 4)}
	cur := Message{Broker: 2, Inc: 1, Version: 1, Full: true, Claims: claims(2, 1, 1, 5)}
	if err := tab.Apply(1, old); err != nil {
		t.Fatal(err)
	}
	if err := tab.Apply(2, cur); err != nil {
		t.Fatal(err)
	}
	if c, _ := tab.Lookup(topicID(1), 0); c.Leader != 2 || c.Epoch != 5 {
		t.Fatalf("partition 0: %+v, want broker 2's epoch 5", c)
	}
	if c, _ := tab.Lookup(topicID(1), 1); c.Leader != 1 || c.Epoch != 4 {
		t.Fatalf("partition 1: %+v, want broker 1's epoch 4", c)
	}
	if err := tab.Apply(3, cur); err == nil {
		t.Fatal("broker 2's claims accepted as broker 3's")
	}
	tab.Drop(2)
	if c, _ := tab.Lookup(topicID(1), 0); c.Leader != 1 {
		t.Fatalf("after dropping broker 2: %+v", c)
	}
}

// TestSyncerPullsAndDrops: over real HTTP, a Syncer pulls a peer's claims
// when its tag moves (deltas after the first), and drops them once the
// peer is no longer alive for DropAfter.
func TestSyncerPullsAndDrops(t *testing.T) {
	l := NewLocal(2)
	srv := httptest.NewServer(l)
	defer srv.Close()
	var paths []string
	status := membership.StatusAlive
	members := func() []membership.Member {
		return []membership.Member{{Name: "b", BrokerID: 2, Status: status, GossipAddr: "127.0.0.1:1", AdminAddr: strings.TrimPrefix(srv.URL, "http://"), Leadership: l.Tag()}}
	}
	fetch := membership.HTTPFetch(nil)
	tab := NewTable()
	s := NewSyncer(SyncConfig{Self: 1, Table: tab, Members: members, DropAfter: 50 * time.Millisecond,
		Fetch: func(ctx context.Context, m membership.Member, path string) ([]byte, error) {
			paths = append(paths, path)
			return fetch(ctx, m, path)
		}})
	ctx := context.Background()
	round := func() { s.Round(ctx); s.Wait() }

	l.Set(claims(2, 1, 3, 7))
	round()
	if tab.Len() != 3 {
		t.Fatalf("after the first pull the table holds %d claims", tab.Len())
	}
	round() // tag unchanged: no pull
	l.Set(claims(2, 1, 2, 8))
	round()
	if c, ok := tab.Lookup(topicID(1), 1); !ok || c.Epoch != 8 || tab.Len() != 2 {
		t.Fatalf("after a change: %+v, %d claims", c, tab.Len())
	}
	if len(paths) != 2 || paths[0] != Path || !strings.Contains(paths[1], "since=1") {
		t.Fatalf("pulls %q: want one full, then one delta since 1", paths)
	}

	status = membership.StatusFailed
	deadline := time.Now().Add(10 * time.Second)
	for tab.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a dead broker's claims were never dropped")
		}
		round()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSyncerDropsUnreachableAhead: a peer alive in gossip whose tag moved
// on while its claims cannot be pulled keeps its old claims only for
// DropAfter; one that left is dropped at the next round.
func TestSyncerDropsUnreachableAhead(t *testing.T) {
	l := NewLocal(2)
	l.Set(claims(2, 1, 2, 1))
	status := membership.StatusAlive
	reachable := true
	members := func() []membership.Member {
		return []membership.Member{{Name: "b", BrokerID: 2, Status: status, Leadership: l.Tag()}}
	}
	tab := NewTable()
	s := NewSyncer(SyncConfig{Self: 1, Table: tab, Members: members, DropAfter: 50 * time.Millisecond,
		Fetch: func(ctx context.Context, m membership.Member, path string) ([]byte, error) {
			if !reachable {
				return nil, context.DeadlineExceeded
			}
			return Encode(l.Message(0, 0)), nil // always whole: the table takes it
		}})
	ctx := context.Background()
	round := func() { s.Round(ctx); s.Wait() }
	round()
	if tab.Len() != 2 {
		t.Fatalf("%d claims after the first pull", tab.Len())
	}
	reachable = false
	l.Set(claims(2, 1, 2, 2))
	round()
	if tab.Len() != 2 {
		t.Fatal("claims dropped at the first failed pull")
	}
	deadline := time.Now().Add(10 * time.Second)
	for tab.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("an unreachable peer's outdated claims were never dropped")
		}
		round()
		time.Sleep(10 * time.Millisecond)
	}

	reachable = true
	round()
	if c, ok := tab.Lookup(topicID(1), 0); !ok || c.Epoch != 2 {
		t.Fatalf("back: %+v %v", c, ok)
	}
	status = membership.StatusLeft
	round()
	if tab.Len() != 0 {
		t.Fatal("a peer that left still has claims")
	}
}

// TestSyncerSlowPeerDelaysOnlyItself: a peer that does not answer (a
// stopped process) holds no other peer's claims back, and gets one pull in
// flight at a time.
func TestSyncerSlowPeerDelaysOnlyItself(t *testing.T) {
	slow, fast := NewLocal(2), NewLocal(3)
	slow.Set(claims(2, 1, 1, 1))
	fast.Set(claims(3, 2, 1, 1))
	release := make(chan struct{})
	calls := map[int32]int{}
	var mu sync.Mutex
	tab := NewTable()
	s := NewSyncer(SyncConfig{Self: 1, Table: tab,
		Members: func() []membership.Member {
			return []membership.Member{
				{Name: "slow", BrokerID: 2, Status: membership.StatusAlive, Leadership: slow.Tag()},
				{Name: "fast", BrokerID: 3, Status: membership.StatusAlive, Leadership: fast.Tag()},
			}
		},
		Fetch: func(ctx context.Context, m membership.Member, path string) ([]byte, error) {
			mu.Lock()
			calls[m.BrokerID]++
			mu.Unlock()
			if m.BrokerID == 2 {
				<-release
				return Encode(slow.Message(0, 0)), nil
			}
			return Encode(fast.Message(0, 0)), nil
		}})
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.Round(ctx)
		if _, ok := tab.Lookup(topicID(2), 0); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fast peer's claims never arrived while the slow one hung")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Round(ctx)
	close(release)
	s.Wait()
	if _, ok := tab.Lookup(topicID(1), 0); !ok {
		t.Fatal("the slow peer's claims never arrived")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls[2] != 1 {
		t.Fatalf("%d pulls from the slow peer, want one in flight at a time", calls[2])
	}
}
