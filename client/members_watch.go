package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spool-log/spool/adminapi"
)

// MemberWatch is told what WatchMembers sees.
type MemberWatch struct {
	// Members is the first listing, from the node at addr, taken once the
	// watch is subscribed so no event between the two is missed.
	Members func(addr string, members []adminapi.MemberInfo)
	// Event is a membership event; old is the member as known before it
	// (had false: not known). After a move to another node, members that
	// differ from what was known come as "update" events.
	Event func(ev adminapi.MemberEvent, old adminapi.MemberInfo, had bool)
	// Moved says the watch goes on through another node.
	Moved func(from, to string, err error)
}

// WatchMembers lists the members, then streams /v1/members/watch until ctx
// ends. When the stream ends it goes on through another member it knows to
// be alive; it returns an error only when the first node does not answer or
// no other live member's admin API does.
func (g Config) WatchMembers(ctx context.Context, w MemberWatch) error {
	known := map[string]adminapi.MemberInfo{}
	first := true
	for {
		subscribed, err := g.watchOnce(ctx, w, known, first)
		if ctx.Err() != nil {
			return nil // interrupted: the normal way to stop watching
		}
		if first && !subscribed {
			return err // the node asked for does not answer: say so
		}
		first = false
		next, ok := g.nextWatchAddr(ctx, known)
		if !ok {
			return fmt.Errorf("watch members: %v, and no other live member's admin API answers", err)
		}
		w.Moved(g.AdminAddr, next, err)
		g.AdminAddr = next
	}
}

// watchOnce subscribes at g.AdminAddr, reports the members (all of them the
// first time, what differs from known later), then the events until the
// stream ends.
func (g Config) watchOnce(ctx context.Context, w MemberWatch, known map[string]adminapi.MemberInfo, first bool) (subscribed bool, err error) {
	// Subscribe before listing, so no event between the two is missed.
	resp, cancel, err := g.adminDo(ctx, "GET", "/v1/members/watch", true)
	if err != nil {
		return false, err
	}
	defer cancel()
	defer resp.Body.Close()
	members, err := g.Members(ctx)
	if err != nil {
		return false, err
	}
	event := func(ev adminapi.MemberEvent) {
		old, had := known[ev.Member.Name]
		known[ev.Member.Name] = ev.Member
		w.Event(ev, old, had)
	}
	if first {
		w.Members(g.AdminAddr, members)
		for _, m := range members {
			known[m.Name] = m
		}
	} else {
		for _, m := range members {
			if old, ok := known[m.Name]; !ok || Changes(old, m) != nil {
				event(adminapi.MemberEvent{Type: "update", Member: m})
			}
		}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev adminapi.MemberEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return true, fmt.Errorf("decode member event %q: %w", sc.Bytes(), err)
		}
		event(ev)
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	return true, fmt.Errorf("stream closed")
}

// Changes lists what differs between two views of a member, as
// "field old→new"; nil when nothing does.
func Changes(a, b adminapi.MemberInfo) []string {
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
func (g Config) nextWatchAddr(ctx context.Context, known map[string]adminapi.MemberInfo) (string, bool) {
	var cands []string
	for _, m := range known {
		// Members advertise host:port; an https:// admin API stays https.
		addr := m.AdminAddr
		if strings.HasPrefix(g.AdminAddr, "https://") {
			addr = "https://" + addr
		}
		// A joining member (alive, not serving Kafka yet) answers on its
		// admin API all the same.
		if (m.Status == "alive" || m.Status == adminapi.StatusJoining) && m.AdminAddr != "" && addr != g.AdminAddr {
			cands = append(cands, addr)
		}
	}
	slices.Sort(cands)
	for _, a := range cands {
		g2 := g
		g2.AdminAddr = a
		if _, err := g2.Members(ctx); err == nil {
			return a, true
		}
	}
	return "", false
}
