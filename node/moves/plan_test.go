package moves

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spool-log/spool/membership"
)

// topic is a one-partition topic entry of factor 3 placed on replicas.
func topic(name string, replicas []int32, edit ...func(*membership.TopicEntry)) membership.TopicEntry {
	e := membership.TopicEntry{Name: name, ID: membership.TopicID{byte(len(name))}, Partitions: 1,
		ReplicationFactor: int16(len(replicas)), Replicas: [][]int32{replicas}}
	for _, f := range edit {
		f(&e)
	}
	return e
}

func aliveAll(int32) bool { return true }

func aliveBut(down ...int32) func(int32) bool {
	return func(b int32) bool { return !slices.Contains(down, b) }
}

// placed is where placement over roster puts partition 0 of name.
func placed(name string, roster []int32, rf int) []int32 {
	return membership.PlaceTopic(name, 1, roster, rf)[0]
}

// moved finds a topic whose placement over the bigger roster differs from
// its placement over the smaller, so the table's rows do not depend on the
// hash's particular outcome for a particular name.
func moved(t *testing.T, small, big []int32, rf int) (string, []int32, []int32) {
	t.Helper()
	for i := range 1000 {
		name := fmt.Sprintf("t%d", i)
		from, to := placed(name, small, rf), placed(name, big, rf)
		if !sameSet(from, to) {
			return name, from, to
		}
	}
	t.Fatal("no topic name whose placement changes with the roster")
	return "", nil, nil
}

func TestRebalance(t *testing.T) {
	three, four := []int32{1, 2, 3}, []int32{1, 2, 3, 4}
	name, from, to := moved(t, three, four, 3)
	newcomer := to[slices.IndexFunc(to, func(b int32) bool { return !slices.Contains(from, b) })]
	tests := []struct {
		name  string
		view  View
		moves []Move
	}{
		{"a joined broker takes the partitions placement now gives it",
			View{Topics: []membership.TopicEntry{topic(name, from)}, Roster: four, Alive: aliveAll},
			[]Move{{Topic: name, Target: to}}},
		{"nothing moves while the roster is as at the create",
			View{Topics: []membership.TopicEntry{topic(name, from)}, Roster: three, Alive: aliveAll}, nil},
		{"an order change alone moves nothing",
			View{Topics: []membership.TopicEntry{topic(name, []int32{to[2], to[1], to[0]})}, Roster: four, Alive: aliveAll}, nil},
		{"a pinned partition stays",
			View{Topics: []membership.TopicEntry{topic(name, from, func(e *membership.TopicEntry) { e.Pinned = []int32{0} })}, Roster: four, Alive: aliveAll}, nil},
		{"a partition moving already is left to its move",
			View{Topics: []membership.TopicEntry{topic(name, from, func(e *membership.TopicEntry) {
				e.Moves = []membership.PartitionMove{{Partition: 0, Target: to}}
			})}, Roster: four, Alive: aliveAll}, nil},
		{"a single copy never moves",
			View{Topics: []membership.TopicEntry{topic(name, from[:1])}, Roster: four, Alive: aliveAll}, nil},
		{"an even factor is served as it is",
			View{Topics: []membership.TopicEntry{topic(name, append(slices.Clone(from), 9))}, Roster: []int32{1, 2, 3, 4, 9}, Alive: aliveAll}, nil},
		{"not onto a broker that is down",
			View{Topics: []membership.TopicEntry{topic(name, from)}, Roster: four, Alive: aliveBut(newcomer)}, nil},
		{"not without a live majority to carry it out",
			View{Topics: []membership.TopicEntry{topic(name, from)}, Roster: four, Alive: aliveBut(from[0], from[1])}, nil},
		{"a draining replica is the drain's to move",
			View{Topics: []membership.TopicEntry{topic(name, from)}, Roster: four, Alive: aliveAll, Draining: map[int32]bool{from[0]: true}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rebalance(tc.view); fmt.Sprint(got) != fmt.Sprint(tc.moves) {
				t.Fatalf("Rebalance = %v, want %v", got, tc.moves)
			}
		})
	}
}

func TestPlansTakeTheBiggestFirst(t *testing.T) {
	three, four := []int32{1, 2, 3}, []int32{1, 2, 3, 4}
	var topics []membership.TopicEntry
	sizes := map[string]int64{}
	for i := 0; len(topics) < 3; i++ {
		name := fmt.Sprintf("s%d", i)
		from, to := placed(name, three, 3), placed(name, four, 3)
		if sameSet(from, to) {
			continue
		}
		topics = append(topics, topic(name, from))
		sizes[name] = int64(len(topics)) * 100
	}
	v := View{Topics: topics, Roster: four, Alive: aliveAll,
		Size: func(topic string, _ membership.TopicID, _ int32) int64 { return sizes[topic] }}
	got := Rebalance(v)
	if len(got) != 3 || got[0].Bytes != 300 || got[1].Bytes != 200 || got[2].Bytes != 100 {
		t.Fatalf("Rebalance = %v, want three moves, the biggest first", got)
	}
}

func TestDrain(t *testing.T) {
	roster := []int32{1, 2, 3, 4, 5}
	cur := placed("d", roster[:3], 3)
	spare := func(alive func(int32) bool, draining map[int32]bool) []int32 {
		return DrainTarget("d", 0, cur, placed("d", roster, 3), roster, draining, alive)
	}
	drained := cur[0]
	tests := []struct {
		name  string
		view  View
		moves []Move
	}{
		{"the drained broker's replica goes to the next live broker placement prefers",
			View{Topics: []membership.TopicEntry{topic("d", cur)}, Roster: roster, Alive: aliveAll, Draining: map[int32]bool{drained: true}},
			[]Move{{Topic: "d", Target: spare(aliveAll, map[int32]bool{drained: true})}}},
		{"no drain, no move",
			View{Topics: []membership.TopicEntry{topic("d", cur)}, Roster: roster, Alive: aliveAll}, nil},
		{"a single copy cannot move",
			View{Topics: []membership.TopicEntry{topic("d", cur[:1])}, Roster: roster, Alive: aliveAll, Draining: map[int32]bool{cur[0]: true}}, nil},
		{"a partition moving already ends its move first",
			View{Topics: []membership.TopicEntry{topic("d", cur, func(e *membership.TopicEntry) {
				e.Moves = []membership.PartitionMove{{Partition: 0, Target: cur}}
			})}, Roster: roster, Alive: aliveAll, Draining: map[int32]bool{drained: true}}, nil},
		{"not without a live majority",
			View{Topics: []membership.TopicEntry{topic("d", cur)}, Roster: roster, Alive: aliveBut(cur[1], cur[2]), Draining: map[int32]bool{drained: true}}, nil},
		{"nowhere to go: every other broker holds a replica or is down",
			View{Topics: []membership.TopicEntry{topic("d", cur)}, Roster: roster[:3], Alive: aliveAll, Draining: map[int32]bool{drained: true}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Drain(tc.view); fmt.Sprint(got) != fmt.Sprint(tc.moves) {
				t.Fatalf("Drain = %v, want %v", got, tc.moves)
			}
		})
	}
	// The target keeps the other replicas where they are, in their order.
	target := spare(aliveAll, map[int32]bool{drained: true})
	if slices.Contains(target, drained) || target[1] != cur[1] || target[2] != cur[2] {
		t.Fatalf("drain target %v of %v: the drained %d replaced in place, the rest kept", target, cur, drained)
	}
}

func TestLiveMajority(t *testing.T) {
	for _, tc := range []struct {
		replicas []int32
		down     []int32
		want     bool
	}{
		{[]int32{1, 2, 3}, nil, true},
		{[]int32{1, 2, 3}, []int32{3}, true},
		{[]int32{1, 2, 3}, []int32{2, 3}, false},
		{[]int32{1, 2}, []int32{2}, false},
		{[]int32{1}, nil, true},
	} {
		if got := LiveMajority(tc.replicas, aliveBut(tc.down...)); got != tc.want {
			t.Errorf("LiveMajority(%v, down %v) = %v, want %v", tc.replicas, tc.down, got, tc.want)
		}
	}
}
