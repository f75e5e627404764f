package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// describedGroup is one group of group describe -o json.
type describedGroup struct {
	Group        string                 `json:"group"`
	State        string                 `json:"state"`
	ProtocolType string                 `json:"protocol_type"`
	Protocol     string                 `json:"protocol"`
	Coordinator  int32                  `json:"coordinator"`
	Members      []describedGroupMember `json:"members"`
	Offsets      []groupPartitionLag    `json:"offsets"`
	TotalLag     int64                  `json:"total_lag"`
}

type describedGroupMember struct {
	MemberID   string             `json:"member_id"`
	InstanceID *string            `json:"instance_id"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"` // topic -> partitions
}

// groupPartitionLag is a partition's committed offset (-1: none), log end
// and lag (-1: unknown).
type groupPartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	LogEnd    int64  `json:"log_end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
}

func newGroupDescribeCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "describe GROUP...",
		Short:             "Show a group's members, assignments, committed offsets and lag per partition",
		Long:              "Show a group's members, assignments, committed offsets and lag per partition.\nA group with neither members nor committed offsets does not exist: that is an error.",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeGroups(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			ctx, cancel := g.bounded(cmd.Context())
			defer cancel()
			adm, done, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer done()
			lags, err := adm.Lag(ctx, args...)
			if err != nil {
				return fmt.Errorf("describe groups: %s", explain(err))
			}
			var described []describedGroup
			var missing []string
			for _, name := range args {
				l, ok := lags[name]
				if !ok {
					return fmt.Errorf("group %s: no answer from its coordinator", name)
				}
				if err := l.Error(); errors.Is(err, kerr.GroupIDNotFound) {
					missing = append(missing, name) // DescribeGroups v6+ says so itself
					continue
				} else if err != nil {
					return fmt.Errorf("group %s: %s", name, explain(err))
				}
				d := toDescribedGroup(l)
				if (d.State == "Dead" || d.State == "") && len(d.Members) == 0 && !hasCommits(d) {
					missing = append(missing, name)
					continue
				}
				described = append(described, d)
			}
			if output == "json" {
				if described == nil {
					described = []describedGroup{}
				}
				if err := writeJSON(cmd.OutOrStdout(), described); err != nil {
					return err
				}
			} else {
				for i, d := range described {
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					printGroup(cmd.OutOrStdout(), d)
				}
			}
			if len(missing) > 0 {
				word := "group"
				if len(missing) > 1 {
					word = "groups"
				}
				return fmt.Errorf("no %s %s: no members and no committed offsets (spool group list shows the groups there are)", word, strings.Join(missing, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func hasCommits(d describedGroup) bool {
	return slices.ContainsFunc(d.Offsets, func(o groupPartitionLag) bool { return o.Committed >= 0 })
}

func toDescribedGroup(l kadm.DescribedGroupLag) describedGroup {
	d := describedGroup{
		Group: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []describedGroupMember{}, Offsets: []groupPartitionLag{},
	}
	for _, m := range l.Members {
		dm := describedGroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
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
		o := groupPartitionLag{Topic: pl.Topic, Partition: pl.Partition, Committed: -1, LogEnd: pl.End.Offset, Lag: -1}
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

func printGroup(out io.Writer, d describedGroup) {
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

// formatAssignment is "topic[0 1] other[2]", or "-" for none.
func formatAssignment(a map[string][]int32) string {
	var parts []string
	for t, ps := range a {
		parts = append(parts, t+formatBrokers(ps))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
