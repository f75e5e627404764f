package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// DescribedGroup is a group, its members and its offsets.
type DescribedGroup struct {
	Group        string                 `json:"group"`
	State        string                 `json:"state"`
	ProtocolType string                 `json:"protocol_type"`
	Protocol     string                 `json:"protocol"`
	Coordinator  int32                  `json:"coordinator"`
	Members      []DescribedGroupMember `json:"members"`
	Offsets      []GroupPartitionLag    `json:"offsets"`
	TotalLag     int64                  `json:"total_lag"`
}

type DescribedGroupMember struct {
	MemberID   string             `json:"member_id"`
	InstanceID *string            `json:"instance_id"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"` // topic -> partitions
}

// GroupPartitionLag is a partition's committed offset (-1: none), log end
// and lag (-1: unknown).
type GroupPartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	LogEnd    int64  `json:"log_end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
	// InFlight is a share group's records in flight on the partition
	// (acquired, or available for redelivery), as its leader counts them;
	// nil for other groups, or when no admin address was given or the
	// leader did not answer.
	InFlight *int `json:"in_flight,omitempty"`
}

// GroupDescriptions is what DescribeGroups learns: the groups that exist,
// and the names asked for that are no group.
type GroupDescriptions struct {
	Groups  DescribedGroups
	Missing []string
}

// DescribeGroups describes each named group: members, assignments,
// committed offsets and lag per partition. A group with neither members
// nor committed offsets does not exist: it is in Missing (see Err).
func (g Config) DescribeGroups(ctx context.Context, names []string) (GroupDescriptions, error) {
	var d GroupDescriptions
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return d, err
	}
	defer done()
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return d, fmt.Errorf("describe groups: %s", explain(err))
	}
	for _, name := range names {
		l, ok := lags[name]
		if !ok {
			return d, fmt.Errorf("group %s: no answer from its coordinator", name)
		}
		err := l.Error()
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return d, fmt.Errorf("group %s: %s", name, explain(err))
		}
		dg := toDescribedGroup(l)
		if errors.Is(err, kerr.GroupIDNotFound) || ((dg.State == "Dead" || dg.State == "") && len(dg.Members) == 0 && !hasCommits(dg)) {
			// Not a classic or consumer group: perhaps a share group
			// (group_describe_share.go).
			sg, ok, serr := g.describeShareGroup(ctx, adm, name)
			if serr != nil && (errors.Is(serr, kerr.UnsupportedVersion) || strings.Contains(serr.Error(), "too old")) {
				ok, serr = false, nil // a broker without share groups: none is one
			}
			if serr != nil {
				return d, fmt.Errorf("share group %s: %s", name, explain(serr))
			}
			if !ok {
				d.Missing = append(d.Missing, name)
				continue
			}
			dg = sg
		}
		d.Groups = append(d.Groups, dg)
	}
	if d.Groups == nil {
		d.Groups = DescribedGroups{}
	}
	return d, nil
}

// Err names the groups that do not exist; nil when all do.
func (d GroupDescriptions) Err() error {
	if len(d.Missing) == 0 {
		return nil
	}
	word := "group"
	if len(d.Missing) > 1 {
		word = "groups"
	}
	return fmt.Errorf("no %s %s: no members and no committed offsets (spool group list shows the groups there are)", word, strings.Join(d.Missing, ", "))
}

// DescribedGroups is the groups DescribeGroups found.
type DescribedGroups []DescribedGroup

// WriteTable prints each group, a blank line between two.
func (ds DescribedGroups) WriteTable(out io.Writer) error {
	for i, dg := range ds {
		if i > 0 {
			fmt.Fprintln(out)
		}
		dg.WriteTable(out)
	}
	return nil
}

func hasCommits(d DescribedGroup) bool {
	return slices.ContainsFunc(d.Offsets, func(o GroupPartitionLag) bool { return o.Committed >= 0 })
}

func toDescribedGroup(l kadm.DescribedGroupLag) DescribedGroup {
	d := DescribedGroup{
		Group: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []DescribedGroupMember{}, Offsets: []GroupPartitionLag{},
	}
	for _, m := range l.Members {
		dm := DescribedGroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				dm.Assignment[t.Topic] = ps
			}
		}
		d.Members = append(d.Members, dm)
	}
	for _, pl := range l.Lag.Sorted() {
		o := GroupPartitionLag{Topic: pl.Topic, Partition: pl.Partition, Committed: -1, LogEnd: pl.End.Offset, Lag: -1}
		if pl.Commit.At >= 0 {
			o.Committed = pl.Commit.At
		}
		if pl.Lag >= 0 {
			o.Lag = pl.Lag
		}
		if pl.Member != nil {
			o.Member = pl.Member.MemberID
		}
		d.Offsets = append(d.Offsets, o)
	}
	d.TotalLag = l.Lag.Total()
	return d
}

// WriteTable prints the group: a summary line, its members, its offsets.
func (d DescribedGroup) WriteTable(out io.Writer) {
	fmt.Fprintf(out, "group %s  state %s  protocol %s/%s  coordinator %d  members %d  total lag %d\n",
		d.Group, d.State, d.ProtocolType, d.Protocol, d.Coordinator, len(d.Members), d.TotalLag)
	if len(d.Members) > 0 {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MEMBER\tINSTANCE\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range d.Members {
			instance := "-"
			if m.InstanceID != nil {
				instance = *m.InstanceID
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, instance, m.ClientID, m.Host, formatAssignment(m.Assignment))
		}
		w.Flush()
	}
	if d.ProtocolType == "share" {
		d.writeShareOffsets(out)
		return
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	for _, o := range d.Offsets {
		committed, lag := "-", "-"
		if o.Committed >= 0 {
			committed = fmt.Sprint(o.Committed)
		}
		if o.Lag >= 0 {
			lag = fmt.Sprint(o.Lag)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\t%s\n", o.Topic, o.Partition, committed, o.LogEnd, lag, orDash(o.Member))
	}
	w.Flush()
}
