package group

import (
	"cmp"
	"slices"
)

// The server-side assignors of the consumer protocol, named as Kafka names
// them. "uniform" (the default) spreads every subscribed partition evenly
// over the members subscribed to its topic and keeps a partition where it
// was when that stays balanced, so a rebalance moves as little as it can;
// "range" gives each member a contiguous range of every topic it
// subscribes to, as the classic client-side range assignor does.
const (
	uniformAssignor = "uniform"
	rangeAssignor   = "range"
)

func knownAssignor(name string) bool { return name == uniformAssignor || name == rangeAssignor }

// groupAssignor is the assignor the members ask for, the most requested one
// winning (ties to the name that sorts first), uniform if none asks.
func groupAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best, n := uniformAssignor, 0
	for name, v := range votes {
		if v > n || v == n && name < best {
			best, n = name, v
		}
	}
	return best
}

func assign(assignor string, cg *consumerGroup) map[string]tpSet {
	out := make(map[string]tpSet, len(cg.members))
	for id := range cg.members {
		out[id] = tpSet{}
	}
	if assignor == rangeAssignor {
		assignRange(cg, out)
	} else {
		assignUniform(cg, out)
	}
	return out
}

// subscribers returns, per topic known to the group, the ids of the members
// subscribed to it, sorted.
func subscribers(cg *consumerGroup) (topics []string, subs map[string][]string) {
	subs = make(map[string][]string)
	for _, m := range cg.sortedMembers() {
		for _, t := range m.topics() {
			if _, ok := cg.topics[t]; ok {
				subs[t] = append(subs[t], m.id)
			}
		}
	}
	for t := range subs {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	return topics, subs
}

func assignRange(cg *consumerGroup, out map[string]tpSet) {
	topics, subs := subscribers(cg)
	for _, t := range topics {
		ms := subs[t]
		n := cg.topics[t].partitions
		per, extra := n/int32(len(ms)), n%int32(len(ms))
		p := int32(0)
		for i, id := range ms {
			count := per
			if int32(i) < extra {
				count++
			}
			for range count {
				out[id][tp{t, p}] = struct{}{}
				p++
			}
		}
	}
}

func assignUniform(cg *consumerGroup, out map[string]tpSet) {
	topics, subs := subscribers(cg)
	var all []tp
	for _, t := range topics {
		for p := range cg.topics[t].partitions {
			all = append(all, tp{t, p})
		}
	}
	if len(all) == 0 {
		return
	}
	subscribed := func(id string, t string) bool { return slices.Contains(subs[t], id) }
	// Each member's fair share of the partitions it can take, for the
	// common case of one subscription; with different subscriptions the
	// quota is only an upper bound for stickiness and the greedy pass
	// below balances.
	eligible := 0
	for _, m := range cg.members {
		if len(m.topics()) > 0 {
			eligible++
		}
	}
	quota := (len(all) + max(eligible, 1) - 1) / max(eligible, 1)

	taken := map[tp]bool{}
	// Sticky: a member keeps what it holds now, up to its quota.
	for _, m := range cg.sortedMembers() {
		var mine []tp
		for p := range m.assigned {
			mine = append(mine, p)
		}
		for p := range m.revoking {
			mine = append(mine, p)
		}
		slices.SortFunc(mine, cmpTP)
		for _, p := range mine {
			if len(out[m.id]) >= quota {
				break
			}
			if _, ok := cg.topics[p.topic]; !ok || p.partition >= cg.topics[p.topic].partitions || !subscribed(m.id, p.topic) || taken[p] {
				continue
			}
			out[m.id][p] = struct{}{}
			taken[p] = true
		}
	}
	// Every other partition goes to the subscribed member holding the
	// fewest, ties to the smallest id.
	for _, p := range all {
		if taken[p] {
			continue
		}
		best := ""
		for _, id := range subs[p.topic] {
			if best == "" || len(out[id]) < len(out[best]) {
				best = id
			}
		}
		out[best][p] = struct{}{}
	}
}

func cmpTP(a, b tp) int {
	if c := cmp.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}
