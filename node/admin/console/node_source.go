package console

// The broker's side of its console: what the sampler reads (the partitions
// the node leads, with the counters the produce and fetch paths keep
// anyway, and the groups it coordinates, described through the
// coordinator's own Kafka API) and how it reaches its peers' consoles for
// the cluster-wide state. Nothing here runs while nobody reads the console.

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/hosted"
)

// maxLocalBody bounds a peer's console answer: MaxSeries series of Keep
// points of ~100 bytes is far less.
const maxLocalBody = 64 << 20

// Coordinator is the group coordinator (node/group) as the sampler asks
// it, through its own Kafka API.
type Coordinator interface {
	ListGroups(*kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse
	DescribeGroups(*kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse
	ConsumerGroupDescribe(*kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse
	OffsetFetch(*kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse
}

// NodeSource is the Source a broker gives its console: the partitions it
// hosts (those it leads are sampled) and its group coordinator (nil while
// it has none: no group request yet).
type NodeSource struct {
	Hosted      func() []*hosted.Partition
	Coordinator func() Coordinator
}

var _ Source = NodeSource{}

// Partitions are the hosted partitions this node leads, with the counters
// the produce and fetch paths keep anyway.
func (s NodeSource) Partitions() []PartitionSample {
	var out []PartitionSample
	for _, p := range s.Hosted() {
		r := p.Replica
		if !r.IsLeader() {
			continue
		}
		out = append(out, PartitionSample{
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
func (s NodeSource) Groups(max int) ([]GroupSample, int) {
	coord := s.Coordinator()
	if coord == nil {
		return nil, 0 // no group request yet: this node coordinates none
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	listed := coord.ListGroups(lreq).Groups // by name
	var out []GroupSample
	for _, lg := range listed[:min(max, len(listed))] {
		g := GroupSample{Group: lg.Group, Type: lg.GroupType, State: lg.GroupState, ProtocolType: lg.ProtocolType,
			Members: []GroupMember{}, Committed: []Committed{}}
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
					g.Committed = append(g.Committed, Committed{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset})
				}
			}
		}
		slices.SortFunc(g.Committed, func(a, b Committed) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		out = append(out, g)
	}
	return out, len(listed)
}

func describeClassicGroup(describe func(*kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse, g *GroupSample) {
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
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
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

func describeConsumerGroup(describe func(*kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse, g *GroupSample) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g.Group}
	resp := describe(req)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return
	}
	dg := resp.Groups[0]
	g.Protocol = dg.AssignorName
	for _, m := range dg.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
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

// NodePeers reaches the other live brokers' consoles through their admin
// APIs (GetJSON: node/peers').
type NodePeers struct {
	Self    int32
	Live    func() map[int32]membership.Member
	GetJSON func(ctx context.Context, addr, path string, query url.Values, limit int64, out any) error
}

var _ Peers = NodePeers{}

// Others are the live brokers with an admin API but this one.
func (p NodePeers) Others() []int32 {
	var out []int32
	for id, m := range p.Live() {
		if id != p.Self && m.AdminAddr != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Local asks broker id for its Local.
func (p NodePeers) Local(ctx context.Context, id int32, q Query) (Local, error) {
	var out Local
	m, ok := p.Live()[id]
	if !ok || m.AdminAddr == "" {
		return out, fmt.Errorf("broker %d is down or unknown", id)
	}
	if err := p.GetJSON(ctx, m.AdminAddr, "/v1/console/local", q.Values(), maxLocalBody, &out); err != nil {
		return out, fmt.Errorf("broker %d: %w", id, err)
	}
	return out, nil
}
