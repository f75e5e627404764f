package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/wire"
)

// Admission: a node serves no Kafka request, and /readyz says 503, until it
// knows the cluster accepted it: its join through the seeds (--join)
// succeeded, or Serf's rejoin of its snapshot's members is over (joinCluster
// has the rules). Until then every Kafka request closes its connection
// (clients then try another bootstrap broker), as a Kafka broker processes
// no request before it is registered.
//
// A node the cluster refuses (its broker id or name belongs to a live
// member, see membership/conflict.go) never serves: on its own it would be
// a one-node cluster, auto-creating topics and acknowledging writes the real
// cluster never sees. Like Kafka's broker on a duplicate broker.id
// registration, it gives up: Failed delivers the reason, and `spool node`
// logs it and exits non-zero, for the operator to fix the id or name.
type admission struct {
	admitted atomic.Bool
	once     sync.Once
	mu       sync.Mutex
	refusal  error
	failed   chan error // gets the refusal, once
}

func newAdmission() admission {
	return admission{failed: make(chan error, 1)}
}

// errJoining explains a 503 from /readyz while the join is under way.
var errJoining = errors.New("joining the cluster: not yet accepted by its members")

// Failed delivers, once, the reason the node cannot serve: the cluster
// refused it. The node then refuses every Kafka request and /readyz and
// /healthz say why; the caller should shut it down and exit.
func (n *Node) Failed() <-chan error { return n.adm.failed }

// Admitted reports whether the cluster accepted this node, so that it
// serves Kafka requests.
func (n *Node) Admitted() bool { return n.adm.admitted.Load() }

func (n *Node) admit(how string) {
	if n.refused() != nil {
		return
	}
	if n.adm.admitted.CompareAndSwap(false, true) {
		n.log.WithField("how", how).Info("accepted by the cluster; serving Kafka requests")
	}
}

// refuse records that the cluster refused this node; it never serves.
func (n *Node) refuse(err error) {
	n.adm.once.Do(func() {
		n.adm.mu.Lock()
		n.adm.refusal = err
		n.adm.mu.Unlock()
		n.adm.admitted.Store(false)
		n.log.WithError(err).Error("refused by the cluster: this node serves no Kafka request; give it a broker id (--node-id) and name (--node-name) no live member has")
		n.adm.failed <- fmt.Errorf("refused by the cluster: %w", err)
	})
}

func (n *Node) refused() error {
	n.adm.mu.Lock()
	defer n.adm.mu.Unlock()
	return n.adm.refusal
}

// joinCluster joins the configured seeds (in startMembership's goroutine),
// waits for Serf's rejoin of the snapshot's members, and settles admission
// on what it learns first:
//   - refused (by Join, or during the rejoin): refuse, for good;
//   - Join succeeded, or gossip shows another alive member (a restarted
//     member taken back by its snapshot's peers while its seeds are down;
//     Serf merges nothing from a cluster that refused it): admitted;
//   - no seeds and the rejoin over: admitted, a cluster of its own or a
//     member whose peers are all down, as before it stopped.
//
// It polls for alive peers: a member event may come before anyone
// subscribes.
func (n *Node) joinCluster(ctx context.Context) {
	var joined chan error
	if len(n.cfg.Gossip.Join) > 0 {
		joined = make(chan error, 1)
		n.loops.Go(func(ctx context.Context) { joined <- n.agent.Join(ctx) })
	}
	rejoined := n.agent.Rejoined()
	self := n.agent.Local().Name
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
				n.admit("joined its seeds")
				return
			case isRefusal(err):
				n.refuse(err)
				return
			case ctx.Err() == nil:
				n.log.WithError(err).Error("could not join the cluster; see /readyz")
			}
		case <-rejoined:
			rejoined = nil
			if err := n.agent.Refusal(); err != nil && isRefusal(err) {
				n.refuse(fmt.Errorf("rejoining the members of its snapshot: %w", err))
				return
			}
			if len(n.cfg.Gossip.Join) == 0 {
				n.admit("no seeds to join; snapshot rejoin over")
				return
			}
		case <-tick.C:
		}
		if isRefusal(n.agent.Health()) {
			continue // a refusal or two alive owners of an id: not admission
		}
		for _, m := range n.agent.Members() {
			if m.Name != self && m.Status == membership.StatusAlive {
				n.admit("gossip shows peer " + m.Name + " alive")
				return
			}
		}
	}
}

// admissionGate is the wire.Handler in front of the node: requests reach
// the node only once it is admitted.
type admissionGate struct{ n *Node }

func (g admissionGate) ServeKafka(ctx context.Context, req *wire.Request) wire.Response {
	if !g.n.Admitted() {
		g.n.log.WithFields(logrus.Fields{"api_key": req.APIKey, "reason": g.n.admissionState()}).
			Debug("closing a Kafka connection: not accepted by the cluster")
		return wire.CloseConnection
	}
	return g.n.ServeKafka(ctx, req)
}

// admissionState is why the node does not serve yet, or nil.
func (n *Node) admissionState() error {
	if err := n.refused(); err != nil {
		return err
	}
	if !n.Admitted() {
		return errJoining
	}
	return nil
}

// isRefusal tells a membership error that makes this node unfit to run (the
// cluster refuses its broker id or name) from a transient one (not joined
// yet): only the first fails /healthz.
func isRefusal(err error) bool {
	return errors.Is(err, membership.ErrDuplicateBrokerID) || errors.Is(err, membership.ErrDuplicateName)
}
