package replication

import (
	"fmt"
	"math"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/transport"
)

// The Raft transport's wiring: its handshake's cluster id and keys, where
// it listens and what it advertises, how peers' addresses are found, and
// the driver it carries messages for, from Start to Stop.

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
func (r *Replication) transportClusterID() string {
	if a := r.agentOrNil(); a != nil {
		return a.ClusterID()
	}
	return ""
}

// peerClusterID is the cluster id the broker of Raft id node advertises
// in gossip ("" unknown), for the handshake of a cluster still settling on
// one id.
func (r *Replication) peerClusterID(node uint64) string {
	a := r.agentOrNil()
	if a == nil || node == 0 {
		return ""
	}
	if m, ok := a.LiveBrokers()[int32(node-1)]; ok { // replica.RaftID's inverse
		return m.ClusterID
	}
	return ""
}

// Start binds the Raft transport and starts the driver. It runs before
// the membership agent starts, whose tags carry the bound address. ring is
// the gossip keyring (nil: plaintext gossip), shared with Serf.
func (r *Replication) Start(ring *memberlist.Keyring) error {
	cfg := r.cfg.Raft
	if e, ok := r.log.(*logrus.Entry); ok {
		cfg.Log = e
	}
	cfg.OnLeaderChange = r.cfg.OnLeaderChange
	cfg.FetchSnapshot = r.fetchSnapshot // snapshots.go
	if r.throttle != nil {
		// The catch-up after a learner's copy shares the copy's budget.
		cfg.LearnerLimiter = r.throttle
	}
	r.driver = replica.NewDriver(cfg)
	addr := r.cfg.RaftAddr
	if addr == "" {
		kafka := r.cfg.KafkaAddr()
		host, _, err := net.SplitHostPort(kafka)
		if err != nil {
			return fmt.Errorf("raft address from kafka address %q: %w", kafka, err)
		}
		addr = net.JoinHostPort(host, "0")
	}
	// A message holds up to MaxSizePerMsg of entries, or one entry of any
	// size up to MaxEntryBytes.
	lim := transport.DefaultLimits()
	lim.MaxMsgBytes = max(lim.MaxMsgBytes, r.driver.MaxMessageBytes())
	lim.MaxFrameBytes = max(lim.MaxFrameBytes, lim.MaxMsgBytes+64<<10)
	tcfg := transport.Config{
		Limits:           lim,
		QueueBytes:       max(16<<20, 2*lim.MaxFrameBytes),
		NodeID:           replica.RaftID(r.cfg.NodeID),
		CurrentClusterID: r.transportClusterID,
		PeerClusterID:    r.peerClusterID,
		ListenAddr:       addr,
		Resolve:          r.resolveRaftAddr,
		Handler:          r.driver.Deliver,
		Metrics:          r.cfg.Metrics,
		Unreachable:      r.driver.Unreachable,
		SnapshotStatus:   r.driver.SnapshotStatus,
		PeerLost:         r.driver.PeerLost,
		// A peer's connection carries an empty frame after a second of
		// silence, so one quiet for peerSilence is a machine gone (or
		// stalled): its groups wake (PeerLost) and elect on their timers
		// instead of sleeping until gossip declares it failed.
		IdleTimeout: peerSilence,
		KeepAlive:   time.Second,
	}
	if e, ok := r.log.(*logrus.Entry); ok {
		tcfg.Log = e
	}
	if r.cfg.TLS != nil {
		tcfg.TLS = &transport.TLSConfig{Server: r.cfg.TLS.ServerConfig(), Client: r.cfg.TLS.ClientConfig}
	}
	if ring != nil {
		// memberlist hands out its own slice, which a RemoveKey rewrites
		// in place (under its lock, after this copy is taken or before):
		// the keys are 32 bytes each way, so a concurrent removal can
		// only make this handshake see the key set before or after it.
		tcfg.Auth = &transport.AuthConfig{Keys: func() [][]byte { return slices.Clone(ring.GetKeys()) }}
	}
	if ring == nil && r.cfg.TLS == nil {
		r.log.WithField("raft_addr", addr).Warn("the Raft port takes votes, appends and snapshots from anyone who reaches it: give --gossip-key-file (or --keyring-file), which also authenticates replication peers, or Raft TLS (--raft-tls-cert-file)")
	}
	tr, err := r.bindTransport(tcfg) // port.go
	if err != nil {
		return fmt.Errorf("raft transport on %s: %w", addr, err)
	}
	r.net = tr
	r.driver.SetTransport(tr)
	r.driver.Start()
	return nil
}

// peerSilence is how long a replication connection may carry nothing
// before the peer is taken for lost (transport.Config.IdleTimeout).
const peerSilence = 3 * time.Second

// StopGroups stops the driver (every Raft group), before the partitions
// close; Stop does it too, and again is harmless.
func (r *Replication) StopGroups() {
	if r.driver != nil {
		r.driver.Stop()
	}
}

// Stop stops the driver, then the transport; after the partitions are
// closed.
func (r *Replication) Stop() error {
	r.StopGroups()
	if r.net != nil {
		if err := r.net.Close(); err != nil {
			return fmt.Errorf("raft transport: %w", err)
		}
	}
	return nil
}

// AdvertisedAddr is what peers dial: AdvertisedRaftAddr, else the bound
// address, with the advertised Kafka host standing in for a wildcard.
func (r *Replication) AdvertisedAddr() string {
	if r.cfg.AdvertisedRaftAddr != "" {
		return r.cfg.AdvertisedRaftAddr
	}
	if r.net == nil {
		return ""
	}
	addr := r.net.Addr().String()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, _, err := net.SplitHostPort(r.cfg.AdvertisedKafkaAddr()); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}

// resolveRaftAddr finds a peer's transport address in the membership
// view, else the one it last advertised (kept across restarts), so that a
// restarted node replicates before gossip has rejoined its peers.
func (r *Replication) resolveRaftAddr(id uint64) (string, bool) {
	a := r.agentOrNil()
	if a == nil {
		return "", false
	}
	for _, m := range a.Members() {
		if replica.RaftID(m.BrokerID) == id && m.RaftAddr != "" {
			return m.RaftAddr, true
		}
	}
	if id == 0 || id-1 > math.MaxInt32 {
		return "", false
	}
	return a.LastRaftAddr(int32(id - 1)) // RaftID's inverse
}

// HintMember passes gossip's word on a broker to every replica: that it
// failed or left, as a hint to elect a new leader at once where it led
// (and to wake quiesced groups, whose timers are stopped); that it joined,
// to wake them so their leaders bring it up to date.
func (r *Replication) HintMember(ev membership.MemberEvent) {
	switch ev.Type {
	case membership.EventFail, membership.EventLeave:
		for _, p := range r.cfg.Partitions() {
			p.Replica.MemberFailed(ev.Member.BrokerID)
		}
	case membership.EventJoin:
		for _, p := range r.cfg.Partitions() {
			p.Replica.MemberJoined(ev.Member.BrokerID)
		}
	}
}
