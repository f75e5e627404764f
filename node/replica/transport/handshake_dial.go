package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Dialler is one side of a handshake: who dials, whom, in which cluster,
// and the keys it authenticates with (nil: unauthenticated, version 1).
type Dialler struct {
	From, To  uint64
	ClusterID string
	// SameCluster, when set, accepts a listener answering with another
	// cluster id that is its own in this node's gossip view (a cluster
	// still settling on one id; Transport.sameCluster); nil: the ids must
	// be equal.
	SameCluster func(node uint64, id string) bool
	// Keys, when non-empty, authenticate the handshake (version 2): the
	// first proves this side, any of them may check the listener's proof.
	Keys [][]byte
}

// errPeerUnauthenticated marks a listener that did not prove a key of
// this node's keyring: this node refuses it.
var errPeerUnauthenticated = errors.New("peer did not prove a key of this node's gossip keyring")

// Handshake runs the dialler's side of the handshake on conn within
// timeout, and returns nil once both sides accepted each other. It is
// what the transport runs on every connection it dials; tools and tests
// use it to speak to a node's Raft port as a peer would.
func (d Dialler) Handshake(conn net.Conn, timeout time.Duration) error {
	conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{})
	addr := conn.RemoteAddr().String()
	h := hello{from: d.From, to: d.To, clusterID: d.ClusterID, auth: len(d.Keys) > 0}
	if h.auth {
		var err error
		if h.nonce, err = newNonce(); err != nil {
			return err
		}
	}
	if _, err := conn.Write(h.encode()); err != nil {
		return fmt.Errorf("handshake with node %d at %s: %w", d.To, addr, err)
	}
	w, err := readWelcome(conn)
	if err != nil {
		return fmt.Errorf("handshake with node %d at %s: %w", d.To, addr, err)
	}
	if w.status != statusOK {
		return fmt.Errorf("node at %s (node %d, cluster %q): %w: %s", addr, w.node, w.clusterID, errRefused, statusText(w.status))
	}
	// The listener checked both; checking again here means a confused
	// listener cannot make us send one group's messages to the wrong node.
	if w.node != d.To || (w.clusterID != d.ClusterID && (d.SameCluster == nil || !d.SameCluster(w.node, w.clusterID))) {
		return fmt.Errorf("node at %s says it is node %d of cluster %q, dialled node %d of %q", addr, w.node, w.clusterID, d.To, d.ClusterID)
	}
	if !h.auth {
		if w.auth {
			return fmt.Errorf("node at %s answered an unauthenticated handshake with an authenticated one", addr)
		}
		return nil
	}
	if !w.auth {
		return fmt.Errorf("node %d at %s accepted without authenticating: %w", d.To, addr, errPeerUnauthenticated)
	}
	tr := transcript{clusterID: d.ClusterID, from: d.From, to: d.To, dialNonce: h.nonce, listenNonce: w.nonce}
	if !tr.verify(d.Keys, roleListener, w.mac) {
		// A proof of ours must not go to a listener that proved nothing
		// (it could relay it to a real node as ours); an all-zero one
		// tells it why the handshake ends.
		var none [macLen]byte
		conn.Write(none[:])
		return fmt.Errorf("node %d at %s: %w", d.To, addr, errPeerUnauthenticated)
	}
	proof := tr.mac(d.Keys[0], roleDialler)
	if _, err := conn.Write(proof[:]); err != nil {
		return fmt.Errorf("handshake proof to node %d at %s: %w", d.To, addr, err)
	}
	var v [verdictLen]byte
	if _, err := io.ReadFull(conn, v[:]); err != nil {
		return fmt.Errorf("handshake verdict of node %d at %s: %w", d.To, addr, err)
	}
	if v[0] != statusOK {
		return fmt.Errorf("node %d at %s: %w: %s", d.To, addr, errRefused, statusText(v[0]))
	}
	return nil
}
