package cluster

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// Start creates the agent from n's configuration (AgentConfig); it joins
// the configured seeds in the background. Serf's and memberlist's metrics
// go through the global go-metrics, which the caller points at the node's
// sink first.
func Start(n Node) (*membership.Agent, error) {
	mc, err := AgentConfig(n)
	if err != nil {
		return nil, err
	}
	agent, err := membership.Create(mc)
	if err != nil {
		return nil, err
	}
	if local := agent.Local(); membership.LoopbackAdminOfRemotePeer(local) {
		n.Log.WithFields(logrus.Fields{"admin": local.AdminAddr, "gossip": local.GossipAddr}).
			Warn("the admin API is advertised on loopback while gossip is not: peers on other machines cannot pull the topic catalog from this node (anti-entropy); bind the admin API where peers reach it, or set --advertise-admin-addr")
	}
	return agent, nil
}

// Leave leaves gossip gracefully, so peers see this node "left" rather
// than "failed"; the caller has stopped joining. A refused node does not
// announce a leave (refused): its name may be a live member's, which the
// leave would take out. A nil agent (never started) does nothing.
func Leave(agent *membership.Agent, refused bool, log logrus.FieldLogger) {
	if agent == nil || refused {
		return
	}
	if err := agent.Leave(); err != nil {
		log.WithError(err).Warn("leaving the cluster")
	}
}

// Stop shuts gossip down (after Leave, or as a crash would).
func Stop(agent *membership.Agent) error {
	if agent == nil {
		return nil
	}
	if err := agent.Shutdown(); err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	return nil
}

// FollowMembers calls fn with each membership event until the agent closes
// events (its Subscribe) or ctx ends.
func FollowMembers(ctx context.Context, events <-chan membership.MemberEvent, fn func(membership.MemberEvent)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			fn(ev)
		}
	}
}
