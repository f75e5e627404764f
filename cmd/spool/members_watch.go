package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spool-log/spool/node/admin"
)

// watchMembers prints the members, then streams /v1/members/watch: each
// event as one line of text, or as the node's JSON line with -o json. When
// the stream ends it goes on through another member it knows to be alive.
func watchMembers(ctx context.Context, g *globals, out, status io.Writer, output string) error {
	known := map[string]admin.MemberInfo{}
	addr := g.adminAddr
	first := true
	for {
		g2 := *g
		g2.adminAddr = addr
		subscribed, err := watchOnce(ctx, &g2, out, status, output, known, first)
		if ctx.Err() != nil {
			return nil // interrupted: the normal way to stop watching
		}
		if first && !subscribed {
			return err // the node asked for does not answer: say so
		}
		first = false
		next, ok := nextWatchAddr(ctx, g, known, addr)
		if !ok {
			return fmt.Errorf("watch members: %v, and no other live member's admin API answers", err)
		}
		fmt.Fprintf(status, "spool: the node at %s stopped answering (%v); watching through %s\n", addr, err, next)
		addr = next
	}
}

// watchOnce subscribes at g.adminAddr, prints the members (all of them the
// first time, what differs from known later), then the events until the
// stream ends.
func watchOnce(ctx context.Context, g *globals, out, status io.Writer, output string, known map[string]admin.MemberInfo, first bool) (subscribed bool, err error) {
	// Subscribe before listing, so no event between the two is missed.
	resp, cancel, err := g.adminDo(ctx, "GET", "/v1/members/watch", true)
	if err != nil {
		return false, err
	}
	defer cancel()
	defer resp.Body.Close()
	var members []admin.MemberInfo
	if err := g.adminJSON(ctx, "GET", "/v1/members", &members); err != nil {
		return false, err
	}
	if first {
		fmt.Fprintf(status, "watching membership events at %s; interrupt to stop\n", g.adminAddr)
		if output == "json" {
			for _, m := range members {
				line, _ := json.Marshal(admin.MemberEvent{Type: "member", Member: m})
				fmt.Fprintf(out, "%s\n", line)
			}
		} else {
			printMembers(out, members)
		}
		for _, m := range members {
			known[m.Name] = m
		}
	} else {
		for _, m := range members {
			if old, ok := known[m.Name]; !ok || changes(old, m) != nil {
				printEvent(out, output, admin.MemberEvent{Type: "update", Member: m}, known)
			}
		}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev admin.MemberEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return true, fmt.Errorf("decode member event %q: %w", sc.Bytes(), err)
		}
		printEvent(out, output, ev, known)
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	return true, fmt.Errorf("stream closed")
}

// printEvent prints ev and records its member in known. In text, an update
// that changes nothing shown is left out, and one that does says what.
func printEvent(out io.Writer, output string, ev admin.MemberEvent, known map[string]admin.MemberInfo) {
	old, had := known[ev.Member.Name]
	known[ev.Member.Name] = ev.Member
	if output == "json" {
		line, _ := json.Marshal(ev)
		fmt.Fprintf(out, "%s\n", line)
		return
	}
	var changed []string
	if ev.Type == "update" && had {
		if changed = changes(old, ev.Member); changed == nil {
			return
		}
	}
	m := ev.Member
	when := "-"
	if !ev.Time.IsZero() {
		when = ev.Time.Format("2006-01-02T15:04:05.000Z07:00")
	}
	line := fmt.Sprintf("%s  %-6s  %s  id=%d  status=%s  kafka=%s  gossip=%s  rack=%s",
		when, ev.Type, m.Name, m.ID, m.Status, m.KafkaAddr, m.GossipAddr, orDash(m.Rack))
	if changed != nil {
		line += "  changed: " + strings.Join(changed, ", ")
	}
	fmt.Fprintln(out, line)
}

// changes lists what differs between two views of a member, as
// "field old→new"; nil when nothing does.
func changes(a, b admin.MemberInfo) []string {
	var out []string
	diff := func(name string, x, y any) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %v→%v", name, x, y))
		}
	}
	diff("status", a.Status, b.Status)
	diff("id", a.ID, b.ID)
	diff("kafka", a.KafkaAddr, b.KafkaAddr)
	diff("admin", a.AdminAddr, b.AdminAddr)
	diff("gossip", a.GossipAddr, b.GossipAddr)
	diff("rack", orDash(a.Rack), orDash(b.Rack))
	diff("generation", a.Generation, b.Generation)
	diff("led", a.PartitionsLed, b.PartitionsLed)
	return out
}

// nextWatchAddr is the admin address of a live member, other than the one
// that went away, whose API answers.
func nextWatchAddr(ctx context.Context, g *globals, known map[string]admin.MemberInfo, gone string) (string, bool) {
	var cands []string
	for _, m := range known {
		if m.Status == "alive" && m.AdminAddr != "" && m.AdminAddr != gone {
			cands = append(cands, m.AdminAddr)
		}
	}
	slices.Sort(cands)
	for _, a := range cands {
		g2 := *g
		g2.adminAddr = a
		var ms []admin.MemberInfo
		if g2.adminJSON(ctx, "GET", "/v1/members", &ms) == nil {
			return a, true
		}
	}
	return "", false
}
