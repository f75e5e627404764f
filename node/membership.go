package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/topics"
)

// This file runs the node's membership agent (package membership): gossip,
// the roster and the topic catalog. A single node is a cluster of one; there
// is no other code path.

// membershipDir is where the agent keeps its Serf snapshot, boot generation,
// roster and topic catalog, under the node's DataDir.
const membershipDir = "cluster"

// GossipConfig is how a node finds and talks to its peers. The node fills in
// the rest of membership.Config itself (broker id, advertised Kafka and admin
// addresses, rack, data directory).
type GossipConfig struct {
	// NodeName is the gossip member name, unique in the cluster. Empty
	// means "spool-<NodeID>".
	NodeName string
	// BindAddr is the host:port gossip listens on (TCP and UDP). Port 0
	// picks a free port, which suits only tests: a restarted node rejoins
	// from its snapshot only if it comes back on the same address.
	BindAddr string
	// AdvertiseAddr is the host:port peers reach this node's gossip at,
	// when it differs from BindAddr (NAT, a 0.0.0.0 bind).
	AdvertiseAddr string
	// AdvertiseAdminAddr is the host:port peers reach this node's admin
	// HTTP API at ("admin" tag); they pull the topic catalog and roster
	// from it (anti-entropy). Empty means the bound admin address, or,
	// when that is a wildcard (0.0.0.0, ::), the advertised gossip host
	// (else the advertised Kafka host) with the admin port. An admin API
	// bound to loopback is unreachable for peers on other machines:
	// anti-entropy with this node then fails (and says so), and only
	// Serf's user events spread topics.
	AdvertiseAdminAddr string
	// Join lists gossip addresses of members to join at start; the node
	// retries with backoff until one answers. A restarted node rejoins the
	// peers of its snapshot without it.
	Join []string
	// Key is the gossip encryption key (32 bytes); KeyringFile a Serf
	// keyring file. Neither means plaintext gossip.
	Key         []byte
	KeyringFile string
	// Timings names the gossip timing profile: membership.TimingsLAN,
	// TimingsLocal or TimingsFast (tests on loopback).
	Timings string
	// Features are the features the node advertises (membership
	// Config.Features): nil, every feature of this version; empty but not
	// nil, none, as a node of the previous version, for tests of mixed
	// versions.
	Features []string
}

// DefaultGossipConfig is what `spool node` gossips with when given no flags.
func DefaultGossipConfig() GossipConfig {
	return GossipConfig{BindAddr: "127.0.0.1:7946", Timings: membership.TimingsLAN}
}

// membershipConfig maps the node's configuration onto the agent's. It runs
// after the listeners are bound, so port-0 addresses are resolved.
func (n *Node) membershipConfig() (*membership.Config, error) {
	g := n.cfg.Gossip
	mc := membership.DefaultConfig()
	if g.Timings != "" {
		if err := mc.UseTimings(g.Timings); err != nil {
			return nil, err
		}
	}
	mc.NodeName = g.NodeName
	if mc.NodeName == "" {
		mc.NodeName = "spool-" + strconv.Itoa(int(n.cfg.NodeID))
	}
	mc.BrokerID = n.cfg.NodeID
	host, port, err := splitGossipAddr(g.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("gossip address: %w", err)
	}
	mc.BindAddr, mc.BindPort = host, port
	if g.AdvertiseAddr != "" {
		if mc.AdvertiseAddr, mc.AdvertisePort, err = splitGossipAddr(g.AdvertiseAddr); err != nil {
			return nil, fmt.Errorf("advertised gossip address: %w", err)
		}
	}
	mc.KafkaAddr = n.AdvertisedKafkaAddr()
	mc.Listeners = n.access.AdvertisedListeners()
	mc.Fetch = n.peerFetchFunc
	mc.AdminAddr = n.advertisedAdminAddr()
	if a := g.AdvertiseAdminAddr; a != "" {
		if _, _, err := splitGossipAddr(a); err != nil {
			return nil, fmt.Errorf("advertised admin address: %w", err)
		}
	}
	mc.Rack = n.cfg.Rack
	mc.RaftAddr = n.repl.AdvertisedAddr()
	mc.Features = g.Features
	// mc.ClusterID stays empty: the agent proposes a random cluster id on
	// first start and persists whichever id the cluster settles on.
	mc.DataDir = filepath.Join(n.cfg.DataDir, membershipDir)
	mc.Join = g.Join
	mc.GossipKey = g.Key
	mc.KeyringFile = g.KeyringFile
	mc.Keyring = n.gossipRing // shared with the Raft transport (replication.go)
	mc.Log = n.log
	return mc, nil
}

func splitGossipAddr(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("%q: bad port: %w", addr, err)
	}
	return host, int(p), nil
}

// advertisedAdminAddr is the admin address peers fetch anti-entropy state
// from: GossipConfig.AdvertiseAdminAddr, else the bound address. A wildcard
// bind (0.0.0.0, ::) is no address to dial, so the host peers reach this
// node at (advertised gossip or Kafka host) stands in.
func (n *Node) advertisedAdminAddr() string {
	if n.cfg.Gossip.AdvertiseAdminAddr != "" {
		return n.cfg.Gossip.AdvertiseAdminAddr
	}
	addr := n.AdminAddr()
	host, port, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return addr
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return addr
	}
	for _, cand := range []string{n.cfg.Gossip.AdvertiseAddr, n.AdvertisedKafkaAddr()} {
		if h, _, err := net.SplitHostPort(cand); err == nil {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				return net.JoinHostPort(h, port)
			}
		}
	}
	return addr
}

// startMembership starts the agent and joins the configured seeds in the
// background. Serf's and memberlist's metrics go through the global
// go-metrics, so the global is pointed at this node's Prometheus sink first.
func (n *Node) startMembership() error {
	mc, err := n.membershipConfig()
	if err != nil {
		return err
	}
	if err := n.metrics.SetGlobal(); err != nil {
		return err
	}
	agent, err := membership.Create(mc)
	if err != nil {
		return err
	}
	n.agent = agent
	n.repl.SetAgent(agent)
	n.access.SetCatalog(agent) // node/access: the cluster's ACLs, users and quotas
	if local := agent.Local(); membership.LoopbackAdminOfRemotePeer(local) {
		n.log.WithFields(logrus.Fields{"admin": local.AdminAddr, "gossip": local.GossipAddr}).
			Warn("the admin API is advertised on loopback while gossip is not: peers on other machines cannot pull the topic catalog from this node (anti-entropy); bind the admin API where peers reach it, or set --advertise-admin-addr")
	}
	n.cluster = &gossipCluster{agent: agent, self: n.cfg.NodeID}
	n.catalog = topics.NewCatalog(agent, n.cfg.NodeID, n.log)
	n.mover = n.newMover() // moves.go
	return nil
}

// leaveCluster leaves gossip gracefully, so peers see this node "left" rather
// than "failed"; joining has stopped with n.loops. A refused node does not
// announce a leave: its name may be a live member's, which the leave would
// take out.
func (n *Node) leaveCluster() {
	if n.agent == nil || n.adm.Refusal() != nil {
		return
	}
	if err := n.agent.Leave(); err != nil {
		n.log.WithError(err).Warn("leaving the cluster")
	}
}

// stopMembership shuts gossip down (after leaveCluster, or as a crash would).
func (n *Node) stopMembership() error {
	if n.agent == nil {
		return nil
	}
	if err := n.agent.Shutdown(); err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	return nil
}

// membershipLoop keeps the partitions-led gauge current as members come
// and go, and logs who leads what after each change.
func (n *Node) membershipLoop(ctx context.Context, events <-chan membership.MemberEvent) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			n.repl.HintMember(ev)
			led := n.partitionsLed()
			n.metrics.SetGauge([]string{"partitions", "led"}, float32(led))
			n.log.WithFields(logrus.Fields{"member": ev.Member.Name, "member_broker": ev.Member.BrokerID, "event": ev.Type, "partitions_led": led}).
				Debug("cluster view changed")
		}
	}
}

// partitionsLed counts the partitions, of every topic, this node leads: its
// replicas that lead (with Raft, not the preferred order's guess).
func (n *Node) partitionsLed() int {
	led := 0
	for _, p := range n.localPartitions() {
		if p.Replica.IsLeader() {
			led++
		}
	}
	return led
}

// errNotReady explains a 503 from /readyz.
var errNotReady = errors.New("starting or shutting down")

// readiness is nil when the node serves clients and its membership is sound:
// the cluster accepted it (node/admission) and gossip shows no conflict,
// and the replicas open at startup have caught up with their leaders
// (node/replication's readiness.go).
func (n *Node) readiness() error {
	if !n.Ready() {
		return errNotReady
	}
	if err := n.adm.Refusal(); err != nil {
		return err
	}
	if n.agent != nil {
		if err := n.agent.Health(); err != nil {
			return err
		}
	}
	if err := n.adm.State(); err != nil {
		return err
	}
	if c := n.parts.Stopped(); c > 0 {
		return fmt.Errorf("%d replicas stopped on a write error (a full disk?); each is reopened from disk every %v until it stays up", c, hosted.MendInterval)
	}
	if n.parts.Missing() {
		return errors.New("a partition of this node failed to open again after a write error; retried every " + hosted.MendInterval.String())
	}
	return n.repl.Readiness() // node/replication's readiness.go
}
