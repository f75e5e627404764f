package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListedGroup is one group a broker coordinates.
type ListedGroup struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

// GroupListing is what ListGroups learns: the groups each broker that
// answered coordinates, and the brokers whose groups could not be listed.
type GroupListing struct {
	Groups     []ListedGroup   `json:"groups"`
	Unanswered []BrokerProblem `json:"unanswered,omitempty"`
}

// BrokerProblem names a broker whose part of an answer is missing.
type BrokerProblem struct {
	Broker int32  `json:"broker"`
	Addr   string `json:"addr,omitempty"`
	Error  string `json:"error"`
	echo   bool   // a live broker's COORDINATOR_NOT_AVAILABLE
}

// ListGroups asks every live broker for the groups it coordinates. When
// some cannot answer (their node is down, or their __consumer_offsets
// partitions have no leader), the groups of the others are listed and the
// missing brokers named in Unanswered; see GroupListing.Err.
func (g Config) ListGroups(ctx context.Context) (GroupListing, error) {
	// A broker that answers COORDINATOR_NOT_AVAILABLE keeps doing so while
	// a node is down: retry it briefly, then report it.
	cl, err := g.Kafka(ctx, kgo.RetryTimeout(g.Timeout/3))
	if err != nil {
		return GroupListing{}, err
	}
	defer cl.Close()
	lctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	return listGroups(lctx, cl), nil
}

// Err names the brokers whose groups could not be listed; nil when all were.
func (l GroupListing) Err() error {
	if len(l.Unanswered) == 0 {
		return nil
	}
	var parts []string
	for _, b := range l.Unanswered {
		who := fmt.Sprintf("broker %d", b.Broker)
		if b.Addr != "" {
			who += " (" + b.Addr + ")"
		}
		parts = append(parts, who+": "+b.Error)
	}
	return fmt.Errorf("the groups of some brokers could not be listed: %s", joinSemi(parts))
}

// WriteTable prints the groups as a table.
func (l GroupListing) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
	for _, lg := range l.Groups {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", lg.Group, lg.State, orDash(lg.ProtocolType), lg.Coordinator)
	}
	return w.Flush()
}

// listGroups asks every live broker for its groups. A broker that answers
// with an error still gives the groups it has (a node that cannot load one
// partition of __consumer_offsets knows the others); a broker that does not
// answer, and a down broker holding __consumer_offsets partitions (the
// cluster no longer lists it, so nobody asks it), are named.
func listGroups(ctx context.Context, cl *kgo.Client) GroupListing {
	var l GroupListing
	req := kmsg.NewPtrListGroupsRequest()
	for _, shard := range cl.RequestSharded(ctx, req) {
		addr := ""
		if shard.Meta.NodeID >= 0 {
			addr = fmt.Sprintf("%s:%d", shard.Meta.Host, shard.Meta.Port)
		}
		if shard.Err != nil {
			l.Unanswered = append(l.Unanswered, BrokerProblem{Broker: shard.Meta.NodeID, Addr: addr, Error: explain(shard.Err)})
			continue
		}
		resp := shard.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			l.Unanswered = append(l.Unanswered, BrokerProblem{Broker: shard.Meta.NodeID, Addr: addr, Error: "some of its groups: " + explain(err),
				echo: errors.Is(err, kerr.CoordinatorNotAvailable)})
		}
		for _, g := range resp.Groups {
			l.Groups = append(l.Groups, ListedGroup{Group: g.Group, State: g.GroupState, ProtocolType: g.ProtocolType, Coordinator: shard.Meta.NodeID})
		}
	}
	// Retries may have used up ctx; this is one quick question more.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if down := downOffsetsBrokers(dctx, cl, l.Unanswered); len(down) > 0 {
		// A Spool node answers COORDINATOR_NOT_AVAILABLE while a
		// __consumer_offsets partition it holds a replica of has no leader
		// (older nodes: any partition), its other groups listed all the
		// same: the down brokers are the news, not that echo.
		l.Unanswered = slices.DeleteFunc(l.Unanswered, func(b BrokerProblem) bool { return b.echo })
		l.Unanswered = append(l.Unanswered, down...)
	}
	slices.SortFunc(l.Groups, func(a, b ListedGroup) int { return strings.Compare(a.Group, b.Group) })
	slices.SortFunc(l.Unanswered, func(a, b BrokerProblem) int { return int(a.Broker - b.Broker) })
	return l
}

// downOffsetsBrokers names the replicas of leaderless __consumer_offsets
// partitions not already named: their groups cannot be listed by anyone.
func downOffsetsBrokers(ctx context.Context, cl *kgo.Client, named []BrokerProblem) []BrokerProblem {
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "__consumer_offsets")
	if err != nil {
		return nil
	}
	td, ok := topics["__consumer_offsets"]
	if !ok || td.Err != nil {
		return nil
	}
	live := map[int32]bool{}
	if brokers, err := kadm.NewClient(cl).ListBrokers(ctx); err == nil {
		for _, b := range brokers {
			live[b.NodeID] = true
		}
	}
	parts := map[int32][]int32{} // down broker -> leaderless partitions it holds
	for _, p := range td.Partitions.Sorted() {
		if p.Leader >= 0 {
			continue
		}
		for _, r := range p.Replicas {
			if !live[r] {
				parts[r] = append(parts[r], p.Partition)
			}
		}
	}
	var out []BrokerProblem
	for _, b := range slices.Sorted(maps.Keys(parts)) {
		if slices.ContainsFunc(named, func(x BrokerProblem) bool { return x.Broker == b }) {
			continue
		}
		out = append(out, BrokerProblem{Broker: b, Error: fmt.Sprintf("down: the groups of __consumer_offsets %s it holds cannot be listed", partitionWord(parts[b]))})
	}
	return out
}
