package node

import (
	"net"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/replica/transport"
)

// A node whose Raft listener may bind any port (--raft-addr unset, or port
// 0) binds the port it advertised on its last run again, when it still
// can. Its peers' gossip view keeps a crashed member's tags, and the
// restarted node's own book of their addresses (membership/raftaddrs.go)
// came from theirs: with the port unchanged, both sides reach each other
// at once after a restart, without waiting for gossip to carry a new "raft"
// tag. If the port is taken, it binds another and the peers wait for
// gossip, as they did before. With --advertise-raft-addr set, the
// advertised port need not be the bound one, so none is reused.

// bindRaftTransport starts the transport cfg describes, on the last run's
// port when cfg.ListenAddr leaves the port free.
func (n *Node) bindRaftTransport(cfg transport.Config) (*transport.Transport, error) {
	if reuse, ok := n.lastRaftListenAddr(cfg.ListenAddr); ok {
		first := cfg
		first.ListenAddr = reuse
		tr, err := transport.New(first)
		if err == nil {
			n.log.WithField("raft_addr", reuse).Debug("raft transport bound the port of the last run")
			return tr, nil
		}
		n.log.WithError(err).WithFields(logrus.Fields{"raft_addr": reuse}).
			Warn("could not bind the Raft port of the last run; peers learn the new one from gossip")
	}
	return transport.New(cfg)
}

// lastRaftListenAddr is listen with the port of the last run, when listen
// leaves the port to the system and the last run's is known.
func (n *Node) lastRaftListenAddr(listen string) (string, bool) {
	if n.cfg.AdvertisedRaftAddr != "" {
		return "", false
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port != "0" {
		return "", false
	}
	last, ok := membership.LastOwnRaftAddr(filepath.Join(n.cfg.DataDir, cluster.Dir), n.cfg.NodeID)
	if !ok {
		return "", false
	}
	_, lastPort, err := net.SplitHostPort(last)
	if err != nil || lastPort == "0" {
		return "", false
	}
	return net.JoinHostPort(host, lastPort), true
}
