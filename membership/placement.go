package membership

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Placement has two views, both built on one stable score:
//
//   - Place is plain rendezvous hashing for one partition: the brokers in
//     descending PlacementScore. It is where hashing alone prefers a replica,
//     ignoring how loaded the brokers already are.
//   - PlaceTopic places a whole topic at creation with bounded-load
//     rendezvous hashing. This is what the catalog records, and what a
//     comparison "where would placement put this topic over today's roster"
//     (spool placement) must recompute: a freshly created topic matches
//     PlaceTopic exactly, but not necessarily Place partition by partition.
//
// Plain rendezvous moves the least data possible when the roster changes, but
// its load is a binomial draw: with 1000 partitions, R = 3 and 50 brokers the
// busiest broker holds 1.30× the mean for topic "orders" and 1.47× for another
// of 50 names measured. Bounded load caps every broker's share of a topic,
// which keeps the busiest broker within the cap for every name, at the price
// of a few extra moves when the roster changes: a capped broker that gains or
// loses room changes which partitions overflow to their next choice.
//
// Movement between two placements of a topic counts, over all partitions, the
// replicas of the old list missing from the new one (each is a copy onto a
// new broker; reordering a list moves no data). The necessary movement is, for
// a join, the replicas the newcomer holds afterwards, and for a leave, the
// replicas the leaver held; plain rendezvous moves exactly that. The cap
// factors below are the measured trade-off; placement_test.go reports both
// sides.
const (
	// A broker holds at most ceil(1.3 × R × partitions / brokers) replicas
	// of one topic. Lower factors balance better and move more on a join or
	// leave: over 50 topic names at N = 50 (1000 partitions, R = 3), a cap
	// of 1.2 moves up to 1.25× the necessary replicas on a leave and 1.11×
	// on a join, 1.3 at most 1.07× and 1.08× (TestPlacementTradeoff).
	replicaCapNum, replicaCapDen = 13, 10
	// A broker is the first replica (the preferred leader) of at most
	// ceil(1.2 × partitions / brokers) partitions of one topic, when one of
	// the partition's chosen replicas still has room (else the one leading
	// fewest leads). The leader is only picked among the replicas already
	// chosen, so this never moves a replica, it only reorders the list.
	leaderCapNum, leaderCapDen = 12, 10
)

// PlacementScore is the rendezvous score of one broker for one partition:
//
//	xxhash64( topic bytes || 0x00 || uint32be(partition) || uint32be(brokerID) )
//
// with xxhash64's seed 0 (github.com/cespare/xxhash/v2 Sum64). Topic names never
// contain 0x00, so the encoding is unambiguous. The score never depends on the
// process, the host or the roster's order, so every node and every release that
// keeps this function computes the same placement.
func PlacementScore(topic string, partition int32, broker int32) uint64 {
	var buf [64]byte
	key := buf[:0]
	if len(topic)+9 > len(buf) {
		key = make([]byte, 0, len(topic)+9)
	}
	key = append(key, topic...)
	key = append(key, 0)
	key = binary.BigEndian.AppendUint32(key, uint32(partition))
	key = binary.BigEndian.AppendUint32(key, uint32(broker))
	return xxhash.Sum64(key)
}

// Place returns where plain rendezvous hashing prefers the replicas of one
// partition: the r brokers of roster with the highest PlacementScore, highest
// first (ties, which need a 64-bit collision, go to the lower broker id).
// Duplicate ids in roster count once; when the roster has fewer than r
// brokers, all of them are returned.
//
// Place ignores load; topics are created with PlaceTopic, which starts from
// the same order but skips brokers that already hold their share.
func Place(topic string, partition int32, roster []int32, r int) []int32 {
	brokers := placementRoster(roster)
	if r <= 0 || len(brokers) == 0 {
		return nil
	}
	r = min(r, len(brokers))
	scores := make([]uint64, len(brokers))
	for i, b := range brokers {
		scores[i] = PlacementScore(topic, partition, b)
	}
	order := make([]int, len(brokers))
	for i := range order {
		order[i] = i
	}
	// brokers is ascending, so a stable sort breaks score ties by lower id.
	slices.SortStableFunc(order, func(i, j int) int {
		switch {
		case scores[i] > scores[j]:
			return -1
		case scores[i] < scores[j]:
			return 1
		}
		return 0
	})
	out := make([]int32, r)
	for i := range out {
		out[i] = brokers[order[i]]
	}
	return out
}

// PlaceTopic returns the replicas of every partition of a new topic, each
// list in succession order (its first live broker leads). It is deterministic:
// a pure function of its arguments, whatever the roster's order or
// duplicates, so any node computes the same placement.
//
// It is bounded-load rendezvous hashing. Partitions are taken in order
// 0, 1, 2, …; each takes the r brokers with the highest PlacementScore among
// those still holding fewer than ceil(1.3 × r × partitions / brokers)
// replicas of this topic (if fewer than r have room, which takes an extreme
// draw, the best-scoring full ones make up the rest, so the cap is then
// exceeded rather than the replication factor lowered). The chosen replicas
// are listed by descending score, except that the first is the best-scoring
// one that leads fewer than ceil(1.2 × partitions / brokers) partitions so
// far (or, if none does, the one leading fewest), which spreads preferred
// leaders too: until partitions replicate, the leader holds the data. When
// neither cap binds, every list equals Place's. It hashes every (partition,
// broker) pair once.
//
// r is clamped to the roster's size; r <= 0 or an empty roster yields nil
// lists, and partitions <= 0 yields nil.
func PlaceTopic(topic string, partitions int32, roster []int32, r int) [][]int32 {
	brokers := placementRoster(roster)
	return placeBounded(partitions, brokers, r, func(p int32, i int) uint64 {
		return PlacementScore(topic, p, brokers[i])
	}, replicaCapNum, replicaCapDen, leaderCapNum, leaderCapDen)
}

// placementRoster returns roster's distinct ids, ascending.
func placementRoster(roster []int32) []int32 {
	brokers := slices.Clone(roster)
	slices.Sort(brokers)
	return slices.Compact(brokers)
}

// placeBounded is PlaceTopic over brokers (distinct, ascending) with the score
// of partition p on brokers[i] given by score, and the caps given as
// fractions of the mean. Tests call it with cached scores and other factors
// to measure the trade-off.
func placeBounded(partitions int32, brokers []int32, r int, score func(p int32, i int) uint64,
	capNum, capDen, leadNum, leadDen int) [][]int32 {
	if partitions <= 0 {
		return nil
	}
	out := make([][]int32, partitions)
	n := len(brokers)
	if r <= 0 || n == 0 {
		return out
	}
	r = min(r, n)
	replicaCap := boundedCap(int64(r)*int64(partitions), int64(n), capNum, capDen)
	leaderCap := boundedCap(int64(partitions), int64(n), leadNum, leadDen)

	load := make([]int64, n)
	leads := make([]int64, n)
	scores := make([]uint64, n)
	// open and full collect, in descending score order, the best r brokers
	// with room and the best r without.
	open := make([]int, 0, r)
	full := make([]int, 0, r)
	// higher reports whether brokers[i] ranks before brokers[j]: higher
	// score, then lower id.
	higher := func(i, j int) bool {
		return scores[i] > scores[j] || scores[i] == scores[j] && i < j
	}
	keepBest := func(best []int, i int) []int {
		if len(best) == r && !higher(i, best[r-1]) {
			return best
		}
		if len(best) < r {
			best = append(best, i)
		} else {
			best[r-1] = i
		}
		for k := len(best) - 1; k > 0 && higher(best[k], best[k-1]); k-- {
			best[k], best[k-1] = best[k-1], best[k]
		}
		return best
	}
	for p := range partitions {
		open, full = open[:0], full[:0]
		for i := range n {
			scores[i] = score(p, i)
			if load[i] < replicaCap {
				open = keepBest(open, i)
			} else {
				full = keepBest(full, i)
			}
		}
		chosen := open
		for k := 0; len(chosen) < r; k++ {
			chosen = keepBest(chosen, full[k])
		}
		// The first chosen broker with leadership room moves to the front
		// (if none has room, the one leading fewest); the rest keep their
		// score order.
		lead := 0
		for k, i := range chosen {
			if leads[i] < leaderCap {
				lead = k
				break
			}
			if leads[i] < leads[chosen[lead]] {
				lead = k
			}
		}
		i := chosen[lead]
		copy(chosen[1:lead+1], chosen[:lead])
		chosen[0] = i
		replicas := make([]int32, r)
		for k, i := range chosen {
			replicas[k] = brokers[i]
			load[i]++
		}
		leads[chosen[0]]++
		out[p] = replicas
	}
	return out
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// boundedCap is how many of total items one of n holders may take: the
// smallest fair share, ceil(total/n), plus the slack (num/den - 1) of the mean
// rounded down. Rounding the slack down keeps small topics even (6 partitions
// on 3 brokers: 2 each, not up to 3), while large ones get the full factor.
func boundedCap(total, n int64, num, den int) int64 {
	return ceilDiv(total, n) + int64(num-den)*total/(int64(den)*n)
}
