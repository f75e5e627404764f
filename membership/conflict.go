package membership

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/serf/serf"
)

var (
	// ErrDuplicateBrokerID means another member claims this broker id.
	ErrDuplicateBrokerID = errors.New("duplicate broker id")
	// ErrDuplicateName means another member, at another address, claims
	// this member name.
	ErrDuplicateName = errors.New("duplicate member name")
)

// conflictGuard is Serf's merge delegate. It refuses, on both sides of a
// join, any member that would give the cluster two live owners of one broker
// id or one name:
//
//   - the joining node refuses a remote state holding its own broker id under
//     another name, or its own name at another address, unless that member
//     left. It cannot tell a failed member from a live one there, so a node
//     whose id still belongs to a failed member stays out until that member
//     is removed (Agent.RemoveFailed) or reaped. Join returns the error and
//     Health and Refusal report it. The rejoin of the snapshot's members
//     at start is such a join too (rejoin.go).
//   - the existing nodes refuse alive messages and push/pull states naming a
//     member whose id or name belongs to another member they see alive; the
//     refusal is logged as an error. A refusal counts against this node only
//     while it is joining (outgoing), so a node alone in its cluster that
//     refuses an impostor stays healthy.
//
// Two nodes joining at the same instant through different seeds can slip past
// both checks; the event loop then finds the duplicate among alive members,
// logs it and Health reports it until one of them goes.
type conflictGuard struct {
	agent *Agent

	mu       sync.Mutex
	view     map[string]guardMember // by name, from member events
	last     error                  // latest refusal concerning this node
	loggedAt map[string]time.Time   // rate limit of refusal logs, by member
	outgoing int                    // joins of this node under way (Join, the snapshot rejoin)
}

type guardMember struct {
	id    int32
	addr  string
	alive bool
}

func newConflictGuard(a *Agent) *conflictGuard {
	return &conflictGuard{agent: a, view: map[string]guardMember{}, loggedAt: map[string]time.Time{}}
}

func memberAddr(ip net.IP, port uint16) string {
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}

// observe records a member's state from a member event.
func (g *conflictGuard) observe(m serf.Member, gone bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gone {
		delete(g.view, m.Name)
		return
	}
	id, err := parseBrokerID(m.Tags)
	if err != nil {
		id = -1
	}
	g.view[m.Name] = guardMember{id: id, addr: memberAddr(m.Addr, m.Port), alive: m.Status == serf.StatusAlive}
}

// NotifyMerge implements serf.MergeDelegate; Serf calls it for push/pull
// states and, through memberlist's alive delegate, for alive messages. It
// runs under memberlist's node lock, so it only reads the guard's own view.
func (g *conflictGuard) NotifyMerge(members []*serf.Member) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range members {
		if err := g.check(m); err != nil {
			g.refused(m.Name, err)
			return err
		}
	}
	return nil
}

// refused logs a refusal loudly (once a minute per member, as gossip repeats
// alive messages) and, when this node is joining (Join or Serf's snapshot
// rejoin) and has no live peer yet, records it as this node's own failure to
// join. Both sides of a join refuse each other; the side not joining is the
// legitimate owner and stays healthy, even alone in its cluster.
func (g *conflictGuard) refused(name string, err error) {
	established := false
	for n, seen := range g.view {
		if n != g.agent.cfg.NodeName && seen.alive {
			established = true
			break
		}
	}
	if !established && g.outgoing > 0 {
		g.last = err
	}
	if time.Since(g.loggedAt[name]) > time.Minute {
		g.loggedAt[name] = time.Now()
		g.agent.log.WithError(err).WithField("member", name).Error("refusing member: duplicate broker id or name")
	}
}

func (g *conflictGuard) check(m *serf.Member) error {
	cfg := g.agent.cfg
	if m.Status == serf.StatusLeft {
		return nil
	}
	addr := memberAddr(m.Addr, m.Port)
	id, idErr := parseBrokerID(m.Tags)
	if m.Name == cfg.NodeName {
		if local := g.agent.localGossipAddr(); local != "" && addr != local {
			return fmt.Errorf("%w: %q is claimed at %s, this node is at %s", ErrDuplicateName, m.Name, addr, local)
		}
		return nil
	}
	if idErr == nil && id == cfg.BrokerID {
		return fmt.Errorf("%w: broker id %d is claimed by member %q at %s (this node is %q); if that member is gone for good, remove it first", ErrDuplicateBrokerID, id, m.Name, addr, cfg.NodeName)
	}
	for name, seen := range g.view {
		if !seen.alive {
			continue
		}
		if name == m.Name && seen.addr != addr {
			return fmt.Errorf("%w: refusing %q at %s, alive at %s", ErrDuplicateName, m.Name, addr, seen.addr)
		}
		if name != m.Name && idErr == nil && seen.id == id {
			return fmt.Errorf("%w: refusing member %q at %s claiming broker id %d, alive as %q", ErrDuplicateBrokerID, m.Name, addr, id, name)
		}
	}
	return nil
}

// lastRefusal returns the latest refusal that concerned this node itself.
func (g *conflictGuard) lastRefusal() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// beginOutgoing and endOutgoing bracket a join of this node's own.
func (g *conflictGuard) beginOutgoing() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outgoing++
}

func (g *conflictGuard) endOutgoing() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.outgoing > 0 {
		g.outgoing--
	}
}

func (g *conflictGuard) clearRefusal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last = nil
}

// aliveDuplicates lists broker ids that more than one alive member claims.
func aliveDuplicates(members []Member) map[int32][]string {
	byID := map[int32][]string{}
	for _, m := range members {
		if m.Status == StatusAlive {
			byID[m.BrokerID] = append(byID[m.BrokerID], m.Name)
		}
	}
	for id, names := range byID {
		if len(names) < 2 {
			delete(byID, id)
		}
	}
	return byID
}

// Health reports whether this node's membership is sound: nil, or an error
// wrapping ErrDuplicateBrokerID / ErrDuplicateName when this node was refused
// by the cluster or sees two alive members with one broker id, or the last
// join error while the node has not joined. The node's /healthz and /readyz
// should fail on it.
func (a *Agent) Health() error {
	if err := a.guard.lastRefusal(); err != nil {
		return err
	}
	if dups := aliveDuplicates(a.Members()); len(dups) > 0 {
		return fmt.Errorf("%w: alive members share broker ids: %v", ErrDuplicateBrokerID, dups)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.joinErr
}
