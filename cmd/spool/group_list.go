package main

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

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listedGroup is one row of group list (and its -o json).
type listedGroup struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

// groupListing is what group list learns: the groups each broker that
// answered coordinates, and the brokers whose groups could not be listed.
type groupListing struct {
	Groups     []listedGroup   `json:"groups"`
	Unanswered []brokerProblem `json:"unanswered,omitempty"`
}

// brokerProblem names a broker whose part of an answer is missing.
type brokerProblem struct {
	Broker int32  `json:"broker"`
	Addr   string `json:"addr,omitempty"`
	Error  string `json:"error"`
	echo   bool   // a live broker's COORDINATOR_NOT_AVAILABLE
}

func newGroupListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups with their state and coordinator",
		Long: `List consumer groups with their state and coordinator. Each broker lists the
groups it coordinates; when some cannot answer (their node is down, or their
__consumer_offsets partitions have no leader), the groups of the others are
still shown, the missing brokers are named on stderr, and the exit status is
non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			// A broker that answers COORDINATOR_NOT_AVAILABLE keeps doing so
			// while a node is down: retry it briefly, then report it.
			cl, err := g.client(ctx, kgo.RetryTimeout(g.timeout/3))
			if err != nil {
				return err
			}
			defer cl.Close()
			lctx, cancel := context.WithTimeout(ctx, g.timeout)
			defer cancel()
			listing := listGroups(lctx, cl)
			if output == "json" {
				if err := writeJSON(cmd.OutOrStdout(), listing); err != nil {
					return err
				}
			} else if err := printGroupList(cmd.OutOrStdout(), listing.Groups); err != nil {
				return err
			}
			if len(listing.Unanswered) > 0 {
				var parts []string
				for _, b := range listing.Unanswered {
					who := fmt.Sprintf("broker %d", b.Broker)
					if b.Addr != "" {
						who += " (" + b.Addr + ")"
					}
					parts = append(parts, who+": "+b.Error)
				}
				return fmt.Errorf("the groups of some brokers could not be listed: %s", joinSemi(parts))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func printGroupList(out io.Writer, groups []listedGroup) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
	for _, lg := range groups {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", lg.Group, lg.State, orDash(lg.ProtocolType), lg.Coordinator)
	}
	return w.Flush()
}

// listGroups asks every live broker for its groups. A broker that answers
// with an error still gives the groups it has (a node that cannot load one
// partition of __consumer_offsets knows the others); a broker that does not
// answer, and a down broker holding __consumer_offsets partitions (the
// cluster no longer lists it, so nobody asks it), are named.
func listGroups(ctx context.Context, cl *kgo.Client) groupListing {
	var l groupListing
	req := kmsg.NewPtrListGroupsRequest()
	for _, shard := range cl.RequestSharded(ctx, req) {
		addr := ""
		if shard.Meta.NodeID >= 0 {
			addr = fmt.Sprintf("%s:%d", shard.Meta.Host, shard.Meta.Port)
		}
		if shard.Err != nil {
			l.Unanswered = append(l.Unanswered, brokerProblem{Broker: shard.Meta.NodeID, Addr: addr, Error: explain(shard.Err)})
			continue
		}
		resp := shard.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			l.Unanswered = append(l.Unanswered, brokerProblem{Broker: shard.Meta.NodeID, Addr: addr, Error: "some of its groups: " + explain(err),
				echo: errors.Is(err, kerr.CoordinatorNotAvailable)})
		}
		for _, g := range resp.Groups {
			l.Groups = append(l.Groups, listedGroup{Group: g.Group, State: g.GroupState, ProtocolType: g.ProtocolType, Coordinator: shard.Meta.NodeID})
		}
	}
	// Retries may have used up ctx; this is one quick question more.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if down := downOffsetsBrokers(dctx, cl, l.Unanswered); len(down) > 0 {
		// A Spool node answers COORDINATOR_NOT_AVAILABLE while any
		// __consumer_offsets partition has no leader, its own groups listed
		// all the same: the down brokers are the news, not that echo.
		l.Unanswered = slices.DeleteFunc(l.Unanswered, func(b brokerProblem) bool { return b.echo })
		l.Unanswered = append(l.Unanswered, down...)
	}
	slices.SortFunc(l.Groups, func(a, b listedGroup) int { return strings.Compare(a.Group, b.Group) })
	slices.SortFunc(l.Unanswered, func(a, b brokerProblem) int { return int(a.Broker - b.Broker) })
	return l
}

// downOffsetsBrokers names the replicas of leaderless __consumer_offsets
// partitions not already named: their groups cannot be listed by anyone.
func downOffsetsBrokers(ctx context.Context, cl *kgo.Client, named []brokerProblem) []brokerProblem {
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
	var out []brokerProblem
	for _, b := range slices.Sorted(maps.Keys(parts)) {
		if slices.ContainsFunc(named, func(x brokerProblem) bool { return x.Broker == b }) {
			continue
		}
		out = append(out, brokerProblem{Broker: b, Error: fmt.Sprintf("down: the groups of __consumer_offsets %s it holds cannot be listed", partitionWord(parts[b]))})
	}
	return out
}
