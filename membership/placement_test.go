package membership

import (
	"flag"
	"fmt"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
)

var placementTradeoff = flag.Bool("placement.tradeoff", false,
	"TestPlacementTradeoff: measure balance against movement for several cap factors")

// placementNames are the topic names the placement figures are measured
// over: a few usual ones and fixed pseudo-random ones, since a placement
// that is balanced for one name can be lopsided for another.
func placementNames(count int) []string {
	names := []string{"orders", "clicks", "payments.v2", "user-events", "__consumer_offsets"}
	for i := 0; len(names) < count; i++ {
		names = append(names, fmt.Sprintf("t-%012x", xxhash.Sum64String(fmt.Sprint(i))>>16))
	}
	return names[:count]
}

// scoreCache holds PlacementScore for partitions 0..P-1 and broker ids 1..B,
// so that the many placements a measurement makes hash each pair once.
type scoreCache [][]uint64

func newScoreCache(topic string, partitions, maxBroker int) scoreCache {
	c := make(scoreCache, partitions)
	for p := range c {
		c[p] = make([]uint64, maxBroker+1)
		for b := 1; b <= maxBroker; b++ {
			c[p][b] = PlacementScore(topic, int32(p), int32(b))
		}
	}
	return c
}

// place is PlaceTopic with cached scores and the given cap factors.
func (c scoreCache) place(roster []int32, r int, capNum, capDen, leadNum, leadDen int) [][]int32 {
	brokers := placementRoster(roster)
	return placeBounded(int32(len(c)), brokers, r, func(p int32, i int) uint64 {
		return c[p][brokers[i]]
	}, capNum, capDen, leadNum, leadDen)
}

func brokers1to(n int) []int32 {
	roster := make([]int32, n)
	for i := range roster {
		roster[i] = int32(i + 1)
	}
	return roster
}

func without(roster []int32, id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(roster), func(b int32) bool { return b == id })
}

// replicaLoads counts each broker's replicas and first replicas.
func replicaLoads(placement [][]int32) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, rs := range placement {
		for _, b := range rs {
			replicas[b]++
		}
		if len(rs) > 0 {
			leaders[rs[0]]++
		}
	}
	return replicas, leaders
}

func maxOf(m map[int32]int) int {
	most := 0
	for _, v := range m {
		most = max(most, v)
	}
	return most
}

// movedReplicas is the movement between two placements of one topic: over
// all partitions, the replicas of before that are not in after, i.e. the
// replica copies a hand-off from before to after has to make (each also
// drops one old replica). A reordering within a partition's list moves no
// data and is not counted.
func movedReplicas(before, after [][]int32) int {
	moved := 0
	for p := range before {
		for _, b := range before[p] {
			if !slices.Contains(after[p], b) {
				moved++
			}
		}
	}
	return moved
}

// placementFigures are the worst figures over many topic names for one N.
//
// Balance is the busiest broker's replicas over the mean R×P/N (and likewise
// for first replicas, the preferred leaders, over P/N).
//
// Movement is movedReplicas between the placement over the roster before
// and after the change, over the ideal: for a join, the replicas the new
// broker holds afterwards (each had to be copied onto it); for a leave, the
// replicas the leaver held (each had to be copied elsewhere). A ratio of 1
// means nothing else moved; anything above is reshuffling among the brokers
// that stayed. joinOverShare is the join's movement over the new broker's
// fair share R×P/(N+1) instead, which also counts how far above its share
// the newcomer is filled.
type placementFigures struct {
	n                    int
	balance, leaders     float64
	balanceName          string
	join, joinOverShare  float64
	joinName             string
	leave                float64
	leaveName            string
	leaver               int32
	leaderMovesPerChange float64 // mean partitions whose first replica changed, per join/leave
}

func measurePlacement(names []string, n, partitions, r int, capNum, capDen, leadNum, leadDen int) placementFigures {
	f := placementFigures{n: n}
	roster := brokers1to(n)
	newcomer := int32(n + 1)
	var leaderMoves, changes int
	for _, name := range names {
		scores := newScoreCache(name, partitions, n+1)
		place := func(roster []int32) [][]int32 {
			return scores.place(roster, r, capNum, capDen, leadNum, leadDen)
		}
		before := place(roster)
		load, leads := replicaLoads(before)
		if b := float64(maxOf(load)) / (float64(r*partitions) / float64(n)); b > f.balance {
			f.balance, f.balanceName = b, name
		}
		f.leaders = max(f.leaders, float64(maxOf(leads))/(float64(partitions)/float64(n)))

		countLeaderMoves := func(after [][]int32) {
			for p := range before {
				if before[p][0] != after[p][0] {
					leaderMoves++
				}
			}
			changes++
		}
		after := place(append(slices.Clone(roster), newcomer))
		countLeaderMoves(after)
		afterLoad, _ := replicaLoads(after)
		moved := float64(movedReplicas(before, after))
		if j := moved / float64(afterLoad[newcomer]); j > f.join {
			f.join, f.joinName = j, name
		}
		f.joinOverShare = max(f.joinOverShare, moved/(float64(r*partitions)/float64(n+1)))

		if n <= r {
			continue // fewer brokers than replicas: a leave cannot be placed
		}
		for _, leaver := range roster {
			after := place(without(roster, leaver))
			countLeaderMoves(after)
			if l := float64(movedReplicas(before, after)) / float64(load[leaver]); l > f.leave {
				f.leave, f.leaveName, f.leaver = l, name, leaver
			}
		}
	}
	f.leaderMovesPerChange = float64(leaderMoves) / float64(changes)
	return f
}

func TestPlaceDeterministicAndOrdered(t *testing.T) {
	roster := []int32{5, 1, 9, 3, 7}
	a := Place("orders", 7, roster, 3)
	b := Place("orders", 7, []int32{9, 7, 5, 3, 1, 1}, 3)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("placement depends on roster order or duplicates: %v vs %v", a, b)
	}
	if len(a) != 3 {
		t.Fatalf("got %d replicas, want 3", len(a))
	}
	for i := 1; i < len(a); i++ {
		if PlacementScore("orders", 7, a[i-1]) < PlacementScore("orders", 7, a[i]) {
			t.Fatalf("replicas %v not in descending score order", a)
		}
	}
	for _, b := range roster {
		if !slices.Contains(a, b) && PlacementScore("orders", 7, b) > PlacementScore("orders", 7, a[2]) {
			t.Fatalf("broker %d outscores chosen %v", b, a)
		}
	}
	if got := Place("orders", 7, []int32{4, 2}, 3); len(got) != 2 {
		t.Fatalf("short roster: got %v, want both brokers", got)
	}
	if got := Place("orders", 7, nil, 3); got != nil {
		t.Fatalf("empty roster: got %v", got)
	}
}

// TestPlacementScoreIsPinned pins the documented encoding: a change here moves
// every partition of every cluster, so it must never happen by accident.
func TestPlacementScoreIsPinned(t *testing.T) {
	got := PlacementScore("orders", 3, 2)
	documented := xxhash.Sum64([]byte("orders\x00" + "\x00\x00\x00\x03" + "\x00\x00\x00\x02"))
	if got != documented {
		t.Fatalf("PlacementScore(orders,3,2) = %#x, documented encoding hashes to %#x", got, documented)
	}
	const pinned = uint64(0xccaeefbf804ec3ab)
	if got != pinned {
		t.Fatalf("PlacementScore(orders,3,2) = %#x, pinned %#x", got, pinned)
	}
}

// TestPlaceTopicPinned pins PlaceTopic's output for one topic, so that a
// change of the algorithm (not only of the hash) cannot slip in unnoticed:
// placements recorded by an older release must stay what a newer one computes.
func TestPlaceTopicPinned(t *testing.T) {
	got := fmt.Sprint(PlaceTopic("orders", 8, brokers1to(5), 3))
	const pinned = "[[5 4 1] [1 5 2] [5 4 2] [4 2 5] [1 4 2] [4 2 1] [2 1 5] [3 4 5]]"
	if got != pinned {
		t.Fatalf("PlaceTopic(orders, 8, 1..5, 3) = %s, pinned %s", got, pinned)
	}
	// A topic whose plain rendezvous placement overfills brokers, so that
	// both caps bind: pinned by a digest of the printed placement.
	big := PlaceTopic("user-events", 1000, brokers1to(50), 3)
	plainLoad, _ := replicaLoads(PlaceTopicPlain("user-events", 1000, brokers1to(50), 3))
	if maxOf(plainLoad) <= int(ceilDiv(replicaCapNum*3*1000, replicaCapDen*50)) {
		t.Fatalf("user-events no longer exercises the cap (plain busiest %d)", maxOf(plainLoad))
	}
	if got, pinned := xxhash.Sum64String(fmt.Sprint(big)), uint64(0xc3d070538fcd5594); got != pinned {
		t.Fatalf("PlaceTopic(user-events, 1000, 1..50, 3) digest %#x, pinned %#x", got, pinned)
	}
}

func TestPlaceTopicValidAndDeterministic(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 50} {
		for _, r := range []int{1, 3, 5} {
			roster := brokers1to(n)
			got := PlaceTopic("orders", 200, roster, r)
			shuffled := append(slices.Clone(roster), roster...)
			slices.Reverse(shuffled)
			if again := PlaceTopic("orders", 200, shuffled, r); fmt.Sprint(again) != fmt.Sprint(got) {
				t.Fatalf("N=%d R=%d: placement depends on roster order or duplicates", n, r)
			}
			if cached := newScoreCache("orders", 200, n).place(roster, r, replicaCapNum, replicaCapDen, leaderCapNum, leaderCapDen); fmt.Sprint(cached) != fmt.Sprint(got) {
				t.Fatalf("N=%d R=%d: the measured placement differs from PlaceTopic", n, r)
			}
			// The leader cap only reorders: the replica sets are those
			// placed without it.
			unled := newScoreCache("orders", 200, n).place(roster, r, replicaCapNum, replicaCapDen, 1000, 1)
			for p, rs := range got {
				a, b := slices.Clone(rs), slices.Clone(unled[p])
				slices.Sort(a)
				slices.Sort(b)
				if !slices.Equal(a, b) {
					t.Fatalf("N=%d R=%d partition %d: leader cap changed the replicas %v to %v", n, r, p, unled[p], rs)
				}
				if len(rs) != min(r, n) {
					t.Fatalf("N=%d R=%d partition %d: %v", n, r, p, rs)
				}
				seen := map[int32]bool{}
				for _, b := range rs {
					if seen[b] || b < 1 || int(b) > n {
						t.Fatalf("N=%d R=%d partition %d: bad replicas %v", n, r, p, rs)
					}
					seen[b] = true
				}
				// Apart from the leader, the list is in descending score.
				for k := 2; k < len(rs); k++ {
					if PlacementScore("orders", int32(p), rs[k-1]) < PlacementScore("orders", int32(p), rs[k]) {
						t.Fatalf("N=%d R=%d partition %d: followers %v out of score order", n, r, p, rs)
					}
				}
			}
		}
	}
	if got := PlaceTopic("orders", 3, nil, 3); len(got) != 3 || got[0] != nil {
		t.Fatalf("empty roster: %v", got)
	}
	if got := PlaceTopic("orders", 0, brokers1to(3), 3); got != nil {
		t.Fatalf("no partitions: %v", got)
	}
	if got := PlaceTopic("orders", -1, brokers1to(3), 3); got != nil {
		t.Fatalf("negative partitions: %v", got)
	}
}

// TestPlaceTopicFollowsRendezvousUntilCapped: without a binding cap a topic
// lands exactly where plain rendezvous prefers, and with one only the
// brokers over their share give way.
func TestPlaceTopicFollowsRendezvousUntilCapped(t *testing.T) {
	// One partition: no cap can bind.
	for _, n := range []int{3, 10, 50} {
		got := PlaceTopic("orders", 1, brokers1to(n), 3)
		if want := Place("orders", 0, brokers1to(n), 3); fmt.Sprint(got[0]) != fmt.Sprint(want) {
			t.Fatalf("N=%d: PlaceTopic %v, rendezvous %v", n, got[0], want)
		}
	}
	// 50 brokers, 1000 partitions: some partitions give way, never more
	// than the brokers over the cap account for.
	for _, name := range []string{"orders", "user-events", "t-5460f49adbe7"} {
		const partitions, r, n = 1000, 3, 50
		roster := brokers1to(n)
		got := PlaceTopic(name, partitions, roster, r)
		replicaCap := int(ceilDiv(replicaCapNum*r*partitions, replicaCapDen*n))
		differ := 0
		for p := range got {
			want := Place(name, int32(p), roster, r)
			a, b := slices.Clone(got[p]), slices.Clone(want)
			slices.Sort(a)
			slices.Sort(b)
			if slices.Equal(a, b) {
				continue
			}
			differ++
			// Every preferred broker that was skipped must have been full.
			load, _ := replicaLoads(got[:p])
			for _, w := range want {
				if !slices.Contains(got[p], w) && load[w] < replicaCap {
					t.Fatalf("%s partition %d skipped broker %d with room (%d < %d)", name, p, w, load[w], replicaCap)
				}
			}
		}
		plainLoad, _ := replicaLoads(PlaceTopicPlain(name, partitions, roster, r))
		excess := 0
		for _, l := range plainLoad {
			excess += max(0, l-replicaCap)
		}
		if differ > excess {
			t.Fatalf("%s: %d partitions differ from rendezvous, but only %d replicas were over the cap", name, differ, excess)
		}
		t.Logf("%s N=%d: %d of %d partitions differ from plain rendezvous (plain busiest %d, %d replicas over the cap %d)",
			name, n, differ, partitions, maxOf(plainLoad), excess, replicaCap)
	}
}

// PlaceTopicPlain is plain rendezvous for every partition, for comparison.
func PlaceTopicPlain(topic string, partitions int32, roster []int32, r int) [][]int32 {
	out := make([][]int32, partitions)
	for p := range out {
		out[p] = Place(topic, int32(p), roster, r)
	}
	return out
}

// TestPlacementBalanceAndMovement measures PlaceTopic over 50 topic names
// (5 in -short) for N = 3, 5, 10, 50 brokers, 1000 partitions, R = 3: for
// every name the busiest broker holds at most 1.35× the mean (and leads at
// most 1.35× the mean number of partitions), and a join of
// a new broker or the leave of any one moves at most 1.1× the ideal (see
// placementFigures). Reproduce the figures with:
//
//	go test ./membership -run TestPlacementBalanceAndMovement -v
func TestPlacementBalanceAndMovement(t *testing.T) {
	const partitions, r = 1000, 3
	names := placementNames(50)
	if testing.Short() {
		names = names[:5]
	}
	for _, n := range []int{3, 5, 10, 50} {
		f := measurePlacement(names, n, partitions, r, replicaCapNum, replicaCapDen, leaderCapNum, leaderCapDen)
		leave := "n/a (N ≤ R: no broker can leave)"
		if n > r {
			leave = fmt.Sprintf("%.3f (%s, broker %d)", f.leave, f.leaveName, f.leaver)
		}
		t.Logf("N=%-2d worst of %d names: busiest/mean=%.3f (%s) leaders busiest/mean=%.3f  join moved/ideal=%.3f (%s) moved/fair share=%.3f  leave moved/ideal=%s  leader changes per join/leave=%.1f",
			n, len(names), f.balance, f.balanceName, f.leaders, f.join, f.joinName, f.joinOverShare, leave, f.leaderMovesPerChange)
		if f.balance > 1.35 {
			t.Errorf("N=%d: topic %s: busiest broker holds %.3f× the mean, want ≤ 1.35", n, f.balanceName, f.balance)
		}
		if f.leaders > 1.35 {
			t.Errorf("N=%d: the busiest broker leads %.3f× the mean, want ≤ 1.35", n, f.leaders)
		}
		if f.join > 1.1 {
			t.Errorf("N=%d: topic %s: a join moves %.3f× the ideal, want ≤ 1.1", n, f.joinName, f.join)
		}
		if f.leave > 1.1 {
			t.Errorf("N=%d: topic %s: broker %d leaving moves %.3f× the ideal, want ≤ 1.1", n, f.leaveName, f.leaver, f.leave)
		}
	}
}

// TestPlacementTradeoff reports balance against movement for several replica
// cap factors (and plain rendezvous), over the same names as
// TestPlacementBalanceAndMovement. It takes a while, so it runs only with:
//
//	go test ./membership -run TestPlacementTradeoff -v -placement.tradeoff
func TestPlacementTradeoff(t *testing.T) {
	if !*placementTradeoff {
		t.Skip("a slow measurement; run with -placement.tradeoff")
	}
	const partitions, r = 1000, 3
	names := placementNames(50)
	for _, c := range []int{10, 11, 12, 13, 14, 15, 0} {
		num, label := c, fmt.Sprintf("cap %.1f", float64(c)/10)
		if c == 0 {
			num, label = 1000, "no cap " // plain rendezvous sets; the leader cap still applies
		}
		for _, n := range []int{10, 50} {
			f := measurePlacement(names, n, partitions, r, num, 10, leaderCapNum, leaderCapDen)
			t.Logf("%s N=%-2d busiest/mean=%.3f leaders=%.3f join moved/ideal=%.3f moved/fair=%.3f leave moved/ideal=%.3f",
				label, n, f.balance, f.leaders, f.join, f.joinOverShare, f.leave)
		}
	}
}

// Small topics spread evenly: the cap's slack is rounded down, so a 6-partition
// topic on 3 brokers with one replica (or with every broker a replica) puts
// exactly 2 replicas and 2 leaders on each, whatever its name hashes to; with
// two replicas each broker stays within the cap of 5 replicas and 3 leaders.
func TestPlaceTopicSmallTopicsEven(t *testing.T) {
	roster := []int32{1, 2, 3}
	for _, name := range []string{"events", "orders", "a", "clicks", "payments", "logs"} {
		for _, rf := range []int{1, 2, 3} {
			lists := PlaceTopic(name, 6, roster, rf)
			load := map[int32]int{}
			leads := map[int32]int{}
			for _, l := range lists {
				leads[l[0]]++
				for _, b := range l {
					load[b]++
				}
			}
			for _, b := range roster {
				even := rf != 2 && (load[b] != 2*rf || leads[b] != 2)
				capped := rf == 2 && (load[b] > 5 || leads[b] > 3)
				if even || capped {
					t.Errorf("%s rf=%d: broker %d holds %d replicas and leads %d (%v)",
						name, rf, b, load[b], leads[b], lists)
				}
			}
		}
	}
}
