package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spool-log/spool/adminapi"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// describeShareGroup describes name as a share group (KIP-932), false
// when it is none: its members and their assignments, and per partition
// the share-partition start offset (in Committed: what every record below
// it is, acknowledged or archived), the log end, the lag, and the
// in-flight count from each partition's leader (shareInFlight).
func (g Config) describeShareGroup(ctx context.Context, adm *kadm.Client, name string) (DescribedGroup, bool, error) {
	d := DescribedGroup{Group: name, ProtocolType: "share", Members: []DescribedGroupMember{}, Offsets: []GroupPartitionLag{}}
	described, err := adm.DescribeShareGroups(ctx, name)
	if err != nil {
		return d, false, err
	}
	sg, ok := described[name]
	if !ok || errors.Is(sg.Err, kerr.GroupIDNotFound) {
		return d, false, nil
	}
	if sg.Err != nil {
		return d, false, sg.Err
	}
	d.State, d.Protocol, d.Coordinator = sg.GroupState, sg.Assignor, sg.Coordinator.NodeID
	for _, m := range sg.Members {
		dm := DescribedGroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
		for t, ps := range m.Assignment {
			for p := range ps {
				dm.Assignment[t] = append(dm.Assignment[t], p)
			}
			slices.Sort(dm.Assignment[t])
		}
		d.Members = append(d.Members, dm)
	}
	offsets, err := adm.DescribeShareGroupOffsets(ctx, name)
	if err != nil {
		return d, true, err
	}
	if o, ok := offsets[name]; ok && o.Err == nil {
		for _, so := range o.Offsets.Sorted() {
			gl := GroupPartitionLag{Topic: so.Topic, Partition: so.Partition, Committed: so.StartOffset, LogEnd: -1, Lag: so.Lag}
			if so.StartOffset >= 0 && so.Lag >= 0 {
				gl.LogEnd = so.StartOffset + so.Lag
				d.TotalLag += so.Lag
			}
			d.Offsets = append(d.Offsets, gl)
		}
	}
	g.shareInFlight(ctx, adm, name, d.Offsets)
	return d, true, nil
}

// shareInFlight fills each partition's InFlight from the admin API of the
// partition's leader (GET /v1/share-groups/{group}), which alone keeps the
// in-flight window: no Kafka API carries its count. It needs an admin
// address (--admin) to learn the leaders' admin addresses from; without
// one, or for a leader that does not answer, InFlight stays unknown
// rather than failing the describe, whose Kafka half has answered.
func (g Config) shareInFlight(ctx context.Context, adm *kadm.Client, group string, offsets []GroupPartitionLag) {
	if len(offsets) == 0 || strings.TrimSpace(g.AdminAddr) == "" {
		return
	}
	members, err := g.Members(ctx)
	if err != nil {
		return
	}
	adminOf := map[int32]string{}
	for _, m := range members {
		if m.AdminAddr != "" {
			adminOf[m.ID] = m.AdminAddr
		}
	}
	var topics []string
	for _, o := range offsets {
		if !slices.Contains(topics, o.Topic) {
			topics = append(topics, o.Topic)
		}
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return
	}
	asked := map[int32]map[string]adminapi.SharePartition{} // leader → topic/partition → its answer
	for i := range offsets {
		o := &offsets[i]
		p, ok := md.Topics[o.Topic].Partitions[o.Partition]
		if !ok || p.Err != nil || p.Leader < 0 {
			continue
		}
		parts, ok := asked[p.Leader]
		if !ok {
			parts = g.leaderSharePartitions(ctx, adminOf[p.Leader], group)
			asked[p.Leader] = parts
		}
		if sp, ok := parts[fmt.Sprintf("%s/%d", o.Topic, o.Partition)]; ok {
			o.InFlight = &sp.InFlight
		}
	}
}

// leaderSharePartitions is what the node at admin (host:port, as members
// advertise it) says of group's share partitions it leads, by
// "topic/partition"; nil when it does not answer.
func (g Config) leaderSharePartitions(ctx context.Context, admin, group string) map[string]adminapi.SharePartition {
	if admin == "" {
		return nil
	}
	if strings.HasPrefix(strings.TrimSpace(g.AdminAddr), "https://") {
		admin = "https://" + admin // an https admin API is https on every node
	}
	g.AdminAddr = admin
	var parts []adminapi.SharePartition
	if err := g.adminJSON(ctx, "GET", "/v1/share-groups/"+url.PathEscape(group), &parts); err != nil {
		return nil
	}
	out := make(map[string]adminapi.SharePartition, len(parts))
	for _, sp := range parts {
		out[fmt.Sprintf("%s/%d", sp.Topic, sp.Partition)] = sp
	}
	return out
}

// writeShareOffsets prints a share group's partitions: the share-partition
// start offset (every record below it acknowledged or archived), the log
// end, the lag and the records in flight.
func (d DescribedGroup) writeShareOffsets(out io.Writer) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tSTART-OFFSET\tLOG-END\tLAG\tIN-FLIGHT")
	for _, o := range d.Offsets {
		start, end, lag, inFlight := "-", "-", "-", "-"
		if o.Committed >= 0 {
			start = fmt.Sprint(o.Committed)
		}
		if o.LogEnd >= 0 {
			end = fmt.Sprint(o.LogEnd)
		}
		if o.Lag >= 0 {
			lag = fmt.Sprint(o.Lag)
		}
		if o.InFlight != nil {
			inFlight = fmt.Sprint(*o.InFlight)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", o.Topic, o.Partition, start, end, lag, inFlight)
	}
	w.Flush()
}
