package membership

import (
	"encoding/binary"
	"sort"

	"github.com/cespare/xxhash/v2"
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

// Place returns the replicas of one partition: the r brokers of roster with the
// highest PlacementScore, highest first (ties, which need a 64-bit collision, go
// to the lower broker id). The order is the succession order for leadership:
// the first live broker of the list leads. Duplicate ids in roster count once;
// when the roster has fewer than r brokers, all of them are returned.
//
// Plain rendezvous hashing moves the least data possible when the roster
// changes: adding a broker only moves the replicas it now wins, removing one
// only moves the replicas it held.
func Place(topic string, partition int32, roster []int32, r int) []int32 {
	if r <= 0 || len(roster) == 0 {
		return nil
	}
	type scored struct {
		broker int32
		score  uint64
	}
	candidates := make([]scored, 0, len(roster))
	seen := make(map[int32]struct{}, len(roster))
	for _, b := range roster {
		if _, dup := seen[b]; dup {
			continue
		}
		seen[b] = struct{}{}
		candidates = append(candidates, scored{b, PlacementScore(topic, partition, b)})
	}
	sort.Slice(candidates, func(i, j int) bool {
		if candidates[i].score != candidates[j].score {
			return candidates[i].score > candidates[j].score
		}
		return candidates[i].broker < candidates[j].broker
	})
	if r > len(candidates) {
		r = len(candidates)
	}
	out := make([]int32, r)
	for i := range out {
		out[i] = candidates[i].broker
	}
	return out
}

// PlaceTopic places every partition of a topic with Place.
func PlaceTopic(topic string, partitions int32, roster []int32, r int) [][]int32 {
	out := make([][]int32, partitions)
	for p := int32(0); p < partitions; p++ {
		out[p] = Place(topic, p, roster, r)
	}
	return out
}
