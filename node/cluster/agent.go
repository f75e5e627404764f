package cluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/memberlist"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
)

// Dir is where the agent keeps its Serf snapshot, boot generation,
// roster and topic catalog, under the node's DataDir.
const Dir = "cluster"

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

// Node is what the agent's configuration takes from the node's, once its
// listeners are bound (so port-0 addresses are resolved).
type Node struct {
	Gossip    GossipConfig
	ID        int32
	Rack      string
	DataDir   string // the node's; the agent keeps its state in Dir under it
	KafkaAddr string // advertised
	// Listeners are the advertised address of each Kafka listener, by name.
	Listeners map[string]string
	AdminAddr string // bound (may be a wildcard)
	RaftAddr  string // advertised
	Fetch     membership.FetchFunc
	Keyring   *memberlist.Keyring // shared with the Raft transport
	Log       logrus.FieldLogger
}

// AgentConfig maps the node's configuration onto the agent's.
func AgentConfig(n Node) (*membership.Config, error) {
	g := n.Gossip
	mc := membership.DefaultConfig()
	if g.Timings != "" {
		if err := mc.UseTimings(g.Timings); err != nil {
			return nil, err
		}
	}
	mc.NodeName = g.NodeName
	if mc.NodeName == "" {
		mc.NodeName = "spool-" + strconv.Itoa(int(n.ID))
	}
	mc.BrokerID = n.ID
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
	mc.KafkaAddr = n.KafkaAddr
	mc.Listeners = n.Listeners
	mc.Fetch = n.Fetch
	mc.AdminAddr = advertisedAdminAddr(g, n.AdminAddr, n.KafkaAddr)
	if a := g.AdvertiseAdminAddr; a != "" {
		if _, _, err := splitGossipAddr(a); err != nil {
			return nil, fmt.Errorf("advertised admin address: %w", err)
		}
	}
	mc.Rack = n.Rack
	mc.RaftAddr = n.RaftAddr
	mc.Features = g.Features
	// mc.ClusterID stays empty: the agent proposes a random cluster id on
	// first start and persists whichever id the cluster settles on.
	mc.DataDir = filepath.Join(n.DataDir, Dir)
	mc.Join = g.Join
	mc.GossipKey = g.Key
	mc.KeyringFile = g.KeyringFile
	mc.Keyring = n.Keyring
	mc.Log = n.Log
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
// from: g.AdvertiseAdminAddr, else the bound address. A wildcard
// bind (0.0.0.0, ::) is no address to dial, so the host peers reach this
// node at (advertised gossip or Kafka host) stands in.
func advertisedAdminAddr(g GossipConfig, addr, kafkaAddr string) string {
	if g.AdvertiseAdminAddr != "" {
		return g.AdvertiseAdminAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return addr
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return addr
	}
	for _, cand := range []string{g.AdvertiseAddr, kafkaAddr} {
		if h, _, err := net.SplitHostPort(cand); err == nil {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				return net.JoinHostPort(h, port)
			}
		}
	}
	return addr
}
