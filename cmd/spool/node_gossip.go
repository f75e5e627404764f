package main

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node"
)

// gossipFlags are `spool node`'s cluster flags before they become a
// node.GossipConfig.
type gossipFlags struct {
	cfg     node.GossipConfig
	key     string
	keyFile string
}

func addGossipFlags(fs *pflag.FlagSet, g *gossipFlags) {
	g.cfg = node.DefaultGossipConfig()
	fs.StringVar(&g.cfg.BindAddr, "gossip-addr", g.cfg.BindAddr, "host:port Serf gossip binds, TCP and UDP (SPOOL_GOSSIP_ADDR)")
	fs.StringVar(&g.cfg.AdvertiseAddr, "advertise-gossip-addr", "", "host:port peers reach this node's gossip at; default the bound --gossip-addr (SPOOL_ADVERTISE_GOSSIP_ADDR)")
	fs.StringVar(&g.cfg.AdvertiseAdminAddr, "advertise-admin-addr", "", "host:port peers reach this node's admin API at, to pull the topic catalog and roster; default the bound --admin-addr, or with a 0.0.0.0/:: bind the advertised gossip host and the admin port (SPOOL_ADVERTISE_ADMIN_ADDR)")
	fs.StringSliceVar(&g.cfg.Join, "join", nil, "gossip host:port of a cluster member to join, repeatable; retried until one answers. A restarted node rejoins without it (SPOOL_JOIN, comma-separated)")
	fs.StringVar(&g.key, "gossip-key", "", "gossip encryption key: base64 of 32 random bytes; every node needs the same one. The keyring also authenticates Raft replication peers (SPOOL_GOSSIP_KEY)")
	fs.StringVar(&g.keyFile, "gossip-key-file", "", "file holding the base64 gossip key, instead of --gossip-key (SPOOL_GOSSIP_KEY_FILE)")
	fs.StringVar(&g.cfg.KeyringFile, "keyring-file", "", "Serf keyring file (JSON array of base64 keys, first = primary), kept up to date by spool gossip-key; with --gossip-key, rewritten with it as primary (SPOOL_KEYRING_FILE)")
	fs.StringVar(&g.cfg.Timings, "gossip-timings", g.cfg.Timings, "gossip timing profile: lan, local, or fast (loopback tests) (SPOOL_GOSSIP_TIMINGS)")
	fs.StringVar(&g.cfg.NodeName, "node-name", "", "gossip member name, unique in the cluster; default spool-<node-id> (SPOOL_NODE_NAME)")
}

// apply checks the flags and puts them into cfg.
func (g *gossipFlags) apply(cfg *node.Config) error {
	gc := g.cfg
	// The profile is applied when the node starts; a typo fails here.
	if err := membership.DefaultConfig().UseTimings(gc.Timings); err != nil {
		return fmt.Errorf("--gossip-timings: %w", err)
	}
	var joins []string
	for _, j := range gc.Join {
		if j = strings.TrimSpace(j); j != "" {
			joins = append(joins, j)
		}
	}
	gc.Join = joins
	if a := gc.AdvertiseAdminAddr; a != "" {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return fmt.Errorf("--advertise-admin-addr %q: want host:port", a)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return fmt.Errorf("--advertise-admin-addr %q: a wildcard address is not one peers can dial", a)
		}
	}
	key := g.key
	switch {
	case g.key != "" && g.keyFile != "":
		return fmt.Errorf("give --gossip-key or --gossip-key-file, not both")
	case g.keyFile != "":
		raw, err := os.ReadFile(g.keyFile)
		if err != nil {
			return fmt.Errorf("--gossip-key-file: %w", err)
		}
		key = strings.TrimSpace(string(raw))
	}
	if key != "" {
		k, err := membership.DecodeGossipKey(key)
		if err != nil {
			return fmt.Errorf("--gossip-key: %w", err)
		}
		gc.Key = k
	}
	cfg.Gossip = gc
	return nil
}
