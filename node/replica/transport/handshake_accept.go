package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// clusterID is the cluster id of a handshake now: Config.CurrentClusterID's
// answer when it is set, else Config.ClusterID.
func (t *Transport) clusterID() string {
	if t.cfg.CurrentClusterID != nil {
		return t.cfg.CurrentClusterID()
	}
	return t.cfg.ClusterID
}

// sameCluster tells whether node, claiming cluster id, is of this node's
// cluster: the id is this node's, or the one node advertises in this
// node's gossip view (a cluster still settling on one id).
func (t *Transport) sameCluster(node uint64, id string) bool {
	if id == t.clusterID() {
		return true
	}
	return id != "" && t.cfg.PeerClusterID != nil && t.cfg.PeerClusterID(node) == id
}

// refusal is why the listener refuses a hello: the status it answers, the
// metric's reason and the logged error; status statusOK accepts.
type refusal struct {
	status byte
	reason string
	err    error
}

// checkHello decides on a dialler's hello, given the cluster id and keys
// of this node now.
func (t *Transport) checkHello(h hello, cid string, keys [][]byte) refusal {
	switch {
	case t.cfg.Auth != nil && !h.auth:
		return refusal{statusAuthRequired, "no_key", fmt.Errorf("peer claiming node %d offered no authentication; this node requires the cluster's gossip key", h.from)}
	case t.cfg.Auth == nil && h.auth:
		return refusal{statusNoAuth, "unexpected_key", fmt.Errorf("peer claiming node %d offered key authentication; this node has no gossip key", h.from)}
	case cid == "" || (t.cfg.Auth != nil && len(keys) == 0):
		return refusal{statusNotReady, "not_ready", fmt.Errorf("peer claiming node %d: this node has no cluster id or key yet", h.from)}
	case h.clusterID != cid && !t.sameCluster(h.from, h.clusterID):
		return refusal{statusWrongCluster, "wrong_cluster", fmt.Errorf("peer claiming node %d is of cluster %q, this node of %q", h.from, h.clusterID, cid)}
	case h.to != t.cfg.NodeID:
		return refusal{statusWrongNode, "wrong_node", fmt.Errorf("peer claiming node %d dialled node %d, this is node %d", h.from, h.to, t.cfg.NodeID)}
	case h.from == 0 || h.from == t.cfg.NodeID:
		return refusal{statusWrongNode, "wrong_node", fmt.Errorf("peer claims node id %d", h.from)}
	}
	return refusal{status: statusOK}
}

// accept runs the listener's side of the handshake within HandshakeTimeout
// and returns the peer's node id, or the refusal's reason and an error after answering why (where
// the peer speaks the protocol at all). Every refusal is counted by reason.
// What it reads is bounded: one hello (maxHelloLen) and one proof.
func (t *Transport) accept(c net.Conn) (peer uint64, reason string, err error) {
	c.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	h, err := readHello(c)
	if err != nil {
		reason := "handshake"
		switch {
		case isTimeout(err):
			reason = "timeout"
		case errors.Is(err, errBadVersion):
			// A node of a later version: say so, in the version it reads.
			c.Write(welcome{status: statusBadVersion, node: t.cfg.NodeID}.encode())
		}
		t.refuse(reason)
		return 0, reason, err
	}
	cid := t.clusterID()
	var keys [][]byte
	if t.cfg.Auth != nil {
		keys = t.cfg.Auth.Keys()
	}
	r := t.checkHello(h, cid, keys)
	// The answer is in the version the dialler spoke when this node
	// speaks it too, else in version 1, which every version reads.
	w := welcome{status: r.status, node: t.cfg.NodeID, clusterID: cid, auth: h.auth && t.cfg.Auth != nil}
	var tr transcript
	if w.auth && r.status == statusOK {
		if w.nonce, err = newNonce(); err != nil {
			return 0, "internal", err
		}
		// Bound to the id the dialler claims, which checkHello accepted
		// (this node's, or the one gossip shows the dialler advertising).
		tr = transcript{clusterID: h.clusterID, from: h.from, to: t.cfg.NodeID, dialNonce: h.nonce, listenNonce: w.nonce}
		w.mac = tr.mac(keys[0], roleListener)
	}
	if _, werr := c.Write(w.encode()); werr != nil && r.err == nil {
		r = refusal{reason: "handshake", err: fmt.Errorf("answer handshake of node %d: %w", h.from, werr)}
	}
	if r.err != nil {
		t.refuse(r.reason)
		return 0, r.reason, r.err
	}
	if w.auth {
		var proof [macLen]byte
		if _, err := io.ReadFull(c, proof[:]); err != nil {
			reason := "handshake"
			if isTimeout(err) {
				reason = "timeout"
			}
			t.refuse(reason)
			return 0, reason, fmt.Errorf("read handshake proof of node %d: %w", h.from, err)
		}
		if !tr.verify(keys, roleDialler, proof) {
			c.Write([]byte{statusBadKey})
			t.refuse("bad_key")
			return 0, "bad_key", fmt.Errorf("peer claiming node %d: %s", h.from, statusText(statusBadKey))
		}
		if _, err := c.Write([]byte{statusOK}); err != nil {
			t.refuse("handshake")
			return 0, "handshake", fmt.Errorf("answer handshake of node %d: %w", h.from, err)
		}
	}
	c.SetDeadline(time.Time{})
	return h.from, "", nil
}
