// Package admission settles whether the cluster accepted this node, so
// that it serves Kafka requests, or refused it (its broker id or name is a
// live member's), so that it never does.
package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// A node serves no Kafka request, and /readyz says 503, until it
// knows the cluster accepted it: its join through the seeds (--join)
// succeeded, or the rejoin of its Serf snapshot's members is over (Run has
// the rules). Until then every Kafka request closes its connection
// (clients then try another bootstrap broker), as a Kafka broker processes
// no request before it is registered.
//
// A node the cluster refuses (its broker id or name belongs to a live
// member, see membership/conflict.go) never serves: on its own it would be
// a one-node cluster, auto-creating topics and acknowledging writes the real
// cluster never sees. Like Kafka's broker on a duplicate broker.id
// registration, it gives up: Failed delivers the reason, and `spool node`
// logs it and exits non-zero, for the operator to fix the id or name.
type Admission struct {
	log      logrus.FieldLogger
	admitted atomic.Bool
	once     sync.Once
	mu       sync.Mutex
	refusal  error
	failed   chan error // gets the refusal, once
}

// New returns the admission of a node not yet accepted; it logs to log.
func New(log logrus.FieldLogger) *Admission {
	return &Admission{log: log, failed: make(chan error, 1)}
}

// ErrJoining explains a 503 from /readyz while the join is under way.
var ErrJoining = errors.New("joining the cluster: not yet accepted by its members")

// Failed delivers, once, the reason the node cannot serve: the cluster
// refused it. The node then refuses every Kafka request and /readyz and
// /healthz say why; the caller should shut it down and exit.
func (a *Admission) Failed() <-chan error { return a.failed }

// Admitted reports whether the cluster accepted this node, so that it
// serves Kafka requests.
func (a *Admission) Admitted() bool { return a.admitted.Load() }

func (a *Admission) admit(how string) {
	if a.Refusal() != nil {
		return
	}
	if a.admitted.CompareAndSwap(false, true) {
		a.log.WithField("how", how).Info("accepted by the cluster; serving Kafka requests")
	}
}

// refuse records that the cluster refused this node; it never serves.
func (a *Admission) refuse(err error) {
	a.once.Do(func() {
		a.mu.Lock()
		a.refusal = err
		a.mu.Unlock()
		a.admitted.Store(false)
		a.log.WithError(err).Error("refused by the cluster: this node serves no Kafka request; give it a broker id (--node-id) and name (--node-name) no live member has")
		a.failed <- fmt.Errorf("refused by the cluster: %w", err)
	})
}

// Refusal is the reason the cluster refused this node, or nil.
func (a *Admission) Refusal() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refusal
}

// Run joins the agent's seeds (when seeds says it has any) in a goroutine
// started with spawn, waits for the rejoin of the snapshot's members
// (membership.Agent.Rejoined, whose outcome the agent takes from its own
// join, not from Serf's log), and settles admission on what it learns first:
//   - refused (by Join, or during the rejoin): refuse, for good;
//   - Join succeeded, or gossip shows another alive member (a restarted
//     member taken back by its snapshot's peers while its seeds are down;
//     Serf merges nothing from a cluster that refused it): admitted;
//   - no seeds and the rejoin over: admitted, a cluster of its own or a
//     member whose peers are all down, as before it stopped.
//
// It polls for alive peers: a member event may come before anyone
// subscribes. It returns once settled or when ctx ends.
func (a *Admission) Run(ctx context.Context, agent *membership.Agent, seeds bool, spawn func(func(context.Context)) bool) {
	var joined chan error
	if seeds {
		joined = make(chan error, 1)
		spawn(func(ctx context.Context) { joined <- agent.Join(ctx) })
	}
	rejoined := agent.Rejoined()
	self := agent.Local().Name
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-joined:
			joined = nil
			switch {
			case err == nil:
				a.admit("joined its seeds")
				return
			case IsRefusal(err):
				a.refuse(err)
				return
			case ctx.Err() == nil:
				a.log.WithError(err).Error("could not join the cluster; see /readyz")
			}
		case <-rejoined:
			rejoined = nil
			if err := agent.Refusal(); err != nil && IsRefusal(err) {
				a.refuse(fmt.Errorf("rejoining the members of its snapshot: %w", err))
				return
			}
			if !seeds {
				a.admit("no seeds to join; snapshot rejoin over")
				return
			}
		case <-tick.C:
		}
		if IsRefusal(agent.Health()) {
			continue // a refusal or two alive owners of an id: not admission
		}
		for _, m := range agent.Members() {
			if m.Name != self && m.Status == membership.StatusAlive {
				a.admit("gossip shows peer " + m.Name + " alive")
				return
			}
		}
	}
}

// State is why the node does not serve yet, or nil.
func (a *Admission) State() error {
	if err := a.Refusal(); err != nil {
		return err
	}
	if !a.Admitted() {
		return ErrJoining
	}
	return nil
}

// IsRefusal tells a membership error that makes this node unfit to run (the
// cluster refuses its broker id or name) from a transient one (not joined
// yet): only the first fails /healthz.
func IsRefusal(err error) bool {
	return errors.Is(err, membership.ErrDuplicateBrokerID) || errors.Is(err, membership.ErrDuplicateName)
}

// Soundness is nil when the cluster accepted this node and gossip (health:
// the agent's Health, nil before the agent exists) shows no conflict: what
// /readyz asks of membership.
func (a *Admission) Soundness(health func() error) error {
	if err := a.Refusal(); err != nil {
		return err
	}
	if health != nil {
		if err := health(); err != nil {
			return err
		}
	}
	return a.State()
}

// Unfit is why the node must not run, or nil (/healthz): the cluster
// refused it, or gossip (health: the agent's Health) reports a conflict
// that is a refusal.
func (a *Admission) Unfit(health func() error) error {
	if err := a.Refusal(); err != nil {
		return err
	}
	if err := health(); err != nil && IsRefusal(err) {
		return err
	}
	return nil
}
