package client

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// describeShareGroup describes name as a share group (KIP-932), false
// when it is none: its members and their assignments, and per partition
// the share-partition start offset (in Committed: what every record below
// it is, acknowledged or archived), the log end and the lag.
func describeShareGroup(ctx context.Context, adm *kadm.Client, name string) (DescribedGroup, bool, error) {
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
	return d, true, nil
}
