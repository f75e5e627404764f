package node

import (
	"fmt"
	"math"
	"net"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/transport"
)

// Replication: every partition with more than one replica is a Raft group
// (node/replica), all driven by one replica.Driver, whose messages travel
// over one transport (node/replica/transport) to the peers' advertised
// "raft" addresses. Both live from Start to Shutdown.

// Who may speak on the Raft port: the handshake binds the membership's
// cluster id, asked at each handshake (it is known once the agent exists,
// and may still change to an older one while a new cluster settles: peers
// then retry until they agree); with a gossip keyring both ends also prove
// a key of it (transport/auth.go), the same keyring object gossip uses, so
// a rotation through Serf's KeyManager counts from the next connection.
// With neither a keyring nor Raft TLS the port takes any peer's word for
// who it is, and the node says so at start.

// transportClusterID is the cluster id the handshake binds: the agent's,
// "" (refuse, retry) until the agent exists.
func (n *Node) transportClusterID() string {
	if a := n.raftAgent.Load(); a != nil {
		return a.ClusterID()
	}
	return ""
}

// peerClusterID is the cluster id the broker of Raft id node advertises
// in gossip ("" unknown), for the handshake of a cluster still settling on
// one id.
func (n *Node) peerClusterID(node uint64) string {
	a := n.raftAgent.Load()
	if a == nil || node == 0 {
		return ""
	}
	if m, ok := a.LiveBrokers()[int32(node-1)]; ok { // replica.RaftID's inverse
		return m.ClusterID
	}
	return ""
}

// gossipKeys are the keyring's keys, the primary first, for the transport.
// memberlist hands out its own slice, which a RemoveKey rewrites in place
// (under its lock, after this copy is taken or before): the keys are 32
// bytes each way, so a concurrent removal can only make this handshake
// see the key set before or after it.
func (n *Node) gossipKeys() [][]byte {
	return slices.Clone(n.gossipRing.GetKeys())
}

// startReplication binds the Raft transport and starts the driver. It runs
// before the membership agent starts, whose tags carry the bound address.
func (n *Node) startReplication() error {
	ring, err := membership.BuildKeyring(n.cfg.Gossip.Key, n.cfg.Gossip.KeyringFile)
	if err != nil {
		return err
	}
	n.gossipRing = ring
	cfg := n.cfg.Raft
	if e, ok := n.log.(*logrus.Entry); ok {
		cfg.Log = e
	}
	cfg.OnLeaderChange = n.leadershipChanged
	cfg.FetchSnapshot = n.fetchReplicaSnapshot // replication_snapshots.go
	if n.copyThrottle != nil {
		// The catch-up after a learner's copy shares the copy's budget.
		cfg.LearnerLimiter = n.copyThrottle
	}
	n.raft = replica.NewDriver(cfg)
	addr := n.cfg.RaftAddr
	if addr == "" {
		host, _, err := net.SplitHostPort(n.KafkaAddr())
		if err != nil {
			return fmt.Errorf("raft address from kafka address %q: %w", n.KafkaAddr(), err)
		}
		addr = net.JoinHostPort(host, "0")
	}
	// A message holds up to MaxSizePerMsg of entries, or one entry of any
	// size up to MaxEntryBytes.
	lim := transport.DefaultLimits()
	lim.MaxMsgBytes = max(lim.MaxMsgBytes, n.raft.MaxMessageBytes())
	lim.MaxFrameBytes = max(lim.MaxFrameBytes, lim.MaxMsgBytes+64<<10)
	tcfg := transport.Config{
		Limits:           lim,
		QueueBytes:       max(16<<20, 2*lim.MaxFrameBytes),
		NodeID:           replica.RaftID(n.cfg.NodeID),
		CurrentClusterID: n.transportClusterID,
		PeerClusterID:    n.peerClusterID,
		ListenAddr:       addr,
		Resolve:          n.resolveRaftAddr,
		Handler:          n.raft.Deliver,
		Metrics:          n.metrics.Metrics,
		Unreachable:      n.raft.Unreachable,
		SnapshotStatus:   n.raft.SnapshotStatus,
		PeerLost:         n.raft.PeerLost,
		// A peer's connection carries an empty frame after a second of
		// silence, so one quiet for peerSilence is a machine gone (or
		// stalled): its groups wake (PeerLost) and elect on their timers
		// instead of sleeping until gossip declares it failed.
		IdleTimeout: peerSilence,
		KeepAlive:   time.Second,
	}
	if e, ok := n.log.(*logrus.Entry); ok {
		tcfg.Log = e
	}
	if n.raftTLS != nil {
		tcfg.TLS = &transport.TLSConfig{Server: n.raftTLS.ServerConfig(), Client: n.raftTLS.ClientConfig}
	}
	if ring != nil {
		tcfg.Auth = &transport.AuthConfig{Keys: n.gossipKeys}
	}
	if ring == nil && n.raftTLS == nil {
		n.log.WithField("raft_addr", addr).Warn("the Raft port takes votes, appends and snapshots from anyone who reaches it: give --gossip-key-file (or --keyring-file), which also authenticates replication peers, or Raft TLS (--raft-tls-cert-file)")
	}
	tr, err := n.bindRaftTransport(tcfg) // replication_port.go
	if err != nil {
		return fmt.Errorf("raft transport on %s: %w", addr, err)
	}
	n.raftNet = tr
	n.raft.SetTransport(tr)
	n.raft.Start()
	return nil
}

// peerSilence is how long a replication connection may carry nothing
// before the peer is taken for lost (transport.Config.IdleTimeout).
const peerSilence = 3 * time.Second

// stopReplication stops the driver, then the transport; after the
// partitions are closed.
func (n *Node) stopReplication() error {
	if n.raft != nil {
		n.raft.Stop()
	}
	if n.raftNet != nil {
		if err := n.raftNet.Close(); err != nil {
			return fmt.Errorf("raft transport: %w", err)
		}
	}
	return nil
}

// advertisedRaftAddr is what peers dial: AdvertisedRaftAddr, else the bound
// address, with the advertised Kafka host standing in for a wildcard.
func (n *Node) advertisedRaftAddr() string {
	if n.cfg.AdvertisedRaftAddr != "" {
		return n.cfg.AdvertisedRaftAddr
	}
	if n.raftNet == nil {
		return ""
	}
	addr := n.raftNet.Addr().String()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, _, err := net.SplitHostPort(n.AdvertisedKafkaAddr()); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}

// resolveRaftAddr finds a peer's transport address in the membership
// view, else the one it last advertised (kept across restarts), so that a
// restarted node replicates before gossip has rejoined its peers.
func (n *Node) resolveRaftAddr(id uint64) (string, bool) {
	if n.agent == nil {
		return "", false
	}
	for _, m := range n.agent.Members() {
		if replica.RaftID(m.BrokerID) == id && m.RaftAddr != "" {
			return m.RaftAddr, true
		}
	}
	if id == 0 || id-1 > math.MaxInt32 {
		return "", false
	}
	return n.agent.LastRaftAddr(int32(id - 1)) // RaftID's inverse
}

// hintReplicas passes gossip's word on a broker to every replica: that
// it failed or left, as a hint to elect a new leader at once where it led
// (and to wake quiesced groups, whose timers are stopped); that it joined,
// to wake them so their leaders bring it up to date.
func (n *Node) hintReplicas(ev membership.MemberEvent) {
	switch ev.Type {
	case membership.EventFail, membership.EventLeave:
		for _, p := range n.parts.All() {
			p.Replica.MemberFailed(ev.Member.BrokerID)
		}
	case membership.EventJoin:
		for _, p := range n.parts.All() {
			p.Replica.MemberJoined(ev.Member.BrokerID)
		}
	}
}
