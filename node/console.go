package node

// The node's side of the live web console (node/admin/console): what its
// sampler reads (the partitions this node leads, with the counters the
// produce and fetch paths keep anyway, and the groups it coordinates,
// described through the coordinator's own Kafka API), how it reaches its
// peers' consoles for the cluster-wide state, and the membership events it
// records for the timeline. Nothing here runs while nobody reads the
// console but the event recorder, which wakes only on membership changes.

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/admin/console"
	"github.com/spool-log/spool/wire"
)

// maxConsoleLocalBody bounds a peer's console answer: MaxSeries series of
// Keep points of ~100 bytes is far less.
const maxConsoleLocalBody = 64 << 20

// newConsole is the node's console over its partitions, groups and peers.
func (n *Node) newConsole() *console.Console {
	cfg := console.DefaultConfig()
	cfg.Source = consoleSource{n}
	cfg.Peers = consolePeers{n}
	cfg.NodeID = n.cfg.NodeID
	cfg.Closing = n.closing
	return console.New(cfg)
}

// recordMemberEvents feeds the console's timeline until the agent closes
// the subscription or the node stops.
func (n *Node) recordMemberEvents(ctx context.Context) {
	events, cancel := n.agent.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			n.console.RecordEvent(n.adminAPI.MemberEvent(ev))
		}
	}
}

// countFetched adds each partition's bytes in a fetch answer to its
// fetched counter, while the console samples; names are the request's
// topics by index, as the answer keeps them.
func (n *Node) countFetched(resp *wire.FetchResponse, names []string) {
	if n.console == nil || !n.console.Sampling() {
		return // nobody looks: no lookup, no count (the first sample's rate is 0 anyway)
	}
	for ti, ft := range resp.Topics {
		if ti >= len(names) {
			return
		}
		for _, fp := range ft.Partitions {
			if fp.Records == nil {
				continue
			}
			if size := fp.Records.Size(); size > 0 {
				if p := n.partition(names[ti], fp.Partition); p != nil {
					p.FetchedBytes.Add(size)
				}
			}
		}
	}
}

// consoleSource is the node as the console's sampler reads it.
type consoleSource struct{ n *Node }

func (s consoleSource) Partitions() []console.PartitionSample {
	var out []console.PartitionSample
	for _, p := range s.n.localPartitions() {
		r := p.Replica
		if !r.IsLeader() {
			continue
		}
		out = append(out, console.PartitionSample{
			Topic: p.Topic, Partition: p.Index,
			Start: r.LogStartOffset(), End: r.HighWatermark(), Bytes: r.Size(),
			ProducedRecords: p.ProducedRecords.Load(), ProducedBytes: p.ProducedBytes.Load(),
			FetchedBytes: p.FetchedBytes.Load(),
		})
	}
	return out
}

// Groups describes the first max groups this node coordinates as `spool
// group describe` would (client/group_describe.go) but from the coordinator
// directly: ListGroups, DescribeGroups or ConsumerGroupDescribe by type,
// and OffsetFetch of all the group's committed offsets.
func (s consoleSource) Groups(max int) ([]console.GroupSample, int) {
	coord, ok := s.n.coords.Groups.Current()
	if !ok {
		return nil, 0 // no group request yet: this node coordinates none
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	listed := coord.ListGroups(lreq).Groups // by name
	var out []console.GroupSample
	for _, lg := range listed[:min(max, len(listed))] {
		g := console.GroupSample{Group: lg.Group, Type: lg.GroupType, State: lg.GroupState, ProtocolType: lg.ProtocolType,
			Members: []console.GroupMember{}, Committed: []console.Committed{}}
		if g.Type == "consumer" {
			describeConsumerGroup(coord.ConsumerGroupDescribe, &g)
		} else {
			describeClassicGroup(coord.DescribeGroups, &g)
		}
		oreq := kmsg.NewPtrOffsetFetchRequest()
		oreq.Version = 7
		oreq.Group = lg.Group // no topics: every committed offset
		for _, t := range coord.OffsetFetch(oreq).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.Offset >= 0 {
					g.Committed = append(g.Committed, console.Committed{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset})
				}
			}
		}
		slices.SortFunc(g.Committed, func(a, b console.Committed) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		out = append(out, g)
	}
	return out, len(listed)
}

func describeClassicGroup(describe func(*kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse, g *console.GroupSample) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{g.Group}
	resp := describe(req)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return
	}
	dg := resp.Groups[0]
	g.Protocol = dg.Protocol
	for _, m := range dg.Members {
		gm := console.GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		// Consumer-protocol assignments only; other protocols' bytes
		// (Connect, ...) mean nothing here.
		if dg.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if a.ReadFrom(m.MemberAssignment) == nil {
				for _, t := range a.Topics {
					gm.Assignment[t.Topic] = sortedPartitions(t.Partitions)
				}
			}
		}
		g.Members = append(g.Members, gm)
	}
}

func describeConsumerGroup(describe func(*kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse, g *console.GroupSample) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g.Group}
	resp := describe(req)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return
	}
	dg := resp.Groups[0]
	g.Protocol = dg.AssignorName
	for _, m := range dg.Members {
		gm := console.GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		for _, t := range m.Assignment.TopicPartitions {
			gm.Assignment[t.Topic] = sortedPartitions(t.Partitions)
		}
		g.Members = append(g.Members, gm)
	}
}

func sortedPartitions(ps []int32) []int32 {
	out := slices.Clone(ps)
	slices.Sort(out)
	return out
}

// consolePeers reaches the other live brokers' consoles.
type consolePeers struct{ n *Node }

func (p consolePeers) Others() []int32 {
	var out []int32
	for id, m := range p.n.agent.LiveBrokers() {
		if id != p.n.cfg.NodeID && m.AdminAddr != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (p consolePeers) Local(ctx context.Context, id int32, q console.Query) (console.Local, error) {
	var out console.Local
	m, ok := p.n.agent.LiveBrokers()[id]
	if !ok || m.AdminAddr == "" {
		return out, fmt.Errorf("broker %d is down or unknown", id)
	}
	if err := p.n.peers.GetJSON(ctx, m.AdminAddr, "/v1/console/local", q.Values(), maxConsoleLocalBody, &out); err != nil {
		return out, fmt.Errorf("broker %d: %w", id, err)
	}
	return out, nil
}
