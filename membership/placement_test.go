package membership

import (
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// placementStats measures one topic of partitions replicas over the brokers
// 1..n: the busiest broker's load over the mean, and how many replicas a join
// (broker n+1) and each possible leave move, over the ideal share R*P/N'.
type placementStats struct {
	n             int
	maxOverMean   float64
	joinOverIdeal float64
	// leave figures over all n possible leavers
	leaveMaxOverIdeal  float64
	leaveMeanOverIdeal float64
}

func measurePlacement(topic string, n, partitions, r int, leaves bool) placementStats {
	roster := make([]int32, n)
	for i := range roster {
		roster[i] = int32(i + 1)
	}
	before := PlaceTopic(topic, int32(partitions), roster, r)
	load := map[int32]int{}
	for _, rs := range before {
		for _, b := range rs {
			load[b]++
		}
	}
	maxLoad := 0
	for _, l := range load {
		maxLoad = max(maxLoad, l)
	}
	total := 0
	for _, rs := range before {
		total += len(rs)
	}
	st := placementStats{n: n, maxOverMean: float64(maxLoad) / (float64(total) / float64(n))}

	joined := append(append([]int32(nil), roster...), int32(n+1))
	after := PlaceTopic(topic, int32(partitions), joined, r)
	st.joinOverIdeal = float64(movedReplicas(before, after)) / (float64(r*partitions) / float64(n+1))

	if !leaves {
		return st
	}
	var sum float64
	for leaver := 0; leaver < n; leaver++ {
		left := make([]int32, 0, n-1)
		left = append(left, roster[:leaver]...)
		left = append(left, roster[leaver+1:]...)
		after := PlaceTopic(topic, int32(partitions), left, r)
		ratio := float64(movedReplicas(before, after)) / (float64(r*partitions) / float64(n))
		st.leaveMaxOverIdeal = max(st.leaveMaxOverIdeal, ratio)
		sum += ratio
	}
	st.leaveMeanOverIdeal = sum / float64(n)
	return st
}

// movedReplicas counts, over all partitions, the replicas of before that are
// no longer in after (a replica that has to be copied or dropped).
func movedReplicas(before, after [][]int32) int {
	moved := 0
	for p := range before {
		keep := map[int32]bool{}
		for _, b := range after[p] {
			keep[b] = true
		}
		for _, b := range before[p] {
			if !keep[b] {
				moved++
			}
		}
	}
	return moved
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

// TestPlacementBalanceAndMovement measures the hash itself. Reproduce the
// figures with: go test ./membership -run TestPlacementBalanceAndMovement -v
func TestPlacementBalanceAndMovement(t *testing.T) {
	const partitions, r = 1000, 3
	for _, n := range []int{3, 5, 10, 50} {
		st := measurePlacement("orders", n, partitions, r, true)
		t.Logf("N=%-3d busiest/mean=%.3f  join moved/ideal=%.3f  leave moved/ideal max=%.3f mean=%.3f",
			n, st.maxOverMean, st.joinOverIdeal, st.leaveMaxOverIdeal, st.leaveMeanOverIdeal)
		if st.maxOverMean > 1.35 {
			t.Errorf("N=%d: busiest broker holds %.3f× the mean, want ≤ 1.35", n, st.maxOverMean)
		}
		if st.joinOverIdeal > 1.1 {
			t.Errorf("N=%d: a join moves %.3f× the ideal share, want ≤ 1.1", n, st.joinOverIdeal)
		}
		if st.leaveMeanOverIdeal > 1.1 {
			t.Errorf("N=%d: a leave moves %.3f× the ideal share on average, want ≤ 1.1", n, st.leaveMeanOverIdeal)
		}
	}
	// The figures above are for one topic name; placement is a hash, so
	// other names land elsewhere. Report the spread over a few names too.
	if testing.Short() {
		return
	}
	for _, n := range []int{10, 50} {
		worst, worstJoin := 0.0, 0.0
		for i := 0; i < 20; i++ {
			st := measurePlacement(fmt.Sprintf("topic-%d", i), n, partitions, r, false)
			worst = max(worst, st.maxOverMean)
			worstJoin = max(worstJoin, st.joinOverIdeal)
		}
		t.Logf("N=%-3d over 20 topic names: worst busiest/mean=%.3f worst join moved/ideal=%.3f", n, worst, worstJoin)
	}
}
